"""Offline validation of what `kubectl kustomize` renders, and of the Dockerfiles.

* Kubernetes objects against the API schemas of the target versions, shipped inside
  `kubernetes-validate` (strict: an unknown field is an error).
* The SparkApplication against deploy/k8s/schema/sparkapplication-v1beta2.schema.json, the
  project's schema of the operator CRD fields it uses (the Kubernetes schemas do not know
  custom resources, and the API server would prune a misspelt field silently).
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

OVERLAYS = ["dev", "prod"]
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
        if manifest["kind"] != "SparkApplication"
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


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_spark_application_matches_the_operator_schema(deploy: Any, overlay: str) -> None:
    """The rendered SparkApplication validates against the project's v1beta2 schema."""
    app = deploy.by_kind(deploy.render(overlay), "SparkApplication")["plowline-loader"]
    expected: list[str] = []
    assert expected == _spark_errors(deploy, app)


def _set(app: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split("/")
    node = app
    for key in parents:
        node = node[key]
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
