"""The Dockerfiles under deploy/docker: multi-stage uv builds, pinned bases, non-root, entrypoints."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest

NAMES = ["deadletter", "devstack", "loader", "mutator", "repeater"]
SERVICES = ["loader", "mutator", "repeater", "deadletter"]
_PINNED_PYTHON = re.compile(r"^python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?$")
_PINNED_UV = re.compile(r"^ghcr\.io/astral-sh/uv:\d+\.\d+\.\d+(@sha256:[0-9a-f]{64})?$")
_SECRET_NAME = re.compile(r"(TOKEN|PASSWORD|SECRET|CREDENTIALS|_KEY)\b", re.IGNORECASE)


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_is_multi_stage_with_uv_from_its_official_image(deploy: Any, name: str) -> None:
    """Each image copies uv from one pinned ghcr.io/astral-sh/uv stage into a builder stage."""
    stages = deploy.stages(name)
    uv_stages = [s.name for s in stages if _PINNED_UV.match(s.base)]
    copies = [
        a for s in stages for a in s.all("COPY") if uv_stages and f"--from={uv_stages[0]}" in a
    ]
    expected = (True, 1, 1)
    assert expected == (len(stages) >= 3, len(uv_stages), len(copies))


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_builds_the_workspace_where_a_c_compiler_is_installed(
    deploy: Any, name: str
) -> None:
    """The stage that builds the workspace (plowline-core has a C extension) installs gcc first."""
    installs_gcc = [
        any("apt-get install" in args and " gcc" in args for args in s.all("RUN"))
        for s in deploy.stages(name)
        if any("uv sync" in args and "--no-install-workspace" not in args for args in s.all("RUN"))
    ]
    expected = [True]
    assert expected == installs_gcc


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_bases_are_pinned_by_exact_version(deploy: Any, name: str) -> None:
    """Every external FROM is an exact version tag (python 3.11.N slim-bookworm or uv X.Y.Z)."""
    stages = deploy.stages(name)
    local = {s.name for s in stages}
    external = [s.base for s in stages if s.base not in local]
    unpinned = [b for b in external if not (_PINNED_PYTHON.match(b) or _PINNED_UV.match(b))]
    expected: list[str] = []
    assert expected == unpinned


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_syncs_dependencies_then_project_with_frozen_lock(
    deploy: Any, name: str
) -> None:
    """Two `uv sync --frozen --no-dev --package X`: dependencies only first, then the workspace."""
    package = deploy.packages[name]
    syncs = [
        shlex.split(args) for s in deploy.stages(name) for args in s.all("RUN") if "uv sync" in args
    ]
    shape = [
        (
            "--frozen" in words,
            "--no-dev" in words,
            words[words.index("--package") + 1] if "--package" in words else None,
            "--no-install-workspace" in words,
        )
        for words in syncs
    ]
    expected = [(True, True, package, True), (True, True, package, False)]
    assert expected == shape


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_copies_sources_only_after_the_dependency_layer(deploy: Any, name: str) -> None:
    """The source trees are copied after the dependency sync, so source edits keep it cached."""
    builder = next(s for s in deploy.stages(name) if any("uv sync" in a for a in s.all("RUN")))
    steps = [
        "deps" if "--no-install-workspace" in args else ("sync" if kw == "RUN" else "src")
        for kw, args in builder.instructions
        if (kw == "RUN" and "uv sync" in args)
        or (kw == "COPY" and args.split()[0] in ("libs", "services"))
    ]
    expected = ["deps", "src", "src", "sync"]
    assert expected == steps


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_copies_only_paths_that_exist(deploy: Any, name: str) -> None:
    """Every COPY source taken from the build context names a path of the repository."""
    missing = []
    for stage in deploy.stages(name):
        for args in stage.all("COPY"):
            words = shlex.split(args)
            if any(w.startswith("--from=") for w in words):
                continue
            sources = [w for w in words if not w.startswith("--")][:-1]
            missing += [src for src in sources if not (deploy.repo / src).exists()]
    expected: list[str] = []
    assert expected == missing


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_runnable_stages_run_as_uid_10001(deploy: Any, name: str) -> None:
    """Every stage with an ENTRYPOINT runs as user 10001, set in it or in the stage it builds on."""
    stages = {s.name: s for s in deploy.stages(name)}

    def user(stage: Any) -> str | None:
        users = stage.all("USER")
        if users:
            return str(users[-1]).split(":")[0]
        return user(stages[stage.base]) if stage.base in stages else None

    runnable = [s for s in stages.values() if s.all("ENTRYPOINT")]
    assert ["10001"] * len(runnable) == [user(s) for s in runnable]


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_entrypoint_is_the_console_script(deploy: Any, name: str) -> None:
    """The default (last) stage's ENTRYPOINT is the package's [project.scripts] console script."""
    expected = [f'["{deploy.console_script(deploy.packages[name])}"]']
    assert expected == deploy.stages(name)[-1].all("ENTRYPOINT")


@pytest.mark.parametrize("name", SERVICES)
def test_dockerfile_healthcheck_asks_healthz_on_the_service_port(deploy: Any, name: str) -> None:
    """The HEALTHCHECK of a service image GETs /healthz on the port the service serves."""
    port = deploy.health_port(deploy.packages[name])
    checks = deploy.stages(name)[-1].all("HEALTHCHECK")
    expected = [True]
    assert expected == [f"127.0.0.1:{port}/healthz" in check for check in checks]


@pytest.mark.parametrize("name", NAMES)
def test_dockerfile_bakes_no_secrets(deploy: Any, name: str) -> None:
    """No ENV or ARG carries a token, password, secret or key."""
    found = [
        args
        for stage in deploy.stages(name)
        for kw, args in stage.instructions
        if kw in ("ENV", "ARG") and _SECRET_NAME.search(args)
    ]
    expected: list[str] = []
    assert expected == found


def test_loader_image_has_java_17_and_java_home(deploy: Any) -> None:
    """The loader's runtime installs Debian's openjdk-17-jre-headless and sets JAVA_HOME."""
    base = next(s for s in deploy.stages("loader") if s.name == "base")
    runs, envs = " ".join(base.all("RUN")), " ".join(base.all("ENV"))
    expected = (True, True)
    assert expected == (
        "openjdk-17-jre-headless" in runs,
        "JAVA_HOME=/usr/lib/jvm/java-17 " in envs,
    )


def test_loader_image_ships_no_zipped_pyspark(deploy: Any) -> None:
    """The builder removes pyspark's zipped copies of pyspark and py4j from the venv, so the
    Python processes Spark starts import the installed, compiled packages."""
    runs = [args for s in deploy.stages("loader") for args in s.all("RUN")]
    removed = [
        path.rsplit("/", 1)[-1]
        for args in runs
        if args.startswith("rm ")
        for path in shlex.split(args)[1:]
        if "/site-packages/pyspark/python/lib/" in path
    ]
    expected = ["pyspark.zip", "py4j-*-src.zip"]
    assert expected == removed


def test_loader_spark_target_answers_spark_driver_and_executor(deploy: Any) -> None:
    """The `spark` target's entrypoint handles Spark's driver and executor, else runs the CLI."""
    spark = next(s for s in deploy.stages("loader") if s.name == "spark")
    script = (deploy.docker / "loader" / "spark-entrypoint.sh").read_text()
    handled = [case in script for case in ("  driver)", "  executor)", "exec plowline-loader ")]
    expected = (['["/opt/plowline/spark-entrypoint.sh"]'], [True, True, True])
    assert expected == (spark.all("ENTRYPOINT"), handled)


def test_dockerignore_keeps_local_state_out_of_the_context(deploy: Any) -> None:
    """The root .dockerignore leaves out the venv, git, caches and env files."""
    patterns = set((deploy.repo / ".dockerignore").read_text().split())
    assert {"**/.venv", "**/.git", "**/__pycache__", "**/.env"} <= patterns
