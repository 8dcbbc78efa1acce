"""The dead-letter writer files every bad row from Pub/Sub into the bucket (local stack).

Each test reads a subscription of its own on ``bad-rows``: other tiers' loaders publish bad
rows to that topic in the same session, and they must not land in this test's bucket prefix.
"""

from __future__ import annotations

import gzip
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from plowline_cloud.clients import publisher_client, storage_client, subscriber_client
from support.timing import wait_for, wait_for_line

BUCKET = "plowline-bad-rows"
VENDOR = "iglu:com.snowplowanalytics.snowplow.badrows"


def _bad_row(kind: str, version: str, marker: str) -> bytes:
    return orjson.dumps(
        {"schema": f"{VENDOR}/{kind}/jsonschema/{version}", "data": {"payload": marker}}
    )


def _publish(stack: Any, messages: list[bytes]) -> None:
    publisher = publisher_client(stack.endpoints.pubsub_target)
    topic = stack.topic_path("bad-rows")
    for future in [publisher.publish(topic, data) for data in messages]:
        future.result(timeout=30)


def _objects(stack: Any, prefix: str) -> dict[str, bytes]:
    client = storage_client(stack.project, stack.endpoints.storage_url)
    return {
        blob.name[len(prefix) + 1 :]: blob.download_as_bytes()
        for blob in client.list_blobs(BUCKET, prefix=prefix + "/")
    }


def _messages(name: str, body: bytes) -> list[bytes]:
    """Return the messages of an object: a .bin object is one message, NDJSON one per line."""
    return [body] if name.endswith(".bin") else body.splitlines()


def _lines(objects: dict[str, bytes]) -> set[bytes]:
    return {line for name, body in objects.items() for line in _messages(name, body)}


def _own_subscription(stack: Any) -> str:
    """Create a subscription on ``bad-rows`` that sees only what is published from now on."""
    name = f"bad-rows-deadletter-{uuid.uuid4().hex[:8]}"
    subscriber = subscriber_client(stack.endpoints.pubsub_target)
    subscriber.create_subscription(
        name=f"projects/{stack.project}/subscriptions/{name}", topic=stack.topic_path("bad-rows")
    )
    subscriber.close()
    return name


def _start(
    start_service: Callable[..., Any],
    stack: Any,
    config: Path,
    prefix: str,
    *extra: str,
    subscription: str | None = None,
) -> Any:
    return start_service(
        "plowline_deadletter.cli",
        "run",
        "--config",
        str(config),
        "--badRowsSub",
        subscription or _own_subscription(stack),
        "--bucket",
        f"gs://{BUCKET}/{prefix}",
        "--port",
        "0",
        *extra,
    )


def test_bad_rows_land_partitioned_and_complete(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """Every message ends in exactly one object of its type's partition (unparseable apart)."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    service = _start(
        start_service, local_stack, config_files[0], prefix, "--window", "1", "--maxRows", "3"
    )
    parsing = [_bad_row("loader_parsing_error", "2-0-0", f"p{n}") for n in range(4)]
    iglu = [_bad_row("loader_iglu_error", "2-0-0", "i0")]
    marker = uuid.uuid4()
    garbage = [
        f"not json {marker}".encode(),
        f"two\nlines {marker}\n".encode(),
        f'{{"schema":"{VENDOR}/loader_parsing_error/jsonschema/2-0-0",\r\n"data":{{"m":"{marker}"}}}}'.encode(),
    ]
    _publish(local_stack, parsing + iglu + garbage)
    sent = set(parsing + iglu + garbage)
    wait_for(lambda: sent <= _lines(_objects(local_stack, prefix)), 60, every_s=0.3)
    objects = _objects(local_stack, prefix)
    service.stop()
    by_partition: dict[str, set[bytes]] = {}
    for name, body in objects.items():
        by_partition.setdefault(name.split("/", 2)[0], set()).update(_messages(name, body))
    expected = {
        "com.snowplowanalytics.snowplow.badrows.loader_parsing_error": set(parsing),
        "com.snowplowanalytics.snowplow.badrows.loader_iglu_error": set(iglu),
        "unparseable": set(garbage),
    }
    assert expected == by_partition


def test_unparseable_messages_round_trip_byte_for_byte(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """Each unparseable message, embedded newlines included, is one .bin object equal to it."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    service = _start(start_service, local_stack, config_files[0], prefix, "--window", "1", "--gzip")
    garbage = [b"a\nb", b"a", b"b", b"\n\nc\r\n", bytes(range(256))]
    _publish(local_stack, garbage)
    wait_for(lambda: len(_objects(local_stack, prefix)) >= len(garbage), 60, every_s=0.3)
    objects = _objects(local_stack, prefix)
    service.stop()
    names = sorted(objects)
    expected = (sorted(garbage), [True] * len(garbage))
    actual = (
        sorted(objects.values()),
        [name.startswith("unparseable/") and name.endswith(".bin") for name in names],
    )
    assert expected == actual


def test_sigterm_writes_buffers_and_exits_cleanly(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """Rows buffered in a long window are written on SIGTERM, and the exit code is 0."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    service = _start(
        start_service, local_stack, config_files[0], prefix, "--window", "3600", "--gzip"
    )
    rows = [_bad_row("loader_runtime_error", "1-0-1", f"r{n}") for n in range(3)]
    _publish(local_stack, rows)
    wait_for_line(service.log, "dead-letter writer started", 30)
    time.sleep(2)  # let the subscriber receive them (the objects are only written on SIGTERM)
    code = service.stop(signal.SIGTERM)
    objects = _objects(local_stack, prefix)
    lines = {line for body in objects.values() for line in gzip.decompress(body).splitlines()}
    expected = (0, set(rows))
    assert expected == (code, lines), service.tail()


def test_a_writer_restarted_after_sigkill_does_not_write_a_republished_row_again(
    local_stack: Any,
    config_files: tuple[Path, Path],
    start_service: Callable[..., Any],
) -> None:
    """SIGKILL, the loader republishes a written row, restart: it reads the lookback, acks the copy."""
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    subscription = _own_subscription(local_stack)
    config = config_files[0]
    first = _start(
        start_service, local_stack, config, prefix, "--window", "1", subscription=subscription
    )
    row, other = (
        _bad_row("loader_parsing_error", "2-0-0", f"r-{prefix}"),
        _bad_row("loader_parsing_error", "2-0-0", f"o-{prefix}"),
    )
    _publish(local_stack, [row])
    wait_for(lambda: {row} <= _lines(_objects(local_stack, prefix)), 60, every_s=0.3)
    first.stop(signal.SIGKILL)
    _publish(local_stack, [row, other])  # the copy under a new message id, and a new row
    second = _start(
        start_service, local_stack, config, prefix, "--window", "1", subscription=subscription
    )
    wait_for(lambda: other in _lines(_objects(local_stack, prefix)), 60, every_s=0.3)
    wait_for_line(second.log, "duplicate delivery", 30)
    lines = sorted(
        line
        for name, body in _objects(local_stack, prefix).items()
        for line in _messages(name, body)
    )
    log = second.tail()
    second.stop()
    recalled = "lookback read" in log and "rows=1" in log
    assert (sorted([row, other]), True) == (lines, recalled), log
