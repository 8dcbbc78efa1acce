"""The repeater, run as a process against the local stack: lag, dead ends, and a SIGKILL."""

from __future__ import annotations

import re
import signal
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from google.api_core.exceptions import AlreadyExists
from google.cloud import bigquery
from jsonschema import Draft4Validator
from plowline_cloud.clients import (
    bigquery_client,
    publisher_client,
    storage_client,
    subscriber_client,
)
from plowline_devstack.stack.provisioning import StackConfig, provision_bigquery
from support.timing import wait_for, wait_for_line, wait_until

DEAD_END = "plowline-dead-end"
RECOVERY = (
    "vectors/badrows/com.snowplowanalytics.snowplow.badrows/loader_recovery_error/jsonschema/1-0-0"
)


def _row(**extra: Any) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    return {
        "event_id": str(uuid.uuid4()),
        "etl_tstamp": now,
        "collector_tstamp": now,
        "v_collector": "test",
        "v_etl": "test",
        **extra,
    }


def _publish(stack: Any, messages: list[bytes]) -> None:
    publisher = publisher_client(stack.endpoints.pubsub_target)
    topic = stack.topic_path("failed-inserts")
    for future in [publisher.publish(topic, data) for data in messages]:
        future.result(timeout=30)


def _in_table(stack: Any, event_ids: list[str]) -> set[str]:
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    quoted = ", ".join(f"'{event_id}'" for event_id in event_ids)
    query = f"SELECT event_id FROM `{stack.table_ref}` WHERE event_id IN ({quoted})"
    return {row["event_id"] for row in client.query(query).result()}


def _dead_rows(stack: Any, prefix: str) -> list[dict[str, Any]]:
    client = storage_client(stack.project, stack.endpoints.storage_url)
    return [
        orjson.loads(line)
        for blob in client.list_blobs(DEAD_END, prefix=prefix + "/")
        for line in blob.download_as_bytes().splitlines()
    ]


def _subscription(stack: Any, prefix: str) -> str:
    """The test's own subscription on ``failed-inserts`` (made once per prefix, kept on restart).

    Notes:
        Other tests' loaders publish failed inserts to the same topic in the same session; a
        subscription of the test's own sees only what is published after it exists.
    """
    name = f"failed-inserts-{prefix}"
    subscriber = subscriber_client(stack.endpoints.pubsub_target)
    try:
        subscriber.create_subscription(
            name=f"projects/{stack.project}/subscriptions/{name}",
            topic=stack.topic_path("failed-inserts"),
        )
    except AlreadyExists:
        pass  # the same test starting its repeater again
    finally:
        subscriber.close()
    return name


def _start(
    start: Callable[..., Any], stack: Any, files: tuple[Path, Path], prefix: str, *extra: str
) -> Any:
    config, resolver = files
    return start(
        "plowline_repeater.cli",
        "run",
        "--config",
        str(config),
        "--resolver",
        str(resolver),
        "--failedInsertsSub",
        _subscription(stack, prefix),
        "--deadEndBucket",
        f"gs://{DEAD_END}/{prefix}",
        "--port",
        "0",
        *extra,
    )


def test_a_row_lands_soon_after_its_column_is_added(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """Mutation lag: a row that failed for a missing column is in the table within 10 s of the column."""
    column = f"lag_{uuid.uuid4().hex[:8]}"
    service = _start(
        start_service,
        local_stack,
        config_files,
        f"t-{uuid.uuid4().hex[:8]}",
        "--backoffPeriod",
        "600",
    )
    row = _row(**{column: "here"})
    _publish(local_stack, [orjson.dumps(row)])
    wait_for_line(service.log, "repeater started", 30)
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    table = client.get_table(local_stack.table_ref)
    table.schema = [*table.schema, bigquery.SchemaField(column, "STRING", mode="NULLABLE")]
    client.update_table(table, ["schema"])
    landed = wait_until(lambda: _in_table(local_stack, [row["event_id"]]), 10, every_s=0.3)
    service.stop()
    assert {row["event_id"]} == landed, service.tail()


def test_an_event_from_2013_waits_its_backoff_from_the_failure_not_from_etl_tstamp(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """A 2013 event whose column is added 5 s after its failure lands; none is dead-ended."""
    column = f"old_{uuid.uuid4().hex[:8]}"
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    service = _start(
        start_service, local_stack, config_files, prefix, "--backoffPeriod", "20", "--window", "1"
    )
    wait_for_line(service.log, "repeater started", 30)
    old = "2013-10-07T12:00:00+00:00"
    rows = [_row(**{column: f"v{i}", "etl_tstamp": old, "collector_tstamp": old}) for i in range(5)]
    _publish(local_stack, [orjson.dumps(row) for row in rows])
    time.sleep(5)  # the user's trial: columns added by hand a few seconds after the failures
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    table = client.get_table(local_stack.table_ref)
    table.schema = [*table.schema, bigquery.SchemaField(column, "STRING", mode="NULLABLE")]
    client.update_table(table, ["schema"])
    ids = [row["event_id"] for row in rows]
    landed = wait_for(lambda: len(_in_table(local_stack, ids)) == len(ids), 30, every_s=1.0)
    service.stop()
    expected = (True, [])
    assert expected == (landed, _dead_rows(local_stack, prefix)), service.tail()


def test_a_row_that_never_fits_reaches_the_dead_end_bucket(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
    conformance_dir: Path,
) -> None:
    """A wrong-typed row becomes a valid loader_recovery_error once the short backoff passed."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    service = _start(
        start_service, local_stack, config_files, prefix, "--backoffPeriod", "1", "--window", "1"
    )
    row = _row(txn_id="not a number")
    _publish(local_stack, [orjson.dumps(row)])
    [dead] = wait_until(lambda: _dead_rows(local_stack, prefix), 60, every_s=0.3) or [None]
    code = service.stop()
    schema = orjson.loads((conformance_dir / RECOVERY).read_bytes())
    Draft4Validator(schema).validate(dead["data"])
    expected = (0, row, "invalid")
    actual = (
        code,
        orjson.loads(dead["data"]["payload"]),
        dead["data"]["failure"]["error"]["reason"],
    )
    assert expected == actual, service.tail()


def _ready(service: Any) -> int | None:
    """Return the status of the service's /readyz (the port is read from its start log line)."""
    found = re.search(r"repeater started .* port=(\d+)", service.tail())
    if found is None:
        return None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{found[1]}/readyz", timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except urllib.error.URLError:
        return None  # nothing listens: the service is gone


def test_an_unreadable_table_keeps_the_repeater_running_not_ready_until_it_recovers(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """With its table missing the repeater stays up and not ready; once it exists the row lands."""
    late = f"late_{uuid.uuid4().hex[:8]}"
    config, resolver = config_files
    document = orjson.loads(config.read_bytes())
    document["data"]["tableId"] = late
    config.write_bytes(orjson.dumps(document))
    service = _start(start_service, local_stack, (config, resolver), f"t-{uuid.uuid4().hex[:8]}")
    wait_for_line(service.log, "repeater started", 30)
    row = _row()
    _publish(local_stack, [orjson.dumps(row)])
    wait_for_line(service.log, "table schema unreadable", 30)
    outage = (service.process.poll(), wait_for(lambda: _ready(service) == 503, 10))
    provision_bigquery(StackConfig(table=late), local_stack.endpoints)
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    query = f"SELECT event_id FROM `{local_stack.project}.snowplow.{late}`"
    landed = wait_until(
        lambda: {r["event_id"] for r in client.query(query).result()}, 60, every_s=1.0
    )
    recovered = wait_for(lambda: _ready(service) == 200, 10)
    service.stop()
    expected = ((None, True), {row["event_id"]}, True)
    assert expected == (outage, landed, recovered), service.tail()


def test_sigkill_with_rows_buffered_loses_none(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """Rows buffered for the dead end when the process is killed land after a restart."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    markers = [f"garbage-{uuid.uuid4()}".encode() for _ in range(3)]
    rows = [_row(txn_id="nope") for _ in range(2)]
    first = _start(
        start_service,
        local_stack,
        config_files,
        prefix,
        "--backoffPeriod",
        "1",
        "--window",
        "3600",
        "--bufferSize",
        "100",
        "--verbose",
    )
    wait_for_line(first.log, "repeater started", 30)
    _publish(local_stack, markers + [orjson.dumps(row) for row in rows])
    wait_for(lambda: first.tail().count("dead-ended") >= 5, 30)
    first.stop(signal.SIGKILL)
    before = _dead_rows(local_stack, prefix)
    second = _start(
        start_service, local_stack, config_files, prefix, "--backoffPeriod", "1", "--window", "1"
    )
    wanted = {m.decode() for m in markers} | {orjson.dumps(r).decode() for r in rows}
    wait_for(
        lambda: wanted <= {d["data"]["payload"] for d in _dead_rows(local_stack, prefix)},
        120,
        every_s=0.3,
    )
    second.stop()
    payloads = {d["data"]["payload"] for d in _dead_rows(local_stack, prefix)}
    expected: tuple[list[Any], set[str]] = ([], wanted)
    assert expected == (before, payloads & wanted), second.tail()


def test_a_repeater_whose_subscription_is_deleted_exits_1(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """Its subscription deleted under it, the repeater says why and exits 1 within 60 s."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    service = _start(start_service, local_stack, config_files, prefix)
    wait_for_line(service.log, "repeater started", 30)
    subscriber = subscriber_client(local_stack.endpoints.pubsub_target)
    path = f"projects/{local_stack.project}/subscriptions/{_subscription(local_stack, prefix)}"
    subscriber.delete_subscription(subscription=path)
    subscriber.close()
    code = service.process.wait(60)
    expected = (1, True)
    assert expected == (code, "repeater stream ended" in service.tail()), service.tail()
