"""The kustomize overlays, rendered by `kubectl kustomize`: kinds, probes, commands, security."""

from __future__ import annotations

import json
from collections import Counter
from importlib.metadata import version
from typing import Any

import pytest

OVERLAYS = ["dev", "prod"]
DEPLOYMENTS = {
    "plowline-mutator": "mutator",
    "plowline-repeater": "repeater",
    "plowline-deadletter": "deadletter",
}
_COMMON_KINDS = {
    ("v1", "Namespace"): 1,
    ("v1", "ServiceAccount"): 5,
    ("rbac.authorization.k8s.io/v1", "Role"): 1,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): 1,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): 1,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): 1,
    ("v1", "ConfigMap"): 2,
    ("apps/v1", "Deployment"): 3,
    ("v1", "Service"): 1,
    ("policy/v1", "PodDisruptionBudget"): 3,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): 2,
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"): 1,
    ("networking.k8s.io/v1", "NetworkPolicy"): 6,
}
_SECURE_CONTAINER = {
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def _containers(deploy: Any, overlay: str) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """Return (deployment name, pod spec, container) for every Deployment container."""
    deployments = deploy.by_kind(deploy.render(overlay), "Deployment")
    return [
        (name, d["spec"]["template"]["spec"], c)
        for name, d in deployments.items()
        for c in d["spec"]["template"]["spec"]["containers"]
    ]


def _port(container: dict[str, Any], port: int | str) -> int:
    if isinstance(port, int):
        return port
    return int(next(p["containerPort"] for p in container["ports"] if p["name"] == port))


def _spark(deploy: Any, overlay: str) -> dict[str, Any]:
    app: dict[str, Any] = deploy.by_kind(deploy.render(overlay), "SparkApplication")[
        "plowline-loader"
    ]
    return app


def _project(deploy: Any, overlay: str) -> str:
    config_map = next(
        m for m in deploy.render(overlay) if m["kind"] == "ConfigMap" and "config.json" in m["data"]
    )
    return str(json.loads(config_map["data"]["config.json"])["data"]["projectId"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_overlay_renders_the_expected_kinds(deploy: Any, overlay: str) -> None:
    """Each overlay renders exactly the expected kinds at their API versions (no Secret)."""
    expected = Counter(_COMMON_KINDS)
    actual = Counter((m["apiVersion"], m["kind"]) for m in deploy.render(overlay))
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_probes_ask_healthz_and_readyz_on_the_service_port(deploy: Any, overlay: str) -> None:
    """Liveness GETs /healthz and readiness /readyz on the port the service serves by default."""
    expected, actual = {}, {}
    for name, _, container in _containers(deploy, overlay):
        port = deploy.health_port(name)
        expected[name] = (("/healthz", port), ("/readyz", port))
        live, ready = container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"]
        actual[name] = (
            (live["path"], _port(container, live["port"])),
            (ready["path"], _port(container, ready["port"])),
        )
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_port_arguments_agree_with_the_probed_port(deploy: Any, overlay: str) -> None:
    """A container's --port argument, when given, is the port its probes use."""
    expected, actual = {}, {}
    for name, _, container in _containers(deploy, overlay):
        expected[name] = str(deploy.health_port(name))
        actual[name] = deploy.flag(container["args"], "--port")
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_containers_run_the_image_console_script_with_valid_arguments(
    deploy: Any, overlay: str
) -> None:
    """Containers keep the image ENTRYPOINT (no command) and pass arguments the CLI accepts."""
    commands = {}
    for name, _, container in _containers(deploy, overlay):
        deploy.check_service_args(name, container["args"])
        commands[name] = container.get("command")
    expected = dict.fromkeys(DEPLOYMENTS)
    assert expected == commands


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_images_are_set_by_the_overlay_to_a_registry_and_version(
    deploy: Any, overlay: str
) -> None:
    """Every image is the service's name rewritten to a registry path and a non-latest tag."""
    images = {name: c["image"] for name, _, c in _containers(deploy, overlay)}
    images["plowline-loader-spark"] = _spark(deploy, overlay)["spec"]["image"]
    shapes = {
        name: (image.rsplit(":", 1)[0].endswith(f"/{name}"), image.rsplit(":", 1)[-1] != "latest")
        for name, image in images.items()
    }
    expected = dict.fromkeys(images, (True, True))
    assert expected == shapes


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_containers_never_run_as_root(deploy: Any, overlay: str) -> None:
    """Pods and containers run as uid 10001, unprivileged, read-only, all capabilities dropped."""
    actual = {}
    for name, pod, container in _containers(deploy, overlay):
        security = container["securityContext"]
        actual[name] = (
            pod["securityContext"]["runAsNonRoot"],
            {key: security.get(key) for key in _SECURE_CONTAINER},
        )
    expected = dict.fromkeys(DEPLOYMENTS, (True, _SECURE_CONTAINER))
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_read_only_root_has_a_writable_tmp(deploy: Any, overlay: str) -> None:
    """Each container mounts an emptyDir at /tmp, since its root file system is read-only."""
    actual = {}
    for name, pod, container in _containers(deploy, overlay):
        volumes = {v["name"]: v for v in pod["volumes"]}
        tmp = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
        actual[name] = [("emptyDir" in volumes[m["name"]]) for m in tmp]
    expected = {name: [True] for name in DEPLOYMENTS}
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_containers_set_cpu_and_memory_requests_and_limits(deploy: Any, overlay: str) -> None:
    """Every container requests and limits both CPU and memory."""
    actual = {
        name: {kind: sorted(c["resources"].get(kind, {})) for kind in ("requests", "limits")}
        for name, _, c in _containers(deploy, overlay)
    }
    expected = {"requests": ["cpu", "memory"], "limits": ["cpu", "memory"]}
    wanted = dict.fromkeys(DEPLOYMENTS, expected)
    assert wanted == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_repeater_and_deadletter_scale_on_cpu(deploy: Any, overlay: str) -> None:
    """The repeater and the dead-letter writer have CPU-utilisation autoscalers; no replicas pin."""
    manifests = deploy.render(overlay)
    deployments = deploy.by_kind(manifests, "Deployment")
    actual = {
        h["spec"]["scaleTargetRef"]["name"]: (
            [m["resource"]["name"] for m in h["spec"]["metrics"]],
            "replicas" in deployments[h["spec"]["scaleTargetRef"]["name"]]["spec"],
        )
        for h in deploy.by_kind(manifests, "HorizontalPodAutoscaler").values()
    }
    expected = {
        "plowline-repeater": (["cpu"], False),
        "plowline-deadletter": (["cpu"], False),
    }
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_mutator_runs_one_replica_behind_a_service(deploy: Any, overlay: str) -> None:
    """The mutator has one replica and a Service forwarding 8080 to its API port."""
    manifests = deploy.render(overlay)
    mutator = deploy.by_kind(manifests, "Deployment")["plowline-mutator"]
    service = deploy.by_kind(manifests, "Service")["plowline-mutator"]
    container = mutator["spec"]["template"]["spec"]["containers"][0]
    target = _port(container, service["spec"]["ports"][0]["targetPort"])
    actual = (mutator["spec"]["replicas"], service["spec"]["ports"][0]["port"], target)
    expected = (1, 8080, deploy.health_port("plowline-mutator"))
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_mutator_token_is_a_file_from_a_secret_never_in_git(deploy: Any, overlay: str) -> None:
    """The token Secret is mounted as the file --token-file names; no overlay renders a Secret."""
    manifests = deploy.render(overlay)
    pod = deploy.by_kind(manifests, "Deployment")["plowline-mutator"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    token_file = deploy.flag(container["args"], "--token-file")
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounted = {
        f"{m['mountPath']}/{item['path']}": volumes[m["name"]]["secret"]
        for m in container["volumeMounts"]
        if "secret" in volumes[m["name"]]
        for item in volumes[m["name"]]["secret"]["items"]
    }
    secret = mounted.get(token_file or "", {})
    env = [e["name"] for e in container.get("env", [])]
    actual = (secret.get("secretName"), env, sorted(deploy.by_kind(manifests, "Secret")))
    expected = ("plowline-mutator-token", [], [])
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_service_accounts_use_workload_identity_in_the_config_project(
    deploy: Any, overlay: str
) -> None:
    """Each account acts as <service>@<config projectId> (the loader's executors as the loader)."""
    project = _project(deploy, overlay)
    accounts = deploy.by_kind(deploy.render(overlay), "ServiceAccount")
    actual = {
        n: a["metadata"]["annotations"]["iam.gke.io/gcp-service-account"]
        for n, a in accounts.items()
    }
    expected = {
        n: f"{n.removesuffix('-executor')}@{project}.iam.gserviceaccount.com" for n in accounts
    }
    assert (expected, 5) == (actual, len(actual))


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_workloads_run_as_their_own_service_accounts(deploy: Any, overlay: str) -> None:
    """Each Deployment and the Spark driver and executors run as a service account that exists."""
    manifests = deploy.render(overlay)
    accounts = set(deploy.by_kind(manifests, "ServiceAccount"))
    spec = _spark(deploy, overlay)["spec"]
    used = {
        n: d["spec"]["template"]["spec"]["serviceAccountName"]
        for n, d in deploy.by_kind(manifests, "Deployment").items()
    }
    used["driver"] = spec["driver"]["serviceAccount"]
    used["executor"] = spec["executor"]["serviceAccount"]
    expected = {
        **{n: n for n in DEPLOYMENTS},
        "driver": "plowline-loader",
        "executor": "plowline-loader-executor",
    }
    assert (expected, True) == (used, set(used.values()) <= accounts)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_overlay_replaces_every_example_value(deploy: Any, overlay: str) -> None:
    """No placeholder project of the base survives into a rendered overlay."""
    rendered = json.dumps(deploy.render(overlay))
    expected = 0
    assert expected == rendered.count("example-project")


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_spark_application_is_a_python_job_of_the_installed_spark(
    deploy: Any, overlay: str
) -> None:
    """The SparkApplication runs the image's driver file in cluster mode on pyspark's version."""
    spec = _spark(deploy, overlay)["spec"]
    actual = (spec["type"], spec["mode"], spec["sparkVersion"], spec["mainApplicationFile"])
    expected = ("Python", "cluster", version("pyspark"), "local:///opt/plowline/driver.py")
    assert expected == actual


def test_k8s_spark_main_file_is_copied_into_the_loader_image(deploy: Any) -> None:
    """The driver file the SparkApplication names, and the pod's main process, are in the image."""
    copies = [args.split() for s in deploy.stages("loader") for args in s.all("COPY")]
    expected = [
        ["deploy/docker/loader/driver.py", "deploy/docker/loader/driver_pod.py", "/opt/plowline/"]
    ]
    assert expected == [c for c in copies if c[-1] == "/opt/plowline/"]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_spark_arguments_run_the_loader_with_a_gcs_checkpoint(
    deploy: Any, overlay: str
) -> None:
    """The driver runs `plowline-loader run` with config, resolver and a gs:// checkpoint."""
    args = _spark(deploy, overlay)["spec"]["arguments"]
    deploy.check_service_args("plowline-loader", args)
    checkpoint = deploy.flag(args, "--checkpoint") or ""
    actual = (
        args[0],
        deploy.flag(args, "--config"),
        deploy.flag(args, "--resolver"),
        checkpoint[:5],
    )
    expected = ("run", "/etc/plowline/config.json", "/etc/plowline/resolver.json", "gs://")
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_spark_application_is_always_restarted(deploy: Any, overlay: str) -> None:
    """A stream never finishes: the operator resubmits it however it ended, after a pause."""
    policy = _spark(deploy, overlay)["spec"]["restartPolicy"]
    actual = (
        policy["type"],
        policy["onFailureRetryInterval"] > 0,
        policy["onSubmissionFailureRetryInterval"] > 0,
    )
    expected = ("Always", True, True)
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize("role", ["driver", "executor"])
def test_k8s_spark_pods_size_and_secure_their_containers(
    deploy: Any, overlay: str, role: str
) -> None:
    """Driver and executors set cores and memory and run as uid 10001 with the container hardening."""
    pod = _spark(deploy, overlay)["spec"][role]
    security = {key: pod["securityContext"].get(key) for key in _SECURE_CONTAINER}
    actual = (
        pod["cores"] >= 1,
        bool(pod["memory"]),
        pod["podSecurityContext"]["runAsNonRoot"],
        security,
    )
    expected = (True, True, True, _SECURE_CONTAINER)
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_spark_driver_probes_the_loader_health_port(deploy: Any, overlay: str) -> None:
    """The driver's pod template probes /healthz and /readyz on the loader's health port."""
    driver = _spark(deploy, overlay)["spec"]["driver"]
    container = driver["template"]["spec"]["containers"][0]
    port = deploy.loader_health_port
    actual = (
        container["name"],
        container["livenessProbe"]["httpGet"],
        container["readinessProbe"]["httpGet"],
        [p["containerPort"] for p in driver["ports"]],
    )
    expected = (
        "spark-kubernetes-driver",
        {"path": "/healthz", "port": port},
        {"path": "/readyz", "port": port},
        [port],
    )
    assert expected == actual


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_configs_are_mounted_from_the_generated_config_map(deploy: Any, overlay: str) -> None:
    """Every workload mounts the generated config ConfigMap (hash-suffixed name) at /etc/plowline."""
    manifests = deploy.render(overlay)
    generated = next(
        n for n, m in deploy.by_kind(manifests, "ConfigMap").items() if "config.json" in m["data"]
    )
    mounted = {}
    for name, pod, container in _containers(deploy, overlay):
        volumes = {v["name"]: v for v in pod["volumes"]}
        mount = next(m for m in container["volumeMounts"] if m["mountPath"] == "/etc/plowline")
        mounted[name] = (volumes[mount["name"]]["configMap"]["name"], mount["readOnly"])
    spark_volumes = {v["name"]: v for v in _spark(deploy, overlay)["spec"]["volumes"]}
    mounted["plowline-loader"] = (spark_volumes["config"]["configMap"]["name"], True)
    assert {
        **dict.fromkeys(DEPLOYMENTS, (generated, True)),
        "plowline-loader": (generated, True),
    } == mounted


def test_k8s_render_fails_clearly_without_kubectl(
    deploy: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without kubectl on PATH the deploy tests fail with a message naming kubectl, not skip."""
    monkeypatch.setenv("PATH", "")
    fresh = type(deploy)()
    with pytest.raises(pytest.fail.Exception, match="kubectl is not on PATH"):
        fresh.render("dev")
