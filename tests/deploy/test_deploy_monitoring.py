"""The operator kit on Kubernetes: scrape targets, alert rules, backlog scaling, liveness timings.

The components of deploy/k8s/components are rendered on top of the prod overlay (as a
user's overlay listing them would) and checked against the workloads they watch: every
monitor selects a pod that exists, on a port that pod declares, that its NetworkPolicy
lets the scraper reach.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

GMP = "prod+monitoring-gmp"
OPERATOR = "prod+monitoring-prometheus-operator"
KEDA = "prod+keda-scaling"
#: What is scraped: each Deployment, and the loader's Spark driver.
WORKLOADS = {"plowline-mutator", "plowline-repeater", "plowline-deadletter", "plowline-loader"}
#: The alerts issues 16 and 29 ask for, by what they watch.
ALERTS = {
    "PlowlineLoaderFallingBehind",
    "PlowlineBacklogGrowing",
    "PlowlineNoRowsWithTraffic",
    "PlowlineDeadEnds",
    "PlowlineDeadLetterLookbackIncomplete",
    "PlowlineBadRowRateJump",
    "PlowlineServiceNotReady",
    "PlowlineServiceDown",
    "PlowlineCheckpointStuck",
    "PlowlineColumnsCannotBeAdded",
    "PlowlineTableUnusable",
}


def _pods(deploy: Any, overlay: str) -> dict[str, tuple[dict[str, str], dict[str, int]]]:
    """Return each workload's pod labels and named container ports (driver for the loader)."""
    manifests = deploy.render(overlay)
    pods = {}
    for name, d in deploy.by_kind(manifests, "Deployment").items():
        template = d["spec"]["template"]
        ports = {p["name"]: p["containerPort"] for p in template["spec"]["containers"][0]["ports"]}
        pods[name] = (template["metadata"]["labels"], ports)
    driver = deploy.by_kind(manifests, "SparkApplication")["plowline-loader"]["spec"]["driver"]
    pods["plowline-loader"] = (
        driver["labels"],
        {p["name"]: p["containerPort"] for p in driver["ports"]},
    )
    return pods


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def _admits(
    policies: list[dict[str, Any]],
    pod: dict[str, str],
    peer_namespace: dict[str, str],
    peer: dict[str, str],
    port: int,
) -> bool:
    """Say whether some policy selecting ``pod`` lets a peer pod in on ``port``."""
    for policy in policies:
        if not _matches(policy["spec"]["podSelector"].get("matchLabels", {}), pod):
            continue
        for rule in policy["spec"].get("ingress", []):
            if port not in [p["port"] for p in rule.get("ports", [])]:
                continue
            for source in rule.get("from", []):
                namespaces = source.get("namespaceSelector")
                if namespaces is None or not _matches(
                    namespaces.get("matchLabels", {}), peer_namespace
                ):
                    continue
                if _matches(source.get("podSelector", {}).get("matchLabels", {}), peer):
                    return True
    return False


def _scrape_ports(deploy: Any, overlay: str) -> dict[str, int]:
    """Return, per workload, the container port its monitor scrapes."""
    manifests = deploy.render(overlay)
    pods = _pods(deploy, overlay)
    scraped: dict[str, int] = {}
    if overlay == GMP:
        for monitor in deploy.by_kind(manifests, "PodMonitoring").values():
            selector = monitor["spec"]["selector"]["matchLabels"]
            for name, (labels, ports) in pods.items():
                if _matches(selector, labels):
                    scraped[name] = ports[monitor["spec"]["endpoints"][0]["port"]]
        return scraped
    services = deploy.by_kind(manifests, "Service")
    for monitor in deploy.by_kind(manifests, "ServiceMonitor").values():
        selector = monitor["spec"]["selector"]["matchLabels"]
        port_name = monitor["spec"]["endpoints"][0]["port"]
        for service in services.values():
            if not _matches(selector, service["metadata"].get("labels", {})):
                continue
            [port] = [p for p in service["spec"]["ports"] if p["name"] == port_name]
            for name, (labels, ports) in pods.items():
                if _matches(service["spec"]["selector"], labels):
                    scraped[name] = ports[port["targetPort"]]
    return scraped


@pytest.mark.parametrize("overlay", [GMP, OPERATOR])
def test_monitors_scrape_every_workload_on_its_health_port(deploy: Any, overlay: str) -> None:
    """Each workload, the loader's driver included, is scraped on the port serving /metrics."""
    expected = {name: deploy.health_port(name) for name in WORKLOADS}
    assert expected == _scrape_ports(deploy, overlay)


@pytest.mark.parametrize("overlay", [GMP, OPERATOR])
def test_monitors_scrape_metrics_path(deploy: Any, overlay: str) -> None:
    """Every monitor endpoint asks /metrics."""
    kind = "PodMonitoring" if overlay == GMP else "ServiceMonitor"
    paths = {
        e["path"]
        for m in deploy.by_kind(deploy.render(overlay), kind).values()
        for e in m["spec"]["endpoints"]
    }
    expected = {"/metrics"}
    assert expected == paths


@pytest.mark.parametrize(
    ("overlay", "namespace", "peer"),
    [
        pytest.param(
            GMP,
            {"kubernetes.io/metadata.name": "gmp-system"},
            {"app.kubernetes.io/name": "collector"},
            id="gke-managed-collectors",
        ),
        pytest.param(
            OPERATOR,
            {"kubernetes.io/metadata.name": "monitoring", "plowline.io/metrics-scrapers": "true"},
            {"plowline.io/metrics-scraper": "true"},
            id="labelled-prometheus",
        ),
    ],
)
def test_network_policies_let_the_scraper_reach_every_metrics_port(
    deploy: Any, overlay: str, namespace: dict[str, str], peer: dict[str, str]
) -> None:
    """The scraper of each flavour passes the NetworkPolicy of every workload it scrapes."""
    manifests = deploy.render(overlay)
    policies = list(deploy.by_kind(manifests, "NetworkPolicy").values())
    pods = _pods(deploy, overlay)
    admitted = {
        name: _admits(policies, pods[name][0], namespace, peer, port)
        for name, port in _scrape_ports(deploy, overlay).items()
    }
    expected = dict.fromkeys(WORKLOADS, True)
    assert expected == admitted


def test_gke_collectors_are_admitted_only_on_metrics_ports(deploy: Any) -> None:
    """The managed collectors' rule opens the metrics ports, never Spark's RPC ports."""
    policies = list(deploy.by_kind(deploy.render(GMP), "NetworkPolicy").values())
    pods = _pods(deploy, GMP)
    collector = (
        {"kubernetes.io/metadata.name": "gmp-system"},
        {"app.kubernetes.io/name": "collector"},
    )
    driver = pods["plowline-loader"][0]
    expected = (False, False)
    assert expected == (
        _admits(policies, driver, *collector, 7078),
        _admits(policies, driver, *collector, 7079),
    )


def _groups(deploy: Any) -> list[dict[str, Any]]:
    data: dict[str, Any] = yaml.safe_load(
        (deploy.repo / "deploy" / "monitoring" / "alerts.yaml").read_text()
    )
    groups: list[dict[str, Any]] = data["groups"]
    return groups


def test_alert_rules_are_the_same_in_every_flavour(deploy: Any) -> None:
    """GKE Rules and the PrometheusRule carry exactly the groups of deploy/monitoring/alerts.yaml."""
    gmp = deploy.by_kind(deploy.render(GMP), "Rules")["plowline"]["spec"]["groups"]
    operator = deploy.by_kind(deploy.render(OPERATOR), "PrometheusRule")["plowline"]["spec"][
        "groups"
    ]
    expected = (_groups(deploy), _groups(deploy))
    assert expected == (gmp, operator)


def test_alerts_cover_what_an_operator_must_hear_about(deploy: Any) -> None:
    """Backlog, no rows, dead-ends, bad rows, readiness, down, checkpoint, setup, lookback alert."""
    names = {rule["alert"] for group in _groups(deploy) for rule in group["rules"]}
    assert names == ALERTS


def _anchor(heading: str) -> str:
    """Return GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-")


def test_every_alert_links_a_runbook_section_that_exists(deploy: Any) -> None:
    """Each alert's runbook_url points at a heading of deploy/RUNBOOK.md with its three parts."""
    text = (deploy.repo / "deploy" / "RUNBOOK.md").read_text()
    sections = {
        _anchor(heading): body
        for heading, body in re.findall(r"^## (.+)\n((?:(?!^## ).*\n?)*)", text, re.M)
    }
    found = {}
    for group in _groups(deploy):
        for rule in group["rules"]:
            url = rule["annotations"]["runbook_url"]
            page, _, anchor = url.partition("#")
            body = sections.get(anchor, "")
            parts = all(f"**{part}:**" in body for part in ("What it means", "Confirm", "Do"))
            found[rule["alert"]] = (page, parts)
    expected = dict.fromkeys(ALERTS, ("deploy/RUNBOOK.md", True))
    assert expected == found


def test_keda_scales_repeater_and_deadletter_on_their_subscriptions(deploy: Any) -> None:
    """The ScaledObjects watch the subscriptions the Deployments consume (plowline-settings)."""
    manifests = deploy.render(KEDA)
    [settings] = [
        m for m in manifests if m["kind"] == "ConfigMap" and "BAD_ROWS_SUB" in m.get("data", {})
    ]
    scaled = {
        s["spec"]["scaleTargetRef"]["name"]: (
            s["spec"]["triggers"][0]["type"],
            s["spec"]["triggers"][0]["metadata"]["subscriptionName"],
        )
        for s in deploy.by_kind(manifests, "ScaledObject").values()
    }
    expected = {
        "plowline-repeater": ("gcp-pubsub", settings["data"]["FAILED_INSERTS_SUB"]),
        "plowline-deadletter": ("gcp-pubsub", settings["data"]["BAD_ROWS_SUB"]),
    }
    assert expected == scaled


def test_keda_replaces_the_cpu_autoscalers(deploy: Any) -> None:
    """With KEDA no CPU HorizontalPodAutoscaler is left to fight its own."""
    expected: dict[str, Any] = {}
    assert expected == deploy.by_kind(deploy.render(KEDA), "HorizontalPodAutoscaler")


def test_keda_authenticates_with_workload_identity(deploy: Any) -> None:
    """Every trigger uses the TriggerAuthentication whose pod identity is gcp (no key)."""
    manifests = deploy.render(KEDA)
    auths = {
        n: a["spec"]["podIdentity"]["provider"]
        for n, a in deploy.by_kind(manifests, "TriggerAuthentication").items()
    }
    refs = {
        auths[t["authenticationRef"]["name"]]
        for s in deploy.by_kind(manifests, "ScaledObject").values()
        for t in s["spec"]["triggers"]
    }
    expected = {"gcp"}
    assert expected == refs


def _stall_and_probe(deploy: Any, overlay: str) -> dict[str, tuple[float | None, dict[str, Any]]]:
    manifests = deploy.render(overlay)
    found = {}
    for name, d in deploy.by_kind(manifests, "Deployment").items():
        container = d["spec"]["template"]["spec"]["containers"][0]
        stall = deploy.flag(container["args"], "--stallTimeout") or deploy.flag(
            container["args"], "--stall-timeout"
        )
        found[name] = (float(stall) if stall else None, container["livenessProbe"])
    spec = deploy.by_kind(manifests, "SparkApplication")["plowline-loader"]["spec"]
    stall = deploy.flag(spec["arguments"], "--stall-timeout")
    probe = spec["driver"]["template"]["spec"]["containers"][0]["livenessProbe"]
    found["plowline-loader"] = (float(stall) if stall else None, probe)
    return found


@pytest.mark.parametrize("overlay", ["dev", "prod"])
def test_liveness_probes_act_within_a_fifth_of_the_stall_timeout(deploy: Any, overlay: str) -> None:
    """Each workload sets its stall timeout, and its probe restarts a stalled pod soon after it.

    /healthz turns 503 only after the stall timeout, so the probe may be quick: it gives up
    after periodSeconds x failureThreshold, which must stay under a fifth of the timeout.
    """
    actual = {
        name: (
            stall is not None,
            stall is not None and probe["periodSeconds"] * probe["failureThreshold"] * 5 <= stall,
        )
        for name, (stall, probe) in _stall_and_probe(deploy, overlay).items()
    }
    expected = dict.fromkeys(WORKLOADS, (True, True))
    assert expected == actual
