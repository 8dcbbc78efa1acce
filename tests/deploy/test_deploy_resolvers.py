"""Every Iglu resolver config the repository ships fetches schemas over https only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
RESOLVER_CONFIG = "iglu:com.snowplowanalytics.iglu/resolver-config/"
SHIPPED = ("deploy", "libs/devstack/src/plowline_devstack/examples", "bench")


def _resolver_configs() -> list[Path]:
    found = []
    for root in SHIPPED:
        for path in sorted((REPO / root).rglob("*.json")):
            text = path.read_text()
            if RESOLVER_CONFIG in text and '"repositories"' in text:
                found.append(path)
    return found


def _http_uris(document: dict[str, Any]) -> list[str]:
    return [
        repository["connection"]["http"]["uri"]
        for repository in document["data"]["repositories"]
        if "http" in repository["connection"]
    ]


def test_the_shipped_resolver_configs_are_found() -> None:
    """The search finds the k8s base and overlay resolver configs (so the next test checks them)."""
    expected = {
        "deploy/k8s/base/config/resolver.json",
        "deploy/k8s/overlays/dev/config/resolver.json",
        "deploy/k8s/overlays/prod/config/resolver.json",
    }
    assert expected <= {str(path.relative_to(REPO)) for path in _resolver_configs()}


@pytest.mark.parametrize(
    "path", [pytest.param(p, id=str(p.relative_to(REPO))) for p in _resolver_configs()]
)
def test_shipped_resolver_configs_use_https(path: Path) -> None:
    """Schemas decide casting and DDL: every HTTP repository of a shipped config is https."""
    uris = _http_uris(json.loads(path.read_text()))
    expected: list[str] = []
    assert expected == [uri for uri in uris if not uri.startswith("https://")]


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_rendered_config_maps_use_https(deploy: Any, overlay: str) -> None:
    """The resolver config each overlay renders into its ConfigMap names https registries only."""
    maps = [
        m
        for m in deploy.render(overlay)
        if m["kind"] == "ConfigMap" and "resolver.json" in m.get("data", {})
    ]
    uris = [uri for m in maps for uri in _http_uris(json.loads(m["data"]["resolver.json"]))]
    expected = (True, [])
    assert expected == (bool(uris), [uri for uri in uris if not uri.startswith("https://")])
