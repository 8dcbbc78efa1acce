"""The one-pod loader (deploy/k8s/components/loader-local), rendered on top of the overlays.

The component replaces the SparkApplication with a plain Deployment in Spark local mode:
these tests read what `kubectl kustomize` prints for `overlay+loader-local` and check the
pod against the loader's own CLI, settings and the neighbouring policies and monitors.
Schema validation and checkov cover the same renders in test_deploy_validation.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

LOCAL = ["dev+loader-local", "prod+loader-local"]
SCRAPER = {"plowline.io/metrics-scraper": "true"}
_SPARK_ONLY = {
    ("SparkApplication", "plowline-loader"),
    ("PodDisruptionBudget", "plowline-loader-executor"),
    ("NetworkPolicy", "plowline-loader-executor"),
    ("Role", "plowline-loader-spark-driver"),
    ("RoleBinding", "plowline-loader-spark-driver"),
}


def _loader(deploy: Any, overlay: str) -> dict[str, Any]:
    loader: dict[str, Any] = deploy.by_kind(deploy.render(overlay), "Deployment")["plowline-loader"]
    return loader


def _container(deploy: Any, overlay: str) -> dict[str, Any]:
    container: dict[str, Any] = _loader(deploy, overlay)["spec"]["template"]["spec"]["containers"][
        0
    ]
    return container


def _names(manifests: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    return Counter((m["kind"], m["metadata"]["name"]) for m in manifests)


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_swaps_the_spark_application_for_one_deployment(
    deploy: Any, overlay: str
) -> None:
    """The render is the overlay's, less the Spark operator's objects, plus the Deployment and its budget."""
    base = _names(deploy.render(overlay.split("+")[0]))
    expected = (
        base
        - Counter(_SPARK_ONLY)
        + Counter(
            {("Deployment", "plowline-loader"): 1, ("PodDisruptionBudget", "plowline-loader"): 1}
        )
    )
    assert expected == _names(deploy.render(overlay))


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_runs_one_pod_in_spark_local_mode(deploy: Any, overlay: str) -> None:
    """One replica, replaced (never beside its successor), `run` with a local master the CLI accepts."""
    spec = _loader(deploy, overlay)["spec"]
    args = _container(deploy, overlay)["args"]
    deploy.check_service_args("plowline-loader", args)
    master = deploy.flag(args, "--master")
    slots = int(master.removeprefix("local[").removesuffix("]"))
    cpu = int(_container(deploy, overlay)["resources"]["limits"]["cpu"])
    expected = (1, "Recreate", "run", slots, int(deploy.flag(args, "--partitions")))
    assert (expected, True) == (
        (spec["replicas"], spec["strategy"]["type"], args[0], cpu, slots),
        master.startswith("local["),
    )


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_runs_the_image_the_overlay_gave_the_spark_application(
    deploy: Any, overlay: str
) -> None:
    """The pod's image is the overlay's loader image and tag, through the spark target's entrypoint."""
    spark = deploy.by_kind(deploy.render(overlay.split("+")[0]), "SparkApplication")
    container = _container(deploy, overlay)
    expected = (spark["plowline-loader"]["spec"]["image"], "/opt/plowline/spark-entrypoint.sh")
    assert expected == (container["image"], container["command"][-1])


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_probes_ask_healthz_and_readyz_on_the_loader_port(
    deploy: Any, overlay: str
) -> None:
    """Liveness GETs /healthz and readiness /readyz on the loader's default health port."""
    container = _container(deploy, overlay)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    live, ready = container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"]
    port = deploy.loader_health_port
    expected = (("/healthz", port), ("/readyz", port))
    assert expected == ((live["path"], ports[live["port"]]), (ready["path"], ports[ready["port"]]))


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_liveness_acts_within_a_fifth_of_the_stall_timeout(
    deploy: Any, overlay: str
) -> None:
    """The stall timeout is set and the liveness probe gives up well inside it."""
    container = _container(deploy, overlay)
    stall = float(deploy.flag(container["args"], "--stall-timeout"))
    probe = container["livenessProbe"]
    expected = True
    assert expected == (probe["periodSeconds"] * probe["failureThreshold"] * 5 <= stall)


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_stops_gracefully_inside_the_pod_grace_period(
    deploy: Any, overlay: str
) -> None:
    """--grace-period leaves the pod time to stop Spark after the batch in flight."""
    pod = _loader(deploy, overlay)["spec"]["template"]["spec"]
    grace = float(deploy.flag(_container(deploy, overlay)["args"], "--grace-period"))
    expected = True
    assert expected == (grace + 10 <= pod["terminationGracePeriodSeconds"])


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_checkpoints_on_a_writable_empty_dir(deploy: Any, overlay: str) -> None:
    """The checkpoint is a local path under an emptyDir mount (no bucket), /tmp an emptyDir too."""
    pod = _loader(deploy, overlay)["spec"]["template"]["spec"]
    container = _container(deploy, overlay)
    volumes = {v["name"]: v for v in pod["volumes"]}
    checkpoint = deploy.flag(container["args"], "--checkpoint").removeprefix("file://")
    mounts = {
        m["mountPath"]: "emptyDir" in volumes[m["name"]]
        for m in container["volumeMounts"]
        if checkpoint.startswith(m["mountPath"] + "/") or m["mountPath"] == "/tmp"
    }
    expected = {"/var/lib/plowline": True, "/tmp": True}
    assert expected == mounts


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_mounts_the_overlay_config(deploy: Any, overlay: str) -> None:
    """The config and resolver come from the overlay's generated ConfigMap, as for every service."""
    manifests = deploy.render(overlay)
    generated = next(
        m["metadata"]["name"]
        for m in manifests
        if m["kind"] == "ConfigMap" and "config.json" in m["data"]
    )
    volumes = _loader(deploy, overlay)["spec"]["template"]["spec"]["volumes"]
    args = _container(deploy, overlay)["args"]
    expected = (generated, "/etc/plowline/config.json", "/etc/plowline/resolver.json")
    actual = (
        next(v["configMap"]["name"] for v in volumes if "configMap" in v),
        deploy.flag(args, "--config"),
        deploy.flag(args, "--resolver"),
    )
    assert expected == actual


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_pod_runs_unprivileged_without_an_api_token(deploy: Any, overlay: str) -> None:
    """The loader's Workload Identity account, no Kubernetes token, non-root, read-only, no capabilities."""
    pod = _loader(deploy, overlay)["spec"]["template"]["spec"]
    security = _container(deploy, overlay)["securityContext"]
    expected = ("plowline-loader", False, True, False, True, {"drop": ["ALL"]})
    actual = (
        pod["serviceAccountName"],
        pod["automountServiceAccountToken"],
        security["runAsNonRoot"],
        security["allowPrivilegeEscalation"],
        security["readOnlyRootFilesystem"],
        security["capabilities"],
    )
    assert expected == actual


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_budget_covers_the_pod_and_never_blocks_a_drain(
    deploy: Any, overlay: str
) -> None:
    """The loader's budget selects its one pod and lets it be evicted."""
    budget = deploy.by_kind(deploy.render(overlay), "PodDisruptionBudget")["plowline-loader"]
    labels = _loader(deploy, overlay)["spec"]["template"]["metadata"]["labels"]
    selected = budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    expected = (True, 1)
    assert expected == (selected, budget["spec"]["maxUnavailable"])


@pytest.mark.parametrize("overlay", LOCAL)
def test_loader_local_lets_in_only_metrics_scrapers(deploy: Any, overlay: str) -> None:
    """The policies selecting the pod admit the scraper on the health port and nothing else."""
    manifests = deploy.render(overlay)
    labels = _loader(deploy, overlay)["spec"]["template"]["metadata"]["labels"]
    admitted = sorted(
        (name, tuple(sorted(peer["podSelector"]["matchLabels"].items())), port["port"])
        for name, policy in deploy.by_kind(manifests, "NetworkPolicy").items()
        if policy["spec"]["podSelector"].get("matchLabels", {}).items() <= labels.items()
        for rule in policy["spec"].get("ingress", [])
        for peer in rule["from"]
        for port in rule["ports"]
    )
    expected = [("plowline-loader-driver", tuple(SCRAPER.items()), deploy.loader_health_port)]
    assert expected == admitted


@pytest.mark.parametrize(
    ("overlay", "kind"),
    [
        pytest.param("prod+loader-local+monitoring-gmp", "PodMonitoring", id="gmp"),
        pytest.param(
            "prod+monitoring-prometheus-operator+loader-local", "Service", id="prometheus-operator"
        ),
    ],
)
def test_loader_local_pod_is_what_the_monitoring_components_select(
    deploy: Any, overlay: str, kind: str
) -> None:
    """Either monitoring component, listed before or after, selects the one-pod loader."""
    labels = _loader(deploy, overlay)["spec"]["template"]["metadata"]["labels"]
    objects = deploy.by_kind(deploy.render(overlay), kind).values()
    selecting = sorted(
        m["metadata"]["name"]
        for m in objects
        if (m["spec"]["selector"].get("matchLabels") or m["spec"]["selector"]).items()
        <= labels.items()
    )
    expected = 1
    assert expected == len(selecting)


@pytest.mark.parametrize("name", ["dev", "prod"])
def test_loader_local_listed_inside_an_overlay_renders_the_same_pod(
    deploy: Any, tmp_path: Path, name: str
) -> None:
    """Listed under the overlay's own `components:` (as GKE.md says), the pod is the same."""
    kubectl = shutil.which("kubectl")
    assert kubectl is not None, "kubectl is not on PATH"
    overlay = deploy.repo / "deploy" / "k8s" / "overlays" / name
    shutil.copytree(overlay, tmp_path / name)
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    kustomization["resources"] = [
        r if not r.startswith("..") else os.path.relpath(overlay / r, tmp_path / name)
        for r in kustomization["resources"]
    ]
    component = deploy.repo / "deploy" / "k8s" / "components" / "loader-local"
    kustomization["components"] = [os.path.relpath(component, tmp_path / name)]
    (tmp_path / name / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    result = subprocess.run(
        [kubectl, "kustomize", str(tmp_path / name)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    manifests = [m for m in yaml.safe_load_all(result.stdout) if m]
    inside = deploy.by_kind(manifests, "Deployment")["plowline-loader"]["spec"]["template"]
    outside = _loader(deploy, f"{name}+loader-local")["spec"]["template"]
    expected = (outside["spec"]["containers"], [])
    assert expected == (
        inside["spec"]["containers"],
        sorted(m["kind"] for m in manifests if m["kind"] == "SparkApplication"),
    )
