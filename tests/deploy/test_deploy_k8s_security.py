"""The rendered overlays grant, expose and protect exactly what the workloads need.

The loader's Role, the NetworkPolicies, the PodDisruptionBudgets, Spark's authentication and
the driver's stop path, read from `kubectl kustomize` output.
"""

from __future__ import annotations

from typing import Any

import pytest

OVERLAYS = ["dev", "prod"]
SCRAPER = {"plowline.io/metrics-scraper": "true"}
MUTATOR_CLIENT = {"plowline.io/mutator-client": "true"}


def _spark(deploy: Any, overlay: str) -> dict[str, Any]:
    app: dict[str, Any] = deploy.by_kind(deploy.render(overlay), "SparkApplication")[
        "plowline-loader"
    ]
    return app


def _peer(peer: dict[str, Any]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A NetworkPolicy peer as (where, labels): any, this, or namespaces labelled so."""
    namespaces = peer.get("namespaceSelector")
    where = (
        "this namespace"
        if namespaces is None
        else "any namespace"
        if namespaces == {}
        else f"namespaces {sorted(namespaces['matchLabels'].items())}"
    )
    labels = tuple(sorted(peer["podSelector"]["matchLabels"].items()))
    return where, labels


def _ingress(policy: dict[str, Any]) -> set[tuple[Any, ...]]:
    """Every (peer, port) a policy lets in."""
    return {
        (*_peer(peer), port["port"])
        for rule in policy["spec"].get("ingress", [])
        for peer in rule["from"]
        for port in rule["ports"]
    }


def _labels(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_loader_role_grants_only_what_spark_needs_for_executors(
    deploy: Any, overlay: str
) -> None:
    """The driver's Role: executor pods, their ConfigMap, cleanup of its Service; nothing else."""
    role = deploy.by_kind(deploy.render(overlay), "Role")["plowline-loader-spark-driver"]
    actual = {
        resource: sorted(rule["verbs"])
        for rule in role["rules"]
        for resource in rule["resources"]
        if rule["apiGroups"] == [""]
    }
    expected = {
        "pods": sorted(["get", "list", "watch", "create", "patch", "delete", "deletecollection"]),
        "configmaps": sorted(["get", "list", "create", "delete", "deletecollection"]),
        "services": sorted(["get", "list", "delete", "deletecollection"]),
    }
    assert (expected, 3) == (actual, len(role["rules"]))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_only_the_spark_driver_is_bound_to_a_role(deploy: Any, overlay: str) -> None:
    """The one RoleBinding names the driver's account; executors and services get no API access."""
    manifests = deploy.render(overlay)
    subjects = [
        subject["name"]
        for binding in deploy.by_kind(manifests, "RoleBinding").values()
        for subject in binding["subjects"]
    ]
    spec = _spark(deploy, overlay)["spec"]
    expected = [spec["driver"]["serviceAccount"]]
    assert (expected, "plowline-loader-executor") == (subjects, spec["executor"]["serviceAccount"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_ingress_is_denied_by_default(deploy: Any, overlay: str) -> None:
    """A policy selects every pod for Ingress and lets nothing in."""
    policies = deploy.by_kind(deploy.render(overlay), "NetworkPolicy")
    deny = policies["plowline-default-deny-ingress"]["spec"]
    expected = ({}, ["Ingress"], [])
    assert expected == (deny["podSelector"], deny["policyTypes"], deny.get("ingress", []))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_each_component_lets_in_only_what_must_reach_it(deploy: Any, overlay: str) -> None:
    """Scrapers reach each health port (the mutator's from labelled namespaces only), labelled
    clients the mutator, driver and executors each other."""
    policies = deploy.by_kind(deploy.render(overlay), "NetworkPolicy")
    scraper = ("any namespace", _labels(SCRAPER))
    labelled = ("namespaces [('plowline.io/metrics-scrapers', 'true')]", _labels(SCRAPER))
    driver = ("this namespace", _labels({"app.kubernetes.io/component": "loader-driver"}))
    executor = ("this namespace", _labels({"app.kubernetes.io/component": "loader-executor"}))
    expected = {
        "plowline-mutator": {(*labelled, 8080), ("this namespace", _labels(MUTATOR_CLIENT), 8080)},
        "plowline-repeater": {(*scraper, 8082)},
        "plowline-deadletter": {(*scraper, 8081)},
        "plowline-loader-driver": {(*scraper, 8083), (*executor, 7078), (*executor, 7079)},
        "plowline-loader-executor": {(*driver, 7079), (*executor, 7079)},
        "plowline-default-deny-ingress": set(),
    }
    actual = {name: _ingress(policy) for name, policy in policies.items()}
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_network_policies_select_the_pods_they_are_for(deploy: Any, overlay: str) -> None:
    """Each component's policy selects its pods by labels those pods carry (and no other's)."""
    manifests = deploy.render(overlay)
    spec = _spark(deploy, overlay)["spec"]
    pods = {
        name: d["spec"]["template"]["metadata"]["labels"]
        for name, d in deploy.by_kind(manifests, "Deployment").items()
    }
    pods["plowline-loader-driver"] = spec["driver"]["labels"]
    pods["plowline-loader-executor"] = spec["executor"]["labels"]
    selected = {}
    for name, policy in deploy.by_kind(manifests, "NetworkPolicy").items():
        wanted = policy["spec"]["podSelector"].get("matchLabels", {})
        if wanted:
            selected[name] = sorted(
                pod for pod, labels in pods.items() if wanted.items() <= labels.items()
            )
    expected = {name: [name] for name in pods}
    assert expected == selected


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_spark_ports_are_the_ones_the_policies_open(deploy: Any, overlay: str) -> None:
    """Spark's driver and block-manager ports are pinned to what the NetworkPolicies allow."""
    conf = _spark(deploy, overlay)["spec"]["sparkConf"]
    actual = tuple(
        conf.get(key)
        for key in (
            "spark.driver.port",
            "spark.driver.blockManager.port",
            "spark.blockManager.port",
        )
    )
    expected = ("7078", "7079", "7079")
    assert expected == actual


def _minimum_pods(
    manifests: list[dict[str, Any]], deploy: Any
) -> dict[str, tuple[dict[str, str], int]]:
    """Each workload's pod labels and the fewest pods it runs (HPA minimum, replicas, executors)."""
    scalers = {
        h["spec"]["scaleTargetRef"]["name"]: h["spec"]["minReplicas"]
        for h in deploy.by_kind(manifests, "HorizontalPodAutoscaler").values()
    }
    workloads = {
        name: (
            d["spec"]["template"]["metadata"]["labels"],
            scalers.get(name, d["spec"].get("replicas", 1)),
        )
        for name, d in deploy.by_kind(manifests, "Deployment").items()
    }
    for app in deploy.by_kind(manifests, "SparkApplication").values():
        executor = app["spec"]["executor"]
        workloads["plowline-loader-executor"] = (executor["labels"], executor["instances"])
        workloads["plowline-loader-driver"] = (app["spec"]["driver"]["labels"], 1)
    return workloads


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_every_disruption_budget_protects_something(deploy: Any, overlay: str) -> None:
    """Each budget keeps at least one pod of its workload up and never blocks a drain for ever."""
    manifests = deploy.render(overlay)
    workloads = _minimum_pods(manifests, deploy)
    actual = {}
    for name, budget in deploy.by_kind(manifests, "PodDisruptionBudget").items():
        wanted = budget["spec"]["selector"]["matchLabels"].items()
        covered = [w for w, (labels, _n) in workloads.items() if wanted <= labels.items()]
        fewest = min(workloads[w][1] for w in covered)
        unavailable = budget["spec"]["maxUnavailable"]
        actual[name] = (covered, fewest - unavailable >= 1, unavailable >= 1)
    expected = {
        "plowline-repeater": (["plowline-repeater"], True, True),
        "plowline-deadletter": (["plowline-deadletter"], True, True),
        "plowline-loader-executor": (["plowline-loader-executor"], True, True),
    }
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_spark_authenticates_and_encrypts_its_own_traffic(deploy: Any, overlay: str) -> None:
    """spark.authenticate (secret generated by Spark per application) and network crypto are on."""
    conf = _spark(deploy, overlay)["spec"]["sparkConf"]
    actual = (
        conf.get("spark.authenticate"),
        conf.get("spark.network.crypto.enabled"),
        [key for key in conf if key.startswith("spark.authenticate.secret")],
    )
    expected = ("true", "true", [])
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_executors_do_the_work(deploy: Any, overlay: str) -> None:
    """Each micro-batch has at least one partition (task) per executor core, and no local master."""
    spec = _spark(deploy, overlay)["spec"]
    partitions = int(deploy.flag(spec["arguments"], "--partitions") or 0)
    cores = spec["executor"]["instances"] * spec["executor"]["cores"]
    actual = (
        spec["executor"]["instances"] >= 2,
        partitions >= cores,
        deploy.flag(spec["arguments"], "--master"),
        "spark.master" in spec["sparkConf"],
    )
    expected = (True, True, None, False)
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_loader_grace_period_fits_the_pod_grace_period(deploy: Any, overlay: str) -> None:
    """The loader's --grace-period ends well before Kubernetes kills the driver pod."""
    spec = _spark(deploy, overlay)["spec"]
    grace = float(deploy.flag(spec["arguments"], "--grace-period") or 30)
    pod = spec["driver"]["terminationGracePeriodSeconds"]
    expected = True
    assert expected == (grace + 10 <= pod)


def test_k8s_driver_pod_sigterm_goes_to_the_loader_not_the_jvm(deploy: Any) -> None:
    """The image's driver branch runs driver_pod.py under tini, not spark-submit itself."""
    script = (deploy.docker / "loader" / "spark-entrypoint.sh").read_text()
    branch = script[script.index("  driver)") : script.index("  executor)")]
    execs = [line.strip() for line in branch.splitlines() if line.strip().startswith("exec ")]
    expected = ['exec /usr/bin/tini -s -- /app/.venv/bin/python /opt/plowline/driver_pod.py "$@"']
    assert expected == execs
