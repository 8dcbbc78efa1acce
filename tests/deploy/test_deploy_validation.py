"""Offline validation of what `kubectl kustomize` renders, and of the Dockerfiles.

* Kubernetes objects against the API schemas of the target versions, shipped inside
  `kubernetes-validate` (strict: an unknown field is an error).
* The SparkApplication against deploy/k8s/schema/sparkapplication-v1beta2.schema.json, the
  project's schema of the operator CRD fields it uses (the Kubernetes schemas do not know
  custom resources, and the API server would prune a misspelt field silently); likewise the
  monitoring and scaling custom resources of deploy/k8s/components (PodMonitoring, Rules,
  ServiceMonitor, PrometheusRule, ScaledObject, TriggerAuthentication), each against the
  schema of deploy/k8s/schema naming the CRD version it follows. The components are
  rendered on top of the prod overlay (the one-pod loader, loader-local, on dev's too),
  as a user's overlay listing them would.
* checkov over the rendered manifests and the Dockerfiles: no failed check; every skip is
  an inline annotation or comment that says why. checkov cannot share the workspace's lock
  (it pins older Google and pytest releases), so it runs as a pinned uv tool.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

OVERLAYS = [
    "dev",
    "prod",
    "prod+monitoring-gmp",
    "prod+monitoring-prometheus-operator",
    "prod+keda-scaling",
    "prod+exactly-once",
    "dev+loader-local",
    "prod+loader-local",
]
#: The overlays that run the loader as a SparkApplication (loader-local replaces it).
SPARK_OVERLAYS = [overlay for overlay in OVERLAYS if "loader-local" not in overlay]
#: Custom resources and the project's schema of the CRD fields each uses.
CRD_SCHEMAS = {
    "SparkApplication": "sparkapplication-v1beta2.schema.json",
    "PodMonitoring": "podmonitoring-v1.schema.json",
    "Rules": "rules-v1.schema.json",
    "ServiceMonitor": "servicemonitor-v1.schema.json",
    "PrometheusRule": "prometheusrule-v1.schema.json",
    "ScaledObject": "scaledobject-v1alpha1.schema.json",
    "TriggerAuthentication": "triggerauthentication-v1alpha1.schema.json",
}
#: The oldest Kubernetes the manifests support (GKE.md) and the newest the validator knows.
TARGET_VERSIONS = ["1.33.0", "1.37.0"]
CHECKOV = "checkov==3.3.30"


def _schema(deploy: Any) -> dict[str, Any]:
    path = deploy.repo / "deploy" / "k8s" / "schema" / "sparkapplication-v1beta2.schema.json"
    schema: dict[str, Any] = json.loads(path.read_text())
    return schema


def _spark_errors(deploy: Any, app: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(_schema(deploy))
    return sorted(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(app)
    )


def _k8s_errors(manifest: dict[str, Any], target: str) -> list[str]:
    try:
        kubernetes_validate.validate(manifest, target, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{manifest['kind']}/{manifest['metadata']['name']}: {error.message}"]
    return []


@pytest.mark.parametrize("target", TARGET_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_k8s_objects_are_valid_for_the_target_kubernetes(
    deploy: Any, overlay: str, target: str
) -> None:
    """Every rendered core object validates strictly against the target version's schemas."""
    errors = [
        error
        for manifest in deploy.render(overlay)
        if manifest["kind"] not in CRD_SCHEMAS
        for error in _k8s_errors(manifest, target)
    ]
    expected: list[str] = []
    assert expected == errors


def test_k8s_validation_rejects_a_misspelt_field(deploy: Any) -> None:
    """The Kubernetes validation is strict: a Deployment with `replica` fails."""
    deployment = copy.deepcopy(
        deploy.by_kind(deploy.render("prod"), "Deployment")["plowline-mutator"]
    )
    deployment["spec"]["replica"] = 1
    expected = 1
    assert expected == len(_k8s_errors(deployment, TARGET_VERSIONS[0]))


def test_spark_schema_is_a_valid_json_schema_naming_the_operator_version(deploy: Any) -> None:
    """The project's SparkApplication schema is a valid draft 2020-12 schema for operator 2.1.1."""
    schema = _schema(deploy)
    jsonschema.Draft202012Validator.check_schema(schema)
    expected = ("2.1.1", True)
    assert expected == (schema["x-operator-version"], "2.1.1" in schema["description"])


@pytest.mark.parametrize("overlay", SPARK_OVERLAYS)
def test_spark_application_matches_the_operator_schema(deploy: Any, overlay: str) -> None:
    """The rendered SparkApplication validates against the project's v1beta2 schema."""
    app = deploy.by_kind(deploy.render(overlay), "SparkApplication")["plowline-loader"]
    expected: list[str] = []
    assert expected == _spark_errors(deploy, app)


def _set(app: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split("/")
    node: Any = app
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[leaf] = value


def _delete(app: dict[str, Any], path: str) -> None:
    *parents, leaf = path.split("/")
    node = app
    for key in parents:
        node = node[key]
    del node[leaf]


@pytest.mark.parametrize(
    ("change", "path", "value"),
    [
        pytest.param("set", "spec/executor/instance", 2, id="misspelt-executor-field"),
        pytest.param("set", "spec/restartPolicy/retries", 3, id="misspelt-restart-field"),
        pytest.param("set", "spec/instances", 2, id="executor-field-misplaced-in-spec"),
        pytest.param(
            "set", "spec/driver/livenessProbe", {}, id="container-field-misplaced-in-driver"
        ),
        pytest.param("set", "spec/restartPolicy/type", "OnFailur", id="restart-type-not-in-enum"),
        pytest.param("set", "spec/mode", "local", id="mode-not-in-enum"),
        pytest.param("set", "spec/driver/cores", "1", id="cores-a-string"),
        pytest.param("set", "spec/executor/instances", 0, id="instances-below-minimum"),
        pytest.param(
            "set", "spec/sparkConf/spark.authenticate", True, id="spark-conf-not-a-string"
        ),
        pytest.param("delete", "spec/mainApplicationFile", None, id="required-field-missing"),
    ],
)
def test_spark_schema_rejects_a_wrong_field(
    deploy: Any, change: str, path: str, value: Any
) -> None:
    """A misspelt, misplaced, mistyped, out-of-enum or missing field fails validation."""
    app = copy.deepcopy(
        deploy.by_kind(deploy.render("prod"), "SparkApplication")["plowline-loader"]
    )
    if change == "set":
        _set(app, path, value)
    else:
        _delete(app, path)
    expected = 1
    assert expected == len(_spark_errors(deploy, app))


@pytest.fixture(scope="session")
def checkov_reports(deploy: Any, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """checkov's JSON reports over the rendered overlays and deploy/docker (one run)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is not on PATH: checkov runs as a pinned tool (`uv tool run`)")
    # One directory (checkov prints one JSON document per --directory otherwise).
    scanned = tmp_path_factory.mktemp("checkov")
    for overlay in OVERLAYS:
        text = "---\n".join(json.dumps(m) + "\n" for m in deploy.render(overlay))
        (scanned / f"{overlay}.yaml").write_text(text)
    for dockerfile in Path(deploy.docker).glob("*.Dockerfile"):
        shutil.copy(dockerfile, scanned / dockerfile.name)
    command = [
        uv, "tool", "run", "--from", CHECKOV, "checkov", "--directory", str(scanned),
        "--framework", "kubernetes", "dockerfile", "--output", "json", "--skip-download",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if not result.stdout.strip():
        pytest.fail(
            f"checkov printed no report (exit {result.returncode}):\n{result.stderr[-2000:]}"
        )
    data = json.loads(result.stdout)
    return data if isinstance(data, list) else [data]


def test_checkov_finds_no_failed_check(checkov_reports: list[dict[str, Any]]) -> None:
    """checkov passes the rendered manifests and every Dockerfile with no failed check."""
    failed = [
        f"{report['check_type']}: {c['check_id']} {c['resource']} ({c['check_name']})"
        for report in checkov_reports
        for c in report.get("results", {}).get("failed_checks", [])
    ]
    kinds = sorted(report["check_type"] for report in checkov_reports)
    expected: tuple[list[str], list[str]] = (["dockerfile", "kubernetes"], [])
    assert expected == (kinds, failed)


def test_checkov_skips_each_say_why(checkov_reports: list[dict[str, Any]]) -> None:
    """Every skipped checkov check carries its reason (inline annotation or comment)."""
    skipped = [
        (c["check_id"], bool((c.get("check_result") or {}).get("suppress_comment", "").strip()))
        for report in checkov_reports
        for c in report.get("results", {}).get("skipped_checks", [])
    ]
    expected = [(check, True) for check, _reason in skipped]
    assert (expected, True) == (skipped, len(skipped) > 0)


def test_checkov_scans_the_files_it_is_given(deploy: Any) -> None:
    """The Dockerfiles checkov scans are the ones the images build from."""
    expected = sorted(f"{name}.Dockerfile" for name in deploy.packages)
    assert expected == sorted(p.name for p in Path(deploy.docker).glob("*.Dockerfile"))


def _crd_errors(deploy: Any, manifest: dict[str, Any]) -> list[str]:
    path = deploy.repo / "deploy" / "k8s" / "schema" / CRD_SCHEMAS[manifest["kind"]]
    validator = jsonschema.Draft202012Validator(json.loads(path.read_text()))
    return sorted(
        f"{manifest['kind']}/{manifest['metadata']['name']} "
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validator.iter_errors(manifest)
    )


@pytest.mark.parametrize("kind", sorted(CRD_SCHEMAS))
def test_crd_schema_is_valid_and_names_the_crd_version(deploy: Any, kind: str) -> None:
    """Each custom-resource schema is a valid draft 2020-12 schema naming the CRD version followed."""
    path = deploy.repo / "deploy" / "k8s" / "schema" / CRD_SCHEMAS[kind]
    schema = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    version = str(schema.get("x-crd-version") or schema.get("x-operator-version")).split()[-1]
    expected = (kind, True)
    assert expected == (schema["properties"]["kind"]["const"], version in schema["description"])


@pytest.mark.parametrize("overlay", OVERLAYS[2:])
def test_component_custom_resources_match_their_schemas(deploy: Any, overlay: str) -> None:
    """Every monitoring and scaling resource a component adds validates against its schema."""
    errors = [
        error
        for manifest in deploy.render(overlay)
        if manifest["kind"] in CRD_SCHEMAS and manifest["kind"] != "SparkApplication"
        for error in _crd_errors(deploy, manifest)
    ]
    expected: list[str] = []
    assert expected == errors


def _first(deploy: Any, overlay: str, kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(m for m in deploy.render(overlay) if m["kind"] == kind))


@pytest.mark.parametrize(
    ("overlay", "kind", "path", "value"),
    [
        pytest.param(
            "prod+monitoring-gmp", "PodMonitoring", "spec/endpoints/0/intreval", "30s",
            id="podmonitoring-misspelt-field",
        ),
        pytest.param(
            "prod+monitoring-gmp", "Rules", "spec/groups/0/rules/0/for", "15 minutes",
            id="rules-duration-not-prometheus-syntax",
        ),
        pytest.param(
            "prod+monitoring-prometheus-operator", "ServiceMonitor", "spec/endpoints/0/port", 8080,
            id="servicemonitor-port-not-a-name",
        ),
        pytest.param(
            "prod+monitoring-prometheus-operator", "PrometheusRule", "spec/groups/0/rules/0/exp",
            "up", id="prometheusrule-misspelt-expr",
        ),
        pytest.param(
            "prod+keda-scaling", "ScaledObject", "spec/triggers/0/metadata/subscriptionSize", "5",
            id="scaledobject-pubsub-unknown-metadata",
        ),
        pytest.param(
            "prod+keda-scaling", "ScaledObject", "spec/minReplicas", 1,
            id="scaledobject-hpa-field-name",
        ),
        pytest.param(
            "prod+keda-scaling", "TriggerAuthentication", "spec/podIdentity/provider", "gke",
            id="triggerauthentication-provider-not-in-enum",
        ),
    ],
)  # fmt: skip
def test_crd_schemas_reject_a_wrong_field(
    deploy: Any, overlay: str, kind: str, path: str, value: Any
) -> None:
    """A misspelt, mistyped or out-of-enum field of a component resource fails validation."""
    manifest = _first(deploy, overlay, kind)
    _set(manifest, path, value)
    expected = 1
    assert expected == len(_crd_errors(deploy, manifest))
