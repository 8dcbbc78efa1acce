"""The streaming loader end to end on the local stack with real Spark: Pub/Sub in, BigQuery and topics out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.table_schema import BigQueryTableSchemaStore
from plowline_core.iglu.key import SchemaKey
from plowline_core.messages import decode_types
from plowline_core.schema.columns import column_field
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.testing.tsv import with_entities
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config
from plowline_loader.streaming import StreamingLoader, StreamSettings
from pyspark.sql import SparkSession
from support.configs import bigquery_config, http, resolver_config, write_config_files
from support.stack import pull_all

CTX_A = SchemaKey.parse("iglu:com.acme/ctx_a/jsonschema/1-0-0")
CTX_B = SchemaKey.parse("iglu:com.acme/ctx_b/jsonschema/1-0-0")
CLICK = SchemaKey.parse("iglu:com.acme/click/jsonschema/1-0-0")
NEW_THING = SchemaKey.parse("iglu:com.acme/new_thing/jsonschema/1-0-0")
SCHEMAS: dict[SchemaKey, dict[str, Any]] = {
    CTX_A: {"type": "object", "properties": {"a": {"type": "integer"}}},
    CTX_B: {"type": "object", "properties": {"b": {"type": "string"}}},
    CLICK: {"type": "object", "properties": {"x": {"type": "string"}}},
    NEW_THING: {"type": "object", "properties": {"n": {"type": "integer"}}},
}
KNOWN_COLUMNS = [
    (CTX_A, ShredProperty.CONTEXTS),
    (CTX_B, ShredProperty.CONTEXTS),
    (CLICK, ShredProperty.UNSTRUCT_EVENT),
]
PARSING_ERROR = "iglu:com.snowplowanalytics.snowplow.badrows/loader_parsing_error/jsonschema/2-0-0"


class ToggleRegistry:
    """A static Iglu registry over HTTP that answers 503 while ``failing``."""

    def __init__(self) -> None:
        self.failing = False
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def uri(self) -> str:
        """The repository URI for the resolver config."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/api"

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        registry = self
        by_path = {
            f"/api/schemas/{k.to_path()}": json.dumps(s).encode() for k, s in SCHEMAS.items()
        }

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = by_path.get(self.path)
                status = 503 if registry.failing else (200 if body else 404)
                payload = body if status == 200 and body else b"{}"
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                """Stay quiet."""

        return Handler


@dataclass
class Rig:
    """One test's input subscription, observation subscriptions and loader files."""

    stack: LocalStack
    root: Path
    input_topic: str
    config_file: Path
    resolver_file: Path
    watch: dict[str, str]

    def config(self) -> WorkerConfig:
        """Return the executors' config pointing at the local stack."""
        return WorkerConfig(
            bigquery=load_bigquery_config(self.config_file),
            resolver_json=self.resolver_file.read_text(),
            resolver_dir=str(self.root),
            column_mode=ColumnMode.FULL,
            version="0.1.0",
            pubsub_emulator_host=self.stack.endpoints.pubsub_target,
            bigquery_emulator_host=self.stack.endpoints.bigquery_url,
            schema_refresh_s=5.0,
        )

    def publish(self, lines: list[str]) -> None:
        """Publish enriched lines to the input topic and wait for every id."""
        publisher = publisher_client(self.stack.endpoints.pubsub_target)
        futures = [publisher.publish(self.input_topic, line.encode()) for line in lines]
        for future in futures:
            future.result(timeout=60)

    def drain(self, name: str) -> list[bytes]:
        """Pull and ack everything waiting on the observation subscription of topic ``name``."""
        return pull_all(self.stack.endpoints.pubsub_target, self.watch[name])


def _table_ids(stack: LocalStack, wanted: set[str]) -> set[str]:
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    rows = client.query(f"SELECT event_id FROM `{stack.table_ref}`").result()
    return {row["event_id"] for row in rows} & wanted


def _eventually(check: Callable[[], Any], timeout: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


@pytest.fixture(scope="module")
def registry() -> Iterator[ToggleRegistry]:
    """The toggleable HTTP Iglu registry serving the com.acme schemas."""
    server = ToggleRegistry()
    yield server
    server.close()


@pytest.fixture(scope="module")
def known_columns(local_stack: LocalStack) -> None:
    """Give the events table the columns of the com.acme contexts and click event."""
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    store = BigQueryTableSchemaStore(client, local_stack.table_ref, 60.0, SystemClock())
    store.add_fields([column_field(k, SCHEMAS[k], shred) for k, shred in KNOWN_COLUMNS])


@pytest.fixture
def rig(
    local_stack: LocalStack, registry: ToggleRegistry, known_columns: None, tmp_path: Path
) -> Rig:
    """A fresh input topic/subscription and observation subscriptions on the output topics."""
    registry.failing = False
    name = uuid.uuid4().hex[:10]
    endpoint = local_stack.endpoints.pubsub_target
    publisher, subscriber = publisher_client(endpoint), subscriber_client(endpoint)
    project = f"projects/{local_stack.project}"
    input_topic = f"{project}/topics/in-{name}"
    publisher.create_topic(request={"name": input_topic})
    subscriber.create_subscription(
        request={"name": f"{project}/subscriptions/in-{name}", "topic": input_topic}
    )
    watch = {}
    for topic in ("types", "bad-rows", "failed-inserts"):
        path = f"{project}/subscriptions/watch-{topic}-{name}"
        subscriber.create_subscription(
            request={"name": path, "topic": local_stack.topic_path(topic)}
        )
        watch[topic] = path
    config = bigquery_config(
        name="loader test",
        project=local_stack.project,
        dataset=local_stack.dataset,
        table=local_stack.table,
        input=f"in-{name}",
    )
    resolver = resolver_config(http(registry.uri, name="acme"), cache_size=500)
    config_file, resolver_file = write_config_files(tmp_path, config, resolver)
    return Rig(local_stack, tmp_path, input_topic, config_file, resolver_file, watch)


def _good_line(event_id: str, n: int) -> str:
    contexts: list[tuple[str, dict[str, Any]]] = [(CTX_A.to_uri(), {"a": n})]
    if n % 2:
        contexts.append((CTX_B.to_uri(), {"b": f"v{n}"}))
    unstruct = (CLICK.to_uri(), {"x": str(n)}) if n % 3 == 0 else None
    return with_entities(contexts=contexts, unstruct_event=unstruct, event_id=event_id)


def _loader(spark: SparkSession, rig: Rig) -> StreamingLoader:
    settings = StreamSettings(
        checkpoint=str(rig.root / "checkpoint"),
        max_messages=500,
        pull_timeout_s=0.5,
        ack_deadline_s=30,
        lease_interval_s=5.0,
        backoff_initial_s=0.5,
        backoff_max_s=2.0,
    )
    return StreamingLoader(spark, rig.config(), settings)


def _run_until_drained(loader: StreamingLoader) -> None:
    query = loader.start()
    try:
        query.processAllAvailable()
    finally:
        loader.stop(30)


def test_mixed_events_all_land_in_the_table(spark: SparkSession, rig: Rig) -> None:
    """2,000 events with mixed contexts all land in BigQuery, found by event id."""
    ids = [str(uuid.uuid4()) for _ in range(2000)]
    rig.publish([_good_line(event_id, n) for n, event_id in enumerate(ids)])
    loader = _loader(spark, rig)

    _run_until_drained(loader)

    landed = _eventually(lambda: len(_table_ids(rig.stack, set(ids))) == len(ids), 30)
    expected = (True, 2000, 2000)
    assert expected == (landed, loader.writer.totals.events_in, loader.writer.totals.good)


def test_bad_lines_end_as_parsing_bad_rows(spark: SparkSession, rig: Rig) -> None:
    """Lines that are not enriched TSV are published to badRows as loader_parsing_error."""
    rig.publish(["not an enriched event", "still\tnot\tone"])

    _run_until_drained(_loader(spark, rig))

    schemas = sorted(json.loads(data)["schema"] for data in rig.drain("bad-rows"))
    expected = [PARSING_ERROR, PARSING_ERROR]
    assert expected == schemas


def test_event_without_a_column_publishes_its_type_and_fails_insert(
    spark: SparkSession, rig: Rig
) -> None:
    """An event of a schema the table has no column for: its type is announced, its row failed."""
    event_id = str(uuid.uuid4())
    rig.publish([with_entities(contexts=[(NEW_THING.to_uri(), {"n": 1})], event_id=event_id)])

    _run_until_drained(_loader(spark, rig))

    types = [decode_types(data) for data in rig.drain("types")]
    failed = [json.loads(data)["event_id"] for data in rig.drain("failed-inserts")]
    assert ([[EntityType(NEW_THING, ShredProperty.CONTEXTS)]], [event_id]) == (types, failed)


def test_registry_outage_holds_events_until_it_recovers(
    spark: SparkSession, rig: Rig, registry: ToggleRegistry
) -> None:
    """While the registry answers 503 nothing lands and the loader is not ready; then all land."""
    ids = [str(uuid.uuid4()) for _ in range(50)]
    registry.failing = True
    rig.publish([_good_line(event_id, n) for n, event_id in enumerate(ids)])
    loader = _loader(spark, rig)
    query = loader.start()
    try:
        held = _eventually(lambda: loader.writer.transient_failures > 0, 60)
        during = (held, loader.readiness(), len(_table_ids(rig.stack, set(ids))))
        registry.failing = False
        query.processAllAvailable()
    finally:
        loader.stop(30)

    landed = _eventually(lambda: len(_table_ids(rig.stack, set(ids))) == len(ids), 30)
    expected: tuple[tuple[bool, bool, int], bool, list[bytes]] = ((True, False, 0), True, [])
    assert expected == (during, landed, rig.drain("bad-rows"))


def test_registry_outage_shows_in_readiness_until_it_recovers(
    spark: SparkSession, rig: Rig, registry: ToggleRegistry
) -> None:
    """While the registry answers 503, /readyz's details name it and its error; then none."""
    ids = [str(uuid.uuid4()) for _ in range(20)]
    registry.failing = True
    rig.publish([_good_line(event_id, n) for n, event_id in enumerate(ids)])
    loader = _loader(spark, rig)
    query = loader.start()
    try:
        _eventually(lambda: loader.writer.transient_failures > 0, 60)
        during = loader.readiness.details()["registries"]
        registry.failing = False
        query.processAllAvailable()
        after = loader.readiness.details()["registries"]
    finally:
        loader.stop(30)

    expected = (["acme"], True, [])
    actual = (
        [outage["repository"] for outage in during],
        "answered 503" in during[0]["lastError"],
        after,
    )
    assert expected == actual


def test_loader_killed_mid_stream_loses_no_event(
    rig: Rig, tmp_path: Path, spawn_loader: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """A loader process SIGKILLed mid-stream and restarted accounts for every event id."""
    ids = [str(uuid.uuid4()) for _ in range(1500)]
    bad_ids = set(ids[::50])
    lines = [
        f"broken {event_id}" if event_id in bad_ids else _good_line(event_id, n)
        for n, event_id in enumerate(ids)
    ]
    rig.publish(lines)
    first = spawn_loader(
        rig.config_file, rig.resolver_file, tmp_path / "first.log", max_messages=200
    )
    try:
        _eventually(lambda: _table_ids(rig.stack, set(ids)), 180)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(30)
    second = spawn_loader(
        rig.config_file, rig.resolver_file, tmp_path / "second.log", max_messages=200
    )
    seen: set[str] = set()

    def accounted() -> bool:
        seen.update(json.loads(d)["event_id"] for d in rig.drain("failed-inserts"))
        seen.update(_bad_row_ids(rig.drain("bad-rows"), bad_ids))
        return set(ids) <= seen | _table_ids(rig.stack, set(ids))

    try:
        done = _eventually(accounted, 240)
    finally:
        second.send_signal(signal.SIGTERM)
        code = second.wait(60)
    expected = (True, 0)
    assert expected == (done, code), (tmp_path / "second.log").read_text()[-3000:]


def test_ctrl_c_stops_the_loader_as_sigterm_does(
    rig: Rig, tmp_path: Path, spawn_loader: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """SIGINT to the loader's process group (Ctrl-C in a terminal) is a graceful stop: exit 0."""
    ids = [str(uuid.uuid4()) for _ in range(100)]
    rig.publish([_good_line(event_id, n) for n, event_id in enumerate(ids)])
    log = tmp_path / "loader.log"
    loader = spawn_loader(rig.config_file, rig.resolver_file, log, max_messages=200)
    try:
        landed = _eventually(lambda: _table_ids(rig.stack, set(ids)) == set(ids), 180)
    finally:
        os.killpg(loader.pid, signal.SIGINT)
        code = loader.wait(60)
    text = log.read_text()
    expected = (True, 0, False)
    assert expected == (landed, code, "KeyboardInterrupt" in text), text[-3000:]


def _bad_row_ids(payloads: list[bytes], bad_ids: set[str]) -> set[str]:
    found: set[str] = set()
    for payload in payloads:
        text = payload.decode()
        found.update(event_id for event_id in bad_ids if event_id in text)
    return found
