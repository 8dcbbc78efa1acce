"""The loader-local component: one plain loader pod in Spark local mode instead of the SparkApplication."""

from __future__ import annotations

from typing import Any

import pytest
from plowline_loader.cli import build_parser

pytestmark = pytest.mark.unit

VARIANT = "prod+loader-local"


def _loader(deploy: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = deploy.by_kind(deploy.render(VARIANT), "Deployment")[
        "plowline-loader"
    ]
    return manifest


def _container(deploy: Any) -> dict[str, Any]:
    container: dict[str, Any] = _loader(deploy)["spec"]["template"]["spec"]["containers"][0]
    return container


def test_it_replaces_the_spark_application_with_one_pod(deploy: Any) -> None:
    """No SparkApplication, no executor budget or RBAC: one Deployment of one replica, Recreate."""
    manifests = deploy.render(VARIANT)
    kinds = {m["kind"] for m in manifests}
    names = {(m["kind"], m["metadata"]["name"]) for m in manifests}
    spec = _loader(deploy)["spec"]
    assert ("SparkApplication" in kinds, ("Role", "plowline-loader-spark-driver") in names) == (
        False,
        False,
    )
    assert (spec["replicas"], spec["strategy"]["type"]) == (1, "Recreate")


def test_it_runs_spark_locally_with_arguments_the_cli_accepts(deploy: Any) -> None:
    """The container runs ``plowline-loader run --master local[…]`` with flags the CLI knows."""
    args = _container(deploy)["args"]

    parsed = build_parser().parse_args(args)

    assert (args[0], str(deploy.flag(args, "--master")).startswith("local[")) == ("run", True)
    assert parsed.config == "/etc/plowline/config.json"


def test_it_mounts_the_same_config_as_the_other_services(deploy: Any) -> None:
    """The config volume is the shared plowline-config ConfigMap (the same config file)."""
    volumes = _loader(deploy)["spec"]["template"]["spec"]["volumes"]
    config_maps = {v["configMap"]["name"] for v in volumes if "configMap" in v}
    repeater = deploy.by_kind(deploy.render(VARIANT), "Deployment")["plowline-repeater"]
    theirs = {
        v["configMap"]["name"]
        for v in repeater["spec"]["template"]["spec"]["volumes"]
        if "configMap" in v
    }
    assert theirs == config_maps


def test_it_is_probed_guarded_and_fenced(deploy: Any) -> None:
    """Probes on /healthz and /readyz, a budget and a NetworkPolicy selecting the pod."""
    labels = _loader(deploy)["spec"]["template"]["metadata"]["labels"]
    container = _container(deploy)
    budget = deploy.by_kind(deploy.render(VARIANT), "PodDisruptionBudget")["plowline-loader"]
    policy = deploy.by_kind(deploy.render(VARIANT), "NetworkPolicy")["plowline-loader"]
    probes = (
        container["livenessProbe"]["httpGet"]["path"],
        container["readinessProbe"]["httpGet"]["path"],
    )
    selected = (
        budget["spec"]["selector"]["matchLabels"].items() <= labels.items(),
        policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items(),
    )
    assert (probes, selected, budget["spec"]["maxUnavailable"]) == (
        ("/healthz", "/readyz"),
        (True, True),
        1,
    )


def test_its_image_is_the_overlays_release(deploy: Any) -> None:
    """The overlay's image (registry and tag) applies to the component's pod."""
    image = _container(deploy)["image"]
    assert image.endswith("/plowline-loader-spark:0.1.0")
