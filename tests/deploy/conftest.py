"""Shared helpers of the deployment tests: rendered overlays, Dockerfiles, console scripts.

Notes:
    Rendering shells out to ``kubectl kustomize`` once per overlay per session; a missing
    kubectl fails the tests (never skips them), because unrendered manifests are untested.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DOCKER = DEPLOY / "docker"
OVERLAYS = ("dev", "prod")
COMPONENTS = DEPLOY / "k8s" / "components"
#: Overlays with optional components (deploy/k8s/components) added: ``overlay+component…``.
VARIANTS = (
    "prod+monitoring-gmp",
    "prod+monitoring-prometheus-operator",
    "prod+keda-scaling",
    "prod+exactly-once",
    "dev+loader-local",
    "prod+loader-local",
)

#: package name of each image built from deploy/docker/<name>.Dockerfile
PACKAGES = {
    "loader": "plowline-loader",
    "mutator": "plowline-mutator",
    "repeater": "plowline-repeater",
    "deadletter": "plowline-deadletter",
    "devstack": "plowline-devstack",
}
PROJECT_DIRS = {
    "plowline-loader": REPO / "services" / "loader",
    "plowline-mutator": REPO / "services" / "mutator",
    "plowline-repeater": REPO / "services" / "repeater",
    "plowline-deadletter": REPO / "services" / "deadletter",
    "plowline-devstack": REPO / "libs" / "devstack",
}

Manifest = dict[str, Any]


def render_overlay(overlay: str) -> list[Manifest]:
    """Return the manifests ``kubectl kustomize deploy/k8s/overlays/<overlay>`` prints.

    ``overlay+component+…`` renders the overlay with those components added, as a user's
    kustomization listing them would (kustomize refuses absolute paths, hence relative ones):
    the overlay's ``images`` apply to what the components add, as they do when the overlay
    lists the components itself.
    """
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail(
            "kubectl is not on PATH: the deploy tests render overlays with `kubectl kustomize` "
            "(kubectl 1.27 or newer, kustomize v5; install it as the README's Prerequisites say)"
        )
    name, *components = overlay.split("+")
    with tempfile.TemporaryDirectory() as scratch:
        target = DEPLOY / "k8s" / "overlays" / name
        if components:
            target = Path(scratch)
            overlay_file = DEPLOY / "k8s" / "overlays" / name / "kustomization.yaml"
            overlay_kustomization = yaml.safe_load(overlay_file.read_text())
            kustomization = {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "namespace": overlay_kustomization["namespace"],
                "resources": [os.path.relpath(DEPLOY / "k8s" / "overlays" / name, scratch)],
                "components": [os.path.relpath(COMPONENTS / c, scratch) for c in components],
                "images": overlay_kustomization.get("images", []),
            }
            (target / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        result = subprocess.run(
            [kubectl, "kustomize", str(target)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    if result.returncode != 0:
        pytest.fail(f"kubectl kustomize {overlay} failed:\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def by_kind(manifests: list[Manifest], kind: str) -> dict[str, Manifest]:
    """Return the manifests of one kind by name."""
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def console_script(package: str) -> str:
    """Return the one console script ``[project.scripts]`` of a workspace package declares."""
    data = tomllib.loads((PROJECT_DIRS[package] / "pyproject.toml").read_text())
    scripts: dict[str, str] = data["project"]["scripts"]
    assert len(scripts) == 1, f"{package} declares {sorted(scripts)}"
    return next(iter(scripts))


@dataclass
class Stage:
    """One ``FROM`` stage of a Dockerfile: its base, its name and its instructions."""

    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        """Return the arguments of every instruction named ``keyword``."""
        return [args for kw, args in self.instructions if kw == keyword]


def _logical_lines(text: str) -> Iterator[str]:
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def parse_dockerfile(path: Path) -> list[Stage]:
    """Split a Dockerfile into stages of ``(INSTRUCTION, arguments)`` pairs."""
    stages: list[Stage] = []
    for line in _logical_lines(path.read_text()):
        keyword, _, args = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        elif stages:
            stages[-1].instructions.append((keyword, args.strip()))
    return stages


def load_compose() -> dict[str, Any]:
    """Return docker-compose.yml parsed (anchors and merge keys resolved)."""
    data: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return data


def health_port(package: str) -> int:
    """Return the default health/API port of a service, read from its settings."""
    if package == "plowline-loader":
        from plowline_loader.settings import LoaderSettings

        return int(LoaderSettings.model_fields["port"].default)
    if package == "plowline-mutator":
        from plowline_mutator.settings import MutatorSettings

        return int(MutatorSettings.model_fields["port"].default)
    if package == "plowline-repeater":
        from plowline_repeater.settings import RepeaterSettings

        return int(RepeaterSettings.model_fields["port"].default)
    from plowline_deadletter.settings import DeadLetterSettings

    return int(DeadLetterSettings.model_fields["port"].default)


def check_service_args(package: str, args: list[str]) -> None:
    """Fail unless the service's own command-line parser accepts ``args``."""
    if package == "plowline-loader":
        from plowline_loader.cli import build_parser
    elif package == "plowline-mutator":
        from plowline_mutator.cli import build_parser
    elif package == "plowline-repeater":
        from plowline_repeater.cli import build_parser
    else:
        from plowline_deadletter.cli import build_parser
    try:
        build_parser().parse_args(args)
    except SystemExit:
        pytest.fail(f"{package} rejects the arguments {args}")


def flag(args: list[str], name: str) -> str | None:
    """Return the value of ``--name=value`` or ``--name value`` in ``args``."""
    for index, arg in enumerate(args):
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
        if arg == name and index + 1 < len(args):
            return args[index + 1]
    return None


class DeployKit:
    """The helpers of this module, handed to tests as the ``deploy`` fixture.

    Test directories are not packages (importlib mode), so tests cannot import conftest.
    """

    repo = REPO
    docker = DOCKER
    packages = PACKAGES
    loader_health_port = health_port("plowline-loader")

    def __init__(self) -> None:
        self._rendered: dict[str, list[Manifest]] = {}

    def render(self, overlay: str) -> list[Manifest]:
        """Return the rendered manifests of an overlay (rendered once per session)."""
        if overlay not in self._rendered:
            self._rendered[overlay] = render_overlay(overlay)
        return self._rendered[overlay]

    by_kind = staticmethod(by_kind)
    console_script = staticmethod(console_script)
    parse_dockerfile = staticmethod(parse_dockerfile)
    load_compose = staticmethod(load_compose)
    health_port = staticmethod(health_port)
    check_service_args = staticmethod(check_service_args)
    flag = staticmethod(flag)

    def stages(self, name: str) -> list[Stage]:
        """Return the stages of deploy/docker/<name>.Dockerfile."""
        return parse_dockerfile(DOCKER / f"{name}.Dockerfile")


@pytest.fixture(scope="session")
def deploy() -> DeployKit:
    """Return the deployment-test helpers (with a per-session render cache)."""
    return DeployKit()
