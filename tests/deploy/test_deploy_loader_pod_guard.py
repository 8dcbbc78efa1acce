"""The loader's driver cannot become another plowline identity through the pods it creates.

Its Role may create pods in the namespace every service shares (Spark starts its executors
so), and RBAC cannot look inside a pod; the rendered ValidatingAdmissionPolicy does. Its
CEL is evaluated here (cel-python) against the pods Spark makes and the pods an attacker
holding the driver's token would make.
"""

from __future__ import annotations

from typing import Any

import celpy
import pytest

OVERLAYS = ["dev", "prod"]
GUARD = "plowline-loader-driver-pods"


def _guard(deploy: Any, overlay: str) -> dict[str, Any]:
    manifests = deploy.render(overlay)
    policy: dict[str, Any] = deploy.by_kind(manifests, "ValidatingAdmissionPolicy")[GUARD]
    binding = deploy.by_kind(manifests, "ValidatingAdmissionPolicyBinding")[GUARD]
    assert (binding["spec"]["policyName"], binding["spec"]["validationActions"]) == (
        GUARD,
        ["Deny"],
    )
    return policy


def _evaluate(expression: str, activation: dict[str, Any]) -> bool:
    env = celpy.Environment()
    program = env.program(env.compile(expression))
    return bool(program.evaluate(celpy.json_to_cel(activation)))


def _admitted(policy: dict[str, Any], username: str, namespace: str, pod: dict[str, Any]) -> bool:
    """Whether the policy lets ``username`` create ``pod`` in ``namespace``."""
    activation = {
        "request": {"userInfo": {"username": username}, "namespace": namespace},
        "object": pod,
    }
    spec = policy["spec"]
    if not all(_evaluate(c["expression"], activation) for c in spec["matchConditions"]):
        return True  # not the driver: the policy does not apply
    return all(_evaluate(v["expression"], activation) for v in spec["validations"])


def _executor(deploy: Any, overlay: str) -> dict[str, Any]:
    """The executor pod as Spark and the operator build it from the rendered application."""
    app = deploy.by_kind(deploy.render(overlay), "SparkApplication")["plowline-loader"]
    executor = app["spec"]["executor"]
    volumes = [*app["spec"].get("volumes", [])]
    volumes += [
        {"name": "spark-local-dir-1", "emptyDir": {}},
        {"name": "spark-conf-volume-exec", "configMap": {"name": "spark-exec-conf-map"}},
    ]
    env = [
        {"name": "SPARK_AUTHENTICATE_SECRET", "value": "generated-per-application"},
        {"name": "SPARK_EXECUTOR_POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    container = {
        "name": "spark-kubernetes-executor",
        "env": env,
        "securityContext": executor["securityContext"],
        "volumeMounts": executor["volumeMounts"],
    }
    return {
        "spec": {
            "serviceAccountName": executor["serviceAccount"],
            "automountServiceAccountToken": False,
            "securityContext": executor["podSecurityContext"],
            "containers": [container],
            "volumes": volumes,
        }
    }


def _namespace(deploy: Any, overlay: str) -> str:
    binding = deploy.by_kind(deploy.render(overlay), "RoleBinding")["plowline-loader-spark-driver"]
    namespace: str = binding["metadata"]["namespace"]
    return namespace


def _driver(deploy: Any, overlay: str) -> str:
    return f"system:serviceaccount:{_namespace(deploy, overlay)}:plowline-loader"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_spark_executors_are_admitted(deploy: Any, overlay: str) -> None:
    """The executor pods Spark starts pass the guard."""
    policy = _guard(deploy, overlay)
    pod = _executor(deploy, overlay)
    assert _admitted(policy, _driver(deploy, overlay), _namespace(deploy, overlay), pod)


def _hostile(pod: dict[str, Any], change: str) -> dict[str, Any]:
    spec = dict(pod["spec"])
    container = dict(spec["containers"][0])
    if change == "mutator-account":
        spec["serviceAccountName"] = "plowline-mutator"
    elif change == "no-account":
        del spec["serviceAccountName"]
    elif change == "token-secret-volume":
        spec["volumes"] = [
            *spec["volumes"],
            {"name": "t", "secret": {"secretName": "plowline-mutator-token"}},
        ]
    elif change == "projected-token":
        token = {"serviceAccountToken": {"path": "token"}}
        spec["volumes"] = [*spec["volumes"], {"name": "t", "projected": {"sources": [token]}}]
    elif change == "host-path":
        spec["volumes"] = [
            *spec["volumes"],
            {"name": "h", "hostPath": {"path": "/var/lib/kubelet"}},
        ]
    elif change == "env-secret":
        ref = {"secretKeyRef": {"name": "plowline-mutator-token", "key": "token"}}
        container["env"] = [*container["env"], {"name": "T", "valueFrom": ref}]
    elif change == "env-from-secret":
        container["envFrom"] = [{"secretRef": {"name": "plowline-mutator-token"}}]
    elif change == "init-container-secret":
        ref = {"secretKeyRef": {"name": "plowline-mutator-token", "key": "token"}}
        spec["initContainers"] = [{"name": "i", "env": [{"name": "T", "valueFrom": ref}]}]
    elif change == "privileged":
        container["securityContext"] = {**container["securityContext"], "privileged": True}
    elif change == "host-network":
        spec["hostNetwork"] = True
    spec["containers"] = [container]
    return {"spec": spec}


@pytest.mark.parametrize("overlay", OVERLAYS)
@pytest.mark.parametrize(
    "change",
    [
        pytest.param("mutator-account", id="as-the-mutator"),
        pytest.param("no-account", id="as-the-default-account"),
        pytest.param("token-secret-volume", id="mounting-the-token-secret"),
        pytest.param("projected-token", id="projecting-a-token"),
        pytest.param("host-path", id="mounting-a-host-path"),
        pytest.param("env-secret", id="secret-in-env"),
        pytest.param("env-from-secret", id="secret-as-env-from"),
        pytest.param("init-container-secret", id="secret-in-an-init-container"),
        pytest.param("privileged", id="privileged"),
        pytest.param("host-network", id="host-network"),
    ],
)
def test_the_driver_cannot_start_another_identity(deploy: Any, overlay: str, change: str) -> None:
    """A pod the driver's account creates as another account, or reading a Secret, is denied."""
    policy = _guard(deploy, overlay)
    pod = _hostile(_executor(deploy, overlay), change)
    assert not _admitted(policy, _driver(deploy, overlay), _namespace(deploy, overlay), pod)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_other_accounts_pods_are_not_judged(deploy: Any, overlay: str) -> None:
    """The mutator's own pods (made by its Deployment's controller) are outside the guard."""
    policy = _guard(deploy, overlay)
    pod = _hostile(_executor(deploy, overlay), "token-secret-volume")
    controller = "system:serviceaccount:kube-system:replicaset-controller"
    assert _admitted(policy, controller, _namespace(deploy, overlay), pod)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_account_that_may_create_pods_is_guarded(deploy: Any, overlay: str) -> None:
    """Each account bound to a Role that creates pods, in a namespace it shares with other
    services' accounts, is one the guard judges (its pods are held to the executor's)."""
    manifests = deploy.render(overlay)
    policy = _guard(deploy, overlay)
    creators = {
        name
        for name, role in deploy.by_kind(manifests, "Role").items()
        if any("pods" in r["resources"] and "create" in r["verbs"] for r in role["rules"])
    }
    hostile = _hostile(_executor(deploy, overlay), "mutator-account")
    judged = {}
    for binding in deploy.by_kind(manifests, "RoleBinding").values():
        if binding["roleRef"]["name"] not in creators:
            continue
        namespace = binding["metadata"]["namespace"]
        for subject in binding["subjects"]:
            user = f"system:serviceaccount:{namespace}:{subject['name']}"
            judged[subject["name"]] = not _admitted(policy, user, namespace, hostile)
    others = set(deploy.by_kind(manifests, "ServiceAccount")) - set(judged)
    expected = {"plowline-loader": True}
    assert (expected, True) == (judged, {"plowline-mutator", "plowline-repeater"} <= others)
