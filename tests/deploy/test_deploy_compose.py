"""docker-compose.yml: the emulators, provisioning order, and the four services built from deploy/docker."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

SERVICES = {
    "loader": "plowline-loader",
    "mutator": "plowline-mutator",
    "repeater": "plowline-repeater",
    "deadletter": "plowline-deadletter",
}
STAND_INS = ["pubsub", "bigquery", "storage", "provision"]
SERVERS = ["pubsub", "bigquery", "storage"]


def _service(deploy: Any, name: str) -> dict[str, Any]:
    service: dict[str, Any] = deploy.load_compose()["services"][name]
    return service


def test_compose_defines_the_stack(deploy: Any) -> None:
    """The file has the emulators, provisioning, the four services, Prometheus and Grafana."""
    expected = {"pubsub", "bigquery", "storage", "provision", *SERVICES, "prometheus", "grafana"}
    assert expected == set(deploy.load_compose()["services"])


@pytest.mark.parametrize("name", STAND_INS)
def test_compose_stand_ins_use_the_devstack_image(deploy: Any, name: str) -> None:
    """BigQuery, Cloud Storage and provisioning run the devstack image built from its Dockerfile."""
    build = _service(deploy, name)["build"]
    exists = (deploy.repo / build["context"] / build["dockerfile"]).is_file()
    expected = ("deploy/docker/devstack.Dockerfile", True)
    assert expected == (build["dockerfile"], exists)


def _container_ports(service: dict[str, Any]) -> list[int]:
    """The container side of each ``127.0.0.1:HOST:CONTAINER`` mapping, in order."""
    return [int(mapping.rsplit(":", 1)[1]) for mapping in service["ports"]]


@pytest.mark.parametrize("name", SERVERS)
def test_compose_stand_ins_run_what_plowline_dev_runs(deploy: Any, name: str) -> None:
    """Each stand-in's entrypoint and command are the command line `plowline dev up` starts."""
    from plowline_devstack.stack.servers import command

    service = _service(deploy, name)
    ports = dict(zip(("port", "grpc_port"), _container_ports(service), strict=False))
    wanted = command(name, "0.0.0.0", ports, "plowline-local", None)
    expected = ["python", *wanted[1:]]
    assert expected == service["entrypoint"] + service["command"]


@pytest.mark.parametrize("name", SERVERS)
def test_compose_stand_in_health_check_asks_its_own_port(deploy: Any, name: str) -> None:
    """A stand-in's health check connects to the first port it serves, on loopback."""
    service = _service(deploy, name)
    check = " ".join(service["healthcheck"]["test"])
    expected = [_container_ports(service)[0]]
    assert expected == [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", check)]


@pytest.mark.parametrize("name", ["pubsub", "bigquery", "storage", *sorted(SERVICES)])
def test_compose_long_running_services_restart_on_failure(deploy: Any, name: str) -> None:
    """Every server and service restarts when it fails (provisioning runs once)."""
    expected = ("on-failure", "no")
    assert expected == (_service(deploy, name)["restart"], _service(deploy, "provision")["restart"])


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_compose_named_volumes_are_writable_by_the_image_user(deploy: Any, name: str) -> None:
    """Each named volume mounts where the image made a directory owned by the uid it runs as."""
    service = _service(deploy, name)
    final = deploy.stages(name)[-1]
    base = next((s for s in deploy.stages(name) if s.name == final.base), final)
    runs = " ".join(base.all("RUN") + final.all("RUN"))
    user = (final.all("USER") or base.all("USER"))[-1].split(":")[0]
    targets = [v["target"] for v in service.get("volumes", []) if v["type"] == "volume"]
    owned = [
        bool(re.search(rf"install --directory --owner {user} \S.*{re.escape(t)}(\s|$)", runs))
        for t in targets
    ]
    expected = [True] * len(targets)
    assert expected == owned


def test_compose_loader_checkpoint_is_on_its_volume(deploy: Any) -> None:
    """The loader's --checkpoint lies inside its named volume, which compose declares."""
    loader = _service(deploy, "loader")
    checkpoint = (deploy.flag(loader["command"], "--checkpoint") or "").removeprefix("file://")
    volume = next(v for v in loader["volumes"] if v["type"] == "volume")
    expected = (True, True)
    assert expected == (
        checkpoint.startswith(volume["target"] + "/"),
        volume["source"] in deploy.load_compose()["volumes"],
    )


def test_readme_feeds_the_compose_stack_with_plowline_dev_generate(deploy: Any) -> None:
    """The README's compose section publishes with `plowline dev generate` to compose's Pub/Sub port."""
    from plowline_devstack.cli import build_parser, load_commands

    readme = (deploy.repo / "README.md").read_text()
    section = readme[readme.index("docker compose up") :]
    line = next(
        line.strip()
        for line in section.splitlines()
        if "plowline dev generate" in line and "--pubsub" in line
    )
    words = line.split("#")[0].split()
    args = build_parser(load_commands()).parse_args(words[words.index("plowline") + 1 :])
    published = _container_ports(_service(deploy, "pubsub"))[0]
    expected = ("topic", f"127.0.0.1:{published}")
    assert expected == (args.to, args.pubsub)


def test_compose_provisioning_waits_for_healthy_emulators(deploy: Any) -> None:
    """Provisioning starts once Pub/Sub, BigQuery and Cloud Storage report healthy."""
    depends = _service(deploy, "provision")["depends_on"]
    expected = dict.fromkeys(["pubsub", "bigquery", "storage"], "service_healthy")
    assert expected == {name: d["condition"] for name, d in depends.items()}


def test_compose_provisioning_script_and_file_exist(deploy: Any) -> None:
    """The provisioning entry point and file it names are in deploy/compose, mounted read-only."""
    provision = _service(deploy, "provision")
    mount = provision["volumes"][0]
    script = provision["entrypoint"][-1].replace(mount["target"], mount["source"])
    config = deploy.flag(provision["command"], "--config").replace(mount["target"], mount["source"])
    actual = (
        (deploy.repo / script).is_file(),
        (deploy.repo / config).is_file(),
        mount["read_only"],
    )
    expected = (True, True, True)
    assert expected == actual


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_compose_service_is_built_from_its_dockerfile(deploy: Any, name: str) -> None:
    """Each service builds deploy/docker/<name>.Dockerfile, which exists."""
    build = _service(deploy, name)["build"]
    exists = (deploy.repo / build["context"] / build["dockerfile"]).is_file()
    assert (f"deploy/docker/{name}.Dockerfile", True) == (build["dockerfile"], exists)


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_compose_service_command_is_accepted_by_its_cli(deploy: Any, name: str) -> None:
    """The command (arguments to the console-script ENTRYPOINT) parses with the service's CLI."""
    service = _service(deploy, name)
    deploy.check_service_args(SERVICES[name], service["command"])
    assert None is service.get("entrypoint")


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_compose_service_publishes_and_checks_its_health_port(deploy: Any, name: str) -> None:
    """The service's health port is published on loopback and its healthcheck GETs /healthz there."""
    service = _service(deploy, name)
    port = deploy.health_port(SERVICES[name])
    check = " ".join(service["healthcheck"]["test"])
    actual = (service["ports"], f"127.0.0.1:{port}/healthz" in check)
    expected = ([f"127.0.0.1:{port}:{port}"], True)
    assert expected == actual


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_compose_service_points_at_the_emulators(deploy: Any, name: str) -> None:
    """The emulator variables name compose hosts, with a scheme only where the clients need one."""
    env = _service(deploy, name)["environment"]
    actual = {
        k: env[k]
        for k in ("PUBSUB_EMULATOR_HOST", "BIGQUERY_EMULATOR_HOST", "STORAGE_EMULATOR_HOST")
    }
    expected = {
        "PUBSUB_EMULATOR_HOST": "pubsub:8085",
        "BIGQUERY_EMULATOR_HOST": "http://bigquery:9050",
        "STORAGE_EMULATOR_HOST": "http://storage:9023",
    }
    assert expected == actual


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_compose_service_starts_after_provisioning_with_read_only_configs(
    deploy: Any, name: str
) -> None:
    """Services wait for provisioning to finish and mount the example configs read-only."""
    service = _service(deploy, name)
    mount = next(v for v in service["volumes"] if v["target"] == "/etc/plowline")
    actual = (
        service["depends_on"],
        mount["read_only"],
        (deploy.repo / mount["source"] / "config.json").is_file(),
    )
    expected = ({"provision": {"condition": "service_completed_successfully"}}, True, True)
    assert expected == actual


def test_compose_provisions_what_the_configs_and_commands_name(deploy: Any) -> None:
    """Every subscription and bucket the config and the service commands use is provisioned."""
    examples = deploy.repo / "libs/devstack/src/plowline_devstack/examples"
    config = json.loads((examples / "config.json").read_text())["data"]
    plan = json.loads((deploy.repo / "deploy/compose/provisioning.json").read_text())
    repeater = _service(deploy, "repeater")["command"]
    deadletter = _service(deploy, "deadletter")["command"]
    subscriptions = {
        config["input"],
        config["typesSubscription"],
        deploy.flag(repeater, "--failedInsertsSub"),
        deploy.flag(deadletter, "--badRowsSub"),
    }
    buckets = {
        deploy.flag(repeater, "--deadEndBucket").removeprefix("gs://").split("/")[0],
        deploy.flag(deadletter, "--bucket").removeprefix("gs://").split("/")[0],
    }
    topics = {config["typesTopic"], config["badRows"], config["failedInserts"]}
    actual = (
        subscriptions <= set(plan["subscriptions"]),
        buckets <= set(plan["buckets"]),
        topics <= set(plan["topics"]),
        plan["project"] == config["projectId"],
    )
    expected = (True, True, True, True)
    assert expected == actual
