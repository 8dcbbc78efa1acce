"""Loader rigs on the local stack, and the loader as a process: the fixtures the tiers share (a plugin).

Registered once by the root conftest (``pytest_plugins``):

* ``spawn_loader(config, resolver, log, max_messages=…)``: ``plowline-loader run`` as a real
  process (its own process group, short ack deadline and lease interval), logging to ``log``;
* ``mode_rig(load)``: a :class:`ModeRig`, a fresh events table (atomic columns), input and
  bad-rows topics, and config files for that ``load`` mode;
* ``streaming_rig``: a :class:`StreamingRig`, a fresh input topic, observation subscriptions
  on ``types``/``bad-rows``/``failed-inserts`` and config files over ``toggle_registry``
  (an HTTP Iglu registry serving the ``com.acme`` schemas that answers 503 while
  ``failing``), with the session table given the columns of ``KNOWN_COLUMNS``
  (``acme_columns``).

Nothing here is shipped to Spark's executors (their Python workers cannot import
``support``): the rigs hand the loader a :class:`plowline_loader.bootstrap.WorkerConfig`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.testing.tsv import enriched_line, with_entities

from support.configs import bigquery_config, http, resolver_config, write_config_files
from support.stack import create_events_table, event_counts, pull_all, topic_with_subscription
from support.timing import wait_for

if TYPE_CHECKING:
    from plowline_devstack.stack.lifecycle import LocalStack
    from plowline_loader.bootstrap import WorkerConfig
    from plowline_loader.streaming import StreamingLoader
    from pyspark.sql import SparkSession

RIG_ACK_DEADLINE_S = 10
"""The ack deadline of a ``mode_rig``'s subscriptions."""


# -- the loader as a process -----------------------------------------------------------------


def _spawn_loader(
    config_file: Path,
    resolver_file: Path,
    log: Path,
    *,
    max_messages: int,
    ack_deadline_s: int = 10,
    env: dict[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``plowline-loader run`` as its own process group, logging to ``log``."""
    environment = {
        **os.environ,
        "PLOWLINE_LOADER_ACK_DEADLINE": str(ack_deadline_s),
        "PLOWLINE_LOADER_LEASE_INTERVAL": "3",
        "PLOWLINE_LOADER_PULL_TIMEOUT": "0.5",
        **(env or {}),
    }
    command = [
        sys.executable, "-m", "plowline_loader.cli", "run",
        "--config", str(config_file), "--resolver", str(resolver_file),
        "--master", "local[2]", "--port", "0",
        "--max-messages", str(max_messages), "--grace-period", "30",
    ]  # fmt: skip
    with log.open("wb") as out:
        return subprocess.Popen(
            command, env=environment, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


@pytest.fixture
def spawn_loader() -> Callable[..., subprocess.Popen[bytes]]:
    """``spawn_loader(config, resolver, log, max_messages=…)``: the loader as a real process."""
    return _spawn_loader


# -- one load mode: a fresh table, input and bad rows ----------------------------------------


def _worker_config(
    stack: LocalStack, root: Path, config_file: Path, resolver_file: Path, **extra: Any
) -> WorkerConfig:
    """The executors' config of a rig: its files, the local stack's endpoints, and ``extra``."""
    from plowline_loader.bootstrap import WorkerConfig, load_bigquery_config

    return WorkerConfig(
        bigquery=load_bigquery_config(config_file),
        resolver_json=resolver_file.read_text(),
        resolver_dir=str(root),
        column_mode=ColumnMode.FULL,
        version="0.1.0",
        pubsub_emulator_host=stack.endpoints.pubsub_target,
        bigquery_emulator_host=stack.endpoints.bigquery_url,
        **extra,
    )


@dataclass(frozen=True)
class ModeRig:
    """A fresh table, input and bad-rows subscriptions, and loader config files for one ``load``."""

    stack: LocalStack
    root: Path
    table_ref: str
    input_topic: str
    bad_rows_subscription: str
    config_file: Path
    resolver_file: Path
    published: list[int] = field(default_factory=lambda: [0])
    """Messages published through this rig (one counter, mutable in the frozen rig)."""

    def config(self) -> WorkerConfig:
        """Return the executors' config pointing at the local stack (every sink's endpoint)."""
        return _worker_config(
            self.stack,
            self.root,
            self.config_file,
            self.resolver_file,
            bigquery_grpc_host=self.stack.endpoints.bigquery_grpc_target,
            storage_emulator_host=self.stack.endpoints.storage_url,
            staging_bucket=sorted(self.stack.config.buckets)[0],
        )

    def load_backlog(
        self, spark: SparkSession, max_messages: int, config: WorkerConfig | None = None
    ) -> tuple[StreamingLoader, tuple[bool, Any]]:
        """Stream everything published so far through a StreamingLoader, then stop it.

        Returns the stopped loader (its writer's totals) and the query's ``(isActive,
        exception())`` once everything available was processed.
        """
        from plowline_loader.streaming import StreamingLoader, StreamSettings

        settings = StreamSettings(
            checkpoint=str(self.root / "checkpoint"),
            max_messages=max_messages,
            pull_timeout_s=0.5,
            ack_deadline_s=30,
            lease_interval_s=5.0,
            backoff_max_s=2.0,
        )
        loader = StreamingLoader(spark, config or self.config(), settings)
        query = loader.start()

        def all_read() -> bool:
            # "Available" is what the source's pull saw: on a busy machine a big message can
            # come after a short pull that saw nothing, so read again until every message
            # published is counted in (a message holds one record or more).
            query.processAllAvailable()
            return loader.writer.totals.events_in >= self.published[0]

        try:
            wait_for(all_read, 60.0, every_s=0.5)
            running = (query.isActive, query.exception())
        finally:
            loader.stop(30)
        return loader, running

    def publish(self, event_ids: list[str]) -> None:
        """Publish one enriched line per event id and wait until each is accepted."""
        self.publish_bodies(
            [(enriched_line(event_id=event_id).encode(), {}) for event_id in event_ids]
        )

    def publish_bodies(self, bodies: Sequence[tuple[bytes, Mapping[str, str]]]) -> None:
        """Publish raw message bodies with their attributes; wait until each is accepted."""
        publisher = publisher_client(self.stack.endpoints.pubsub_target)
        futures = [publisher.publish(self.input_topic, data, **attrs) for data, attrs in bodies]
        for future in futures:
            future.result(timeout=60)
        self.published[0] += len(futures)

    def counts(self) -> tuple[int, int]:
        """Return the table's ``COUNT(*)`` and ``COUNT(DISTINCT event_id)``."""
        client = bigquery_client(self.stack.project, self.stack.endpoints.bigquery_url)
        return event_counts(client, self.table_ref)

    def bad_rows(self) -> list[bytes]:
        """Pull and ack every bad row published so far (the loader confirmed each publish)."""
        target = self.stack.endpoints.pubsub_target
        return pull_all(target, self.bad_rows_subscription, max_messages=100, timeout=10)


def _new_rig(stack: LocalStack, root: Path, load: dict[str, Any]) -> ModeRig:
    name = uuid.uuid4().hex[:10]
    client = bigquery_client(stack.project, stack.endpoints.bigquery_url)
    table_ref = f"{stack.project}.{stack.dataset}.events_{name}"
    create_events_table(client, table_ref)
    topics, subscriptions = {}, {}
    for kind in ("in", "bad"):
        topics[kind], subscriptions[kind] = topic_with_subscription(
            stack.endpoints.pubsub_target, stack.project, f"{kind}-{name}", None, RIG_ACK_DEADLINE_S
        )
    config = bigquery_config(
        name="write modes test",
        project=stack.project,
        dataset=stack.dataset,
        table=f"events_{name}",
        input=f"in-{name}",
        bad_rows=f"bad-{name}",
        load=load,
    )
    config_file, resolver_file = write_config_files(root, config)
    return ModeRig(
        stack, root, table_ref, topics["in"], subscriptions["bad"], config_file, resolver_file
    )


@pytest.fixture
def mode_rig(local_stack: LocalStack, tmp_path: Path) -> Callable[[dict[str, Any]], ModeRig]:
    """``mode_rig(load)``: a fresh events table (atomic columns), input and bad-rows topics, and
    config files for that ``load`` mode, on the session's local stack."""
    return lambda load: _new_rig(local_stack, tmp_path, load)


# -- the streaming loader over a toggleable registry and the session's table -----------------

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
"""The entities the session's events table gets columns for (``acme_columns``)."""


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
class StreamingRig:
    """One test's input subscription, observation subscriptions and loader files."""

    stack: LocalStack
    root: Path
    input_topic: str
    config_file: Path
    resolver_file: Path
    watch: dict[str, str]

    def config(self) -> WorkerConfig:
        """Return the executors' config pointing at the local stack."""
        return _worker_config(
            self.stack, self.root, self.config_file, self.resolver_file, schema_refresh_s=5.0
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

    def table_ids(self, wanted: set[str]) -> set[str]:
        """Return which of the ``wanted`` event ids are in the session's events table."""
        client = bigquery_client(self.stack.project, self.stack.endpoints.bigquery_url)
        rows = client.query(f"SELECT event_id FROM `{self.stack.table_ref}`").result()
        return {row["event_id"] for row in rows} & wanted


def good_line(event_id: str, n: int) -> str:
    """An enriched line with ``ctx_a`` (and ``ctx_b`` when ``n`` is odd, a click when 3 | ``n``)."""
    contexts: list[tuple[str, dict[str, Any]]] = [(CTX_A.to_uri(), {"a": n})]
    if n % 2:
        contexts.append((CTX_B.to_uri(), {"b": f"v{n}"}))
    unstruct = (CLICK.to_uri(), {"x": str(n)}) if n % 3 == 0 else None
    return with_entities(contexts=contexts, unstruct_event=unstruct, event_id=event_id)


@pytest.fixture(scope="module")
def toggle_registry() -> Iterator[ToggleRegistry]:
    """The toggleable HTTP Iglu registry serving the com.acme schemas."""
    server = ToggleRegistry()
    yield server
    server.close()


@pytest.fixture(scope="module")
def acme_columns(local_stack: LocalStack) -> None:
    """Give the session's events table the columns of the com.acme contexts and click event."""
    from plowline_cloud.clock import SystemClock
    from plowline_cloud.table_schema import BigQueryTableSchemaStore
    from plowline_core.schema.columns import column_field

    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    store = BigQueryTableSchemaStore(client, local_stack.table_ref, 60.0, SystemClock())
    store.add_fields([column_field(k, SCHEMAS[k], shred) for k, shred in KNOWN_COLUMNS])


@pytest.fixture
def streaming_rig(
    local_stack: LocalStack, toggle_registry: ToggleRegistry, acme_columns: None, tmp_path: Path
) -> StreamingRig:
    """A fresh input topic/subscription and observation subscriptions on the output topics."""
    toggle_registry.failing = False
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
    resolver = resolver_config(http(toggle_registry.uri, name="acme"), cache_size=500)
    config_file, resolver_file = write_config_files(tmp_path, config, resolver)
    return StreamingRig(local_stack, tmp_path, input_topic, config_file, resolver_file, watch)
