"""An events table with hand-made columns of every type: loader, mutator and repeater keep working.

An analyst adds BYTES, BIGNUMERIC, TIME, DATETIME, GEOGRAPHY, JSON, RANGE and INTERVAL
columns (one of them under the name the mutator would give an entity, and a RECORD of
such fields) to a fresh events table on the local stack. Then: the loader's batch
processing (the code Spark executors run, with the real adapters) loads events in every
write mode, and an event whose entity column is a hand-made GEOGRAPHY becomes a failed
insert (BigQuery refuses its value) while the others land; ``plowline-mutator serve`` adds
a column for a new type, reports the clash as a conflict, leaves every hand-made column as
it was and answers ``GET /v1/columns``; the repeater re-inserts a row into the table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client, publisher_client
from plowline_core.event.fields import ATOMIC_COLUMNS
from plowline_core.iglu.key import SchemaKey
from plowline_core.messages import encode_types
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.testing.tsv import enriched_line
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_port
from plowline_loader.batch.message import InboundMessage
from plowline_loader.bootstrap import WorkerConfig, build_processor, load_bigquery_config
from support.configs import bigquery_config, write_json

EXAMPLES = Path(__file__).resolve().parents[2] / "libs/devstack/src/plowline_devstack/examples"
CHECKOUT = "iglu:com.acme/checkout_started/jsonschema/1-0-0"
CLASH = "unstruct_event_com_acme_checkout_started_1_0_0"
WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
WEB_PAGE_COLUMN = "contexts_com_snowplowanalytics_snowplow_web_page_1_0_0"
HAND_MADE: list[dict[str, Any]] = [
    {
        "name": "raw_bytes",
        "type": "BYTES",
        "mode": "NULLABLE",
        "description": "by hand",
        "maxLength": "16",
    },
    {
        "name": "big_amount",
        "type": "BIGNUMERIC",
        "mode": "NULLABLE",
        "precision": "50",
        "scale": "10",
        "roundingMode": "ROUND_HALF_EVEN",
    },
    {"name": "at_time", "type": "TIME", "mode": "NULLABLE"},
    {"name": "local_at", "type": "DATETIME", "mode": "NULLABLE"},
    {"name": "place", "type": "GEOGRAPHY", "mode": "NULLABLE"},
    {"name": "doc", "type": "JSON", "mode": "NULLABLE"},
    {"name": "span", "type": "RANGE", "mode": "NULLABLE", "rangeElementType": {"type": "DATE"}},
    {"name": "wait", "type": "INTERVAL", "mode": "NULLABLE"},
    {
        "name": "notes",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [
            {"name": "at", "type": "DATETIME", "mode": "NULLABLE"},
            {"name": "amount", "type": "BIGNUMERIC", "mode": "NULLABLE", "precision": "60"},
        ],
    },
    {"name": CLASH, "type": "GEOGRAPHY", "mode": "NULLABLE", "description": "not an entity"},
]
HAND_MADE_NAMES = {column["name"] for column in HAND_MADE}
TOKEN = "hand-made-test"
CHECKOUT_DATA = {"cartId": "c1", "itemCount": 2, "total": 9.5, "currency": "EUR"}


@dataclass(frozen=True)
class TypedTable:
    """A fresh events table with the hand-made columns, and config files naming it."""

    stack: LocalStack
    table_ref: str
    root: Path

    def config_file(self, load: dict[str, Any]) -> Path:
        """Write a bigquery_config for this table and ``load``; return its path."""
        path = self.root / f"config-{uuid.uuid4().hex[:6]}.json"
        config = bigquery_config(
            name="hand-made columns",
            project=self.stack.project,
            dataset=self.stack.dataset,
            table=self.table_ref.rsplit(".", 1)[1],
            load=load,
        )
        return write_json(path, config)

    @property
    def resolver_file(self) -> Path:
        """A resolver config reading the example Iglu repository."""
        resolver = json.loads((EXAMPLES / "resolver.json").read_text())
        resolver["data"]["repositories"][0]["connection"]["embedded"]["path"] = str(
            EXAMPLES / "iglu"
        )
        path = self.root / "resolver.json"
        path.write_text(json.dumps(resolver))
        return path

    def client(self) -> bigquery.Client:
        """A BigQuery client of the local stack."""
        return bigquery_client(self.stack.project, self.stack.endpoints.bigquery_url)

    def columns(self) -> dict[str, dict[str, Any]]:
        """The table's columns as BigQuery describes them, by name."""
        table = self.client().get_table(self.table_ref)
        return {field.name: field.to_api_repr() for field in table.schema}

    def event_ids(self) -> set[str]:
        """The event ids in the table."""
        rows = self.client().list_rows(self.table_ref, selected_fields=[_EVENT_ID])
        return {row["event_id"] for row in rows}


_EVENT_ID = bigquery.SchemaField("event_id", "STRING")


@dataclass(frozen=True)
class Service:
    """A service process and its log."""

    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> int:
        """Stop the process (SIGTERM) and return its exit code."""
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(60)

    def tail(self) -> str:
        """Return the end of the log."""
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture
def typed(local_stack: LocalStack, tmp_path: Path) -> TypedTable:
    """A fresh events table: the atomic columns, then the hand-made ones."""
    table_ref = f"{local_stack.project}.{local_stack.dataset}.typed_{uuid.uuid4().hex[:10]}"
    columns = [column.to_api() for column in ATOMIC_COLUMNS] + HAND_MADE
    schema = [bigquery.SchemaField.from_api_repr(column) for column in columns]
    rig = TypedTable(local_stack, table_ref, tmp_path)
    rig.client().create_table(bigquery.Table(table_ref, schema=schema))
    return rig


def _hand_made(columns: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [column for name, column in columns.items() if name in HAND_MADE_NAMES]


@pytest.mark.parametrize(
    "load",
    [
        pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, id="insert-all"),
        pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, id="write-api"),
        pytest.param({"mode": "FILE_LOADS", "frequency": 100}, id="file-loads"),
    ],
)
def test_loader_loads_beside_hand_made_columns(typed: TypedTable, load: dict[str, Any]) -> None:
    """A batch lands its good event; the clashing entity is a failed insert, garbage a bad row."""
    stack = typed.stack
    config = WorkerConfig(
        bigquery=load_bigquery_config(typed.config_file(load)),
        resolver_json=typed.resolver_file.read_text(),
        resolver_dir=str(typed.root),
        column_mode=ColumnMode.FULL,
        version="0.1.0",
        pubsub_emulator_host=stack.endpoints.pubsub_target,
        bigquery_emulator_host=stack.endpoints.bigquery_url,
        bigquery_grpc_host=stack.endpoints.bigquery_grpc_target,
        storage_emulator_host=stack.endpoints.storage_url,
        staging_bucket=sorted(stack.config.buckets)[0],
    )
    good, clashing = str(uuid.uuid4()), str(uuid.uuid4())
    lines = [
        enriched_line(event_id=good),
        enriched_line(event_id=clashing, unstruct_event=(CHECKOUT, CHECKOUT_DATA)),
        "not an enriched event",
    ]
    messages = [InboundMessage(line.encode(), f"m{i}") for i, line in enumerate(lines)]

    outcome = build_processor(config).process(messages)

    expected = ((1, 1, 1), {good}, HAND_MADE)
    actual = (
        (outcome.good, outcome.failed, outcome.bad),
        typed.event_ids(),
        _hand_made(typed.columns()),
    )
    assert expected == actual


@pytest.fixture
def mutator(typed: TypedTable) -> Iterator[tuple[Service, int]]:
    """``plowline-mutator serve`` (listener and API, token required) on the typed table."""
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "plowline-mutator"), "serve",
        "--config", str(typed.config_file({"mode": "STREAMING_INSERTS", "retry": False})),
        "--resolver", str(typed.resolver_file), "--port", str(port),
    ]  # fmt: skip
    env = {**os.environ, "PLOWLINE_MUTATOR_TOKEN": TOKEN, "PLOWLINE_MUTATOR_LOG_JSON": "false"}
    log = typed.root / "mutator.log"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    service = Service(process, log)
    try:
        yield service, port
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_mutator_widens_and_lists_a_table_with_hand_made_columns(
    typed: TypedTable, mutator: tuple[Service, int], eventually: Callable[..., Any]
) -> None:
    """The listener adds a new type's column, leaves the clash and every hand-made column as is."""
    stack = typed.stack
    service, port = mutator
    types = [
        EntityType(SchemaKey.parse(CHECKOUT), ShredProperty.UNSTRUCT_EVENT),
        EntityType(SchemaKey.parse(WEB_PAGE), ShredProperty.CONTEXTS),
    ]
    publisher = publisher_client(stack.endpoints.pubsub_target)
    publisher.publish(stack.topic_path("types"), encode_types(types)).result(timeout=30)

    added = eventually(lambda: WEB_PAGE_COLUMN in typed.columns(), timeout=60)
    listed = eventually(lambda: _list_columns(port), timeout=30)
    alive = service.process.poll() is None
    service.stop()

    clash = next((c for c in listed or [] if c["column"] == CLASH), {})
    expected = (True, HAND_MADE, "GEOGRAPHY", True)
    actual = (added, _hand_made(typed.columns()), clash.get("field", {}).get("type"), alive)
    assert expected == actual, service.tail()


def _list_columns(port: int) -> list[dict[str, Any]] | None:
    """GET /v1/columns with the token; None until the server answers 200."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/columns",
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as reply:
            body: list[dict[str, Any]] = json.loads(reply.read())
            return body
    except (urllib.error.URLError, OSError):
        return None


def test_repeater_reinserts_into_a_table_with_hand_made_columns(
    typed: TypedTable,
    start_service: Callable[..., Any],
    eventually: Callable[..., Any],
) -> None:
    """A failed insert is re-inserted into the table; the repeater keeps running."""
    stack = typed.stack
    now = datetime.now(UTC).isoformat()
    row = {
        "event_id": str(uuid.uuid4()),
        "etl_tstamp": now,
        "collector_tstamp": now,
        "v_collector": "test",
        "v_etl": "test",
    }
    service = start_service(
        "plowline_repeater.cli",
        "run",
        "--config",
        str(typed.config_file({"mode": "STREAMING_INSERTS", "retry": False})),
        "--resolver",
        str(typed.resolver_file),
        "--failedInsertsSub",
        "failed-inserts-repeater",
        "--deadEndBucket",
        f"gs://plowline-dead-end/hand-made-{uuid.uuid4().hex[:6]}",
        "--port",
        "0",
    )
    publisher = publisher_client(stack.endpoints.pubsub_target)
    publisher.publish(stack.topic_path("failed-inserts"), orjson.dumps(row)).result(timeout=30)

    landed = eventually(lambda: row["event_id"] in typed.event_ids(), timeout=60)
    alive = service.process.poll() is None
    service.stop()

    assert (landed, alive) == (True, True), service.tail()
