"""An events table with hand-made columns of every type: the mutator and the repeater, as processes, keep working.

An analyst adds BYTES, BIGNUMERIC, TIME, DATETIME, GEOGRAPHY, JSON, RANGE and INTERVAL
columns (one of them under the name the mutator would give an entity, and a RECORD of
such fields) to a fresh events table on the local stack (``hand_made_table``, in
``support.hand_made``). Then ``plowline-mutator serve`` adds a column for a new type,
reports the clash as a conflict, leaves every hand-made column as it was and answers
``GET /v1/columns``; the repeater re-inserts a row into the table. The loader's batch
processing beside the same columns, in every write mode, is tested in
``tests/integration/test_hand_made_columns.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from plowline_cloud.clients import publisher_client
from plowline_core.iglu.key import SchemaKey
from plowline_core.messages import encode_types
from plowline_core.schema.entity import EntityType, ShredProperty
from plowline_devstack.stack.servers import free_port
from support.hand_made import CHECKOUT, CLASH, HAND_MADE, TypedTable, hand_made
from support.services import Service
from support.timing import wait_for, wait_until

WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
WEB_PAGE_COLUMN = "contexts_com_snowplowanalytics_snowplow_web_page_1_0_0"
TOKEN = "hand-made-test"


@pytest.fixture
def mutator(hand_made_table: TypedTable) -> Iterator[tuple[Service, int]]:
    """``plowline-mutator serve`` (listener and API, token required) on the typed table."""
    typed = hand_made_table
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
    hand_made_table: TypedTable, mutator: tuple[Service, int]
) -> None:
    """The listener adds a new type's column, leaves the clash and every hand-made column as is."""
    typed = hand_made_table
    stack = typed.stack
    service, port = mutator
    types = [
        EntityType(SchemaKey.parse(CHECKOUT), ShredProperty.UNSTRUCT_EVENT),
        EntityType(SchemaKey.parse(WEB_PAGE), ShredProperty.CONTEXTS),
    ]
    publisher = publisher_client(stack.endpoints.pubsub_target)
    publisher.publish(stack.topic_path("types"), encode_types(types)).result(timeout=30)

    added = wait_for(lambda: WEB_PAGE_COLUMN in typed.columns(), 60, every_s=1.0)
    listed = wait_until(lambda: _list_columns(port), 30)
    alive = service.process.poll() is None
    service.stop()

    clash = next((c for c in listed or [] if c["column"] == CLASH), {})
    expected = (True, HAND_MADE, "GEOGRAPHY", True)
    actual = (added, hand_made(typed.columns()), clash.get("field", {}).get("type"), alive)
    assert expected == actual, service.tail()


def _list_columns(port: int) -> list[dict[str, Any]] | None:
    """GET /v1/columns with the token; None until the server answers 200."""
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
    hand_made_table: TypedTable,
    start_service: Callable[..., Any],
) -> None:
    """A failed insert is re-inserted into the table; the repeater keeps running."""
    typed = hand_made_table
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

    landed = wait_for(lambda: row["event_id"] in typed.event_ids(), 60, every_s=1.0)
    alive = service.process.poll() is None
    service.stop()

    assert (landed, alive) == (True, True), service.tail()
