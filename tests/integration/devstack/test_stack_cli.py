"""``plowline dev up | status | env | down`` run as a subprocess against a fresh data directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import bigquery, storage
from google.pubsub_v1 import PublisherClient, SubscriberClient, types
from google.pubsub_v1.services.publisher.transports import PublisherGrpcTransport
from google.pubsub_v1.services.subscriber.transports import SubscriberGrpcTransport
from plowline_devstack.endpoints import ENV_NAMES

PLOWLINE = Path(sys.executable).parent / "plowline"
ELAPSED = re.compile(r"up and provisioned in (\d+\.\d+) s")


def plowline(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run the ``plowline`` console script with ``--data-dir``; never raise on exit status."""
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    return subprocess.run(
        [str(PLOWLINE), *args, "--data-dir", str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _running(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie (an exited daemon nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _exports(stdout: str) -> dict[str, str]:
    pairs = (
        line.removeprefix("export ").split("=", 1)
        for line in stdout.splitlines()
        if line.startswith("export ")
    )
    return dict(pairs)


@pytest.fixture(scope="module")
def first_up(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, subprocess.CompletedProcess[str]]]:
    """A stack brought up by ``plowline dev up``, stopped by ``plowline dev down`` afterwards."""
    data_dir = tmp_path_factory.mktemp("cli") / ".plowline"
    result = plowline("dev", "up", data_dir=data_dir)
    print(result.stderr, file=sys.stderr)
    if result.returncode != 0:
        plowline("dev", "down", data_dir=data_dir)
        pytest.fail(f"plowline dev up failed:\n{result.stderr}", pytrace=False)
    yield data_dir, result
    plowline("dev", "down", data_dir=data_dir)


def test_stack_cli_up_prints_exports(
    first_up: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """``up`` prints one export per emulator variable on stdout."""
    _, result = first_up

    assert sorted(ENV_NAMES) == sorted(_exports(result.stdout))


def test_stack_cli_up_prints_elapsed_time(
    first_up: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """``up`` reports how long start and provisioning took."""
    _, result = first_up
    found = ELAPSED.search(result.stderr)
    print(f"plowline dev up: {found.group(0) if found else 'no elapsed time printed'}")

    assert found is not None


def test_stack_cli_second_up_reuses_running_servers(
    first_up: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """A second ``up`` reuses all three servers and prints the same exports."""
    data_dir, result = first_up

    again = plowline("dev", "up", data_dir=data_dir)

    reused = sorted(
        line.split()[1] for line in again.stderr.splitlines() if line.startswith("reused")
    )
    assert (0, ["bigquery", "pubsub", "storage"], _exports(result.stdout)) == (
        again.returncode,
        reused,
        _exports(again.stdout),
    )


def test_stack_cli_status_shows_every_server_answering(
    first_up: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """``status`` lists the three servers, each answering, and exits 0."""
    data_dir, _ = first_up

    status = plowline("dev", "status", data_dir=data_dir)

    answering = sorted(
        line.split()[0] for line in status.stdout.splitlines() if line.endswith("answers")
    )
    expected = (0, ["bigquery", "pubsub", "storage"])
    assert expected == (status.returncode, answering)


def test_stack_cli_env_matches_up(first_up: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """``env`` prints the exports ``up`` printed."""
    data_dir, result = first_up

    env = plowline("dev", "env", data_dir=data_dir)

    assert _exports(result.stdout) == _exports(env.stdout)


def test_stack_cli_down_stops_the_servers(tmp_path: Path) -> None:
    """After ``down`` no server process is left and ``status`` finds no stack."""
    data_dir = tmp_path / ".plowline"
    up = plowline("dev", "up", data_dir=data_dir)
    print(up.stderr, file=sys.stderr)
    pids = [int(line.split()[3]) for line in up.stderr.splitlines() if line.startswith("started")]

    down = plowline("dev", "down", data_dir=data_dir)
    status = plowline("dev", "status", data_dir=data_dir)

    alive = [pid for pid in pids if _running(pid)]
    expected: tuple[int, int, list[int], int] = (0, 3, [], 1)
    assert expected == (down.returncode, len(pids), alive, status.returncode)


def _delivered_twice(pubsub_target: str) -> bool:
    """Publish one message to the provisioned topic; True when acking it does not settle it."""
    channel = grpc.insecure_channel(pubsub_target)
    publisher = PublisherClient(transport=PublisherGrpcTransport(channel=channel))
    subscriber = SubscriberClient(transport=SubscriberGrpcTransport(channel=channel))
    sub = "projects/plowline-local/subscriptions/enriched-loader"
    publisher.publish(
        topic="projects/plowline-local/topics/enriched",
        messages=[types.PubsubMessage(data=b"once?")],
    )
    counts = []
    for _ in range(2):
        received = subscriber.pull(subscription=sub, max_messages=10, timeout=10).received_messages
        counts.append(len(received))
        if received:
            subscriber.acknowledge(subscription=sub, ack_ids=[r.ack_id for r in received])
        if not received:
            break
    channel.close()
    return counts[:2] == [1, 1]


def test_stack_cli_up_with_faults_turns_them_on_and_off(tmp_path: Path) -> None:
    """``up --faults`` starts Pub/Sub with the file's faults; a new file restarts only Pub/Sub."""
    data_dir = tmp_path / ".plowline"
    duplicates, kind = tmp_path / "dupes.toml", tmp_path / "kind.toml"
    duplicates.write_text("[pubsub.duplicate-delivery]\nrate = 1.0\n")
    kind.write_text("")
    try:
        up = plowline("dev", "up", "--faults", str(duplicates), data_dir=data_dir)
        target = _exports(up.stdout)["PUBSUB_EMULATOR_HOST"]
        faulty = _delivered_twice(target)
        again = plowline("dev", "up", "--faults", str(kind), data_dir=data_dir)
        started = [
            line.split()[1] for line in again.stderr.splitlines() if line.startswith("started")
        ]
        healed = _delivered_twice(_exports(again.stdout)["PUBSUB_EMULATOR_HOST"])
    finally:
        plowline("dev", "down", data_dir=data_dir)
    expected = (True, "faults on: pubsub.duplicate-delivery", ["pubsub"], False)
    actual = (faulty, up.stderr.splitlines()[-2], started, healed)
    assert expected == actual, up.stderr + again.stderr


_SAMPLE = {"STRING": "x", "TIMESTAMP": "2026-01-01T00:00:00Z", "INTEGER": 1, "BOOLEAN": True}


def test_stack_cli_up_with_faults_starts_bigquery_and_storage_with_theirs(tmp_path: Path) -> None:
    """``up --faults`` hands [bigquery] and [storage] faults to those servers: writes lose their answer."""
    data_dir = tmp_path / ".plowline"
    lost = tmp_path / "lost.toml"
    lost.write_text(
        "[bigquery.response-lost-after-write]\nrate = 1.0\n"
        "[storage.response-lost-after-write]\nrate = 1.0\n"
    )
    try:
        up = plowline("dev", "up", "--faults", str(lost), data_dir=data_dir)
        exports = _exports(up.stdout)
        bq = bigquery.Client(
            project="plowline-local",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]  # untyped
            client_options=ClientOptions(api_endpoint=exports["BIGQUERY_EMULATOR_HOST"]),
        )
        table = bq.get_table("plowline-local.snowplow.events")
        row = {f.name: _SAMPLE[f.field_type] for f in table.schema if f.mode == "REQUIRED"}
        outcomes = []
        try:
            bq.insert_rows_json(table, [row], retry=None)  # type: ignore[arg-type]  # one try
        except gexc.ServiceUnavailable as exc:
            outcomes.append(exc.code)
        gcs = storage.Client(
            project="plowline-local",
            credentials=AnonymousCredentials(),  # type: ignore[no-untyped-call]  # untyped
            client_options=ClientOptions(api_endpoint=exports["STORAGE_EMULATOR_HOST"]),
        )
        blob = gcs.bucket(gcs.list_buckets().__next__().name).blob("lost")
        try:
            blob.upload_from_string(b"x", if_generation_match=0, retry=None)
        except gexc.ServiceUnavailable as exc:
            outcomes.append(exc.code)
        stored = (len(list(bq.list_rows(table))), blob.exists())
    finally:
        plowline("dev", "down", data_dir=data_dir)
    expected = (
        "faults on: bigquery.response-lost-after-write, storage.response-lost-after-write",
        [503, 503],
        (1, True),
    )
    assert expected == (up.stderr.splitlines()[-2], outcomes, stored), up.stderr
