"""The exactly-once component runs exactly one repeater, at all times.

Two repeaters holding copies of one failed insert can both pass the ledger check before
either commits (plowline_cloud.write_api_pending); BigQuery has no conditional insert, so
the deployment guarantees one repeater per failed-inserts subscription instead.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

EXACTLY_ONCE = "prod+exactly-once"


def _repeater_scalers(deploy: Any, overlay: str) -> list[str]:
    """Every object that could change the repeater's replica count or run a second pod."""
    manifests = deploy.render(overlay)
    return sorted(
        f"{m['kind']}/{m['metadata']['name']}"
        for m in manifests
        if m["kind"] in {"HorizontalPodAutoscaler", "ScaledObject", "PodDisruptionBudget"}
        and "plowline-repeater" in str(m["spec"])
    )


def test_exactly_once_runs_one_repeater_and_never_two_during_a_rollout(deploy: Any) -> None:
    """replicas 1, strategy Recreate (no surge pod), and nothing scales the repeater."""
    repeater = deploy.by_kind(deploy.render(EXACTLY_ONCE), "Deployment")["plowline-repeater"]
    spec = repeater["spec"]
    actual = (spec.get("replicas"), spec.get("strategy"), _repeater_scalers(deploy, EXACTLY_ONCE))
    expected = (1, {"type": "Recreate"}, [])
    assert expected == actual


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_the_plain_overlays_still_scale_the_repeater(deploy: Any, overlay: str) -> None:
    """Without the component (at-least-once modes) the repeater scales as before."""
    expected = [
        "HorizontalPodAutoscaler/plowline-repeater",
        "PodDisruptionBudget/plowline-repeater",
    ]
    assert expected == _repeater_scalers(deploy, overlay)


def test_exactly_once_touches_only_the_repeater(deploy: Any) -> None:
    """Every other object renders as in prod."""

    def others(overlay: str) -> list[Any]:
        return [m for m in deploy.render(overlay) if m["metadata"]["name"] != "plowline-repeater"]

    assert others("prod") == others(EXACTLY_ONCE)


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_an_overlay_writing_exactly_once_runs_one_repeater(deploy: Any, overlay: str) -> None:
    """An overlay whose config writes exactly-once has one repeater (the component's guarantee)."""
    config = json.loads(
        (
            deploy.repo / "deploy" / "k8s" / "overlays" / overlay / "config" / "config.json"
        ).read_text()
    )
    load = config["data"].get("load") or {}
    exactly_once = load.get("mode") == "STORAGE_WRITE_API" and load.get("stream") == "exactly-once"
    single = _repeater_scalers(deploy, overlay) == []
    assert (exactly_once, single) in {(False, False), (True, True)}
