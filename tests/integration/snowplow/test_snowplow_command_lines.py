"""Snowplow's documented mutator commands (0.x and 1.x) make the table and its column on the local stack.

``create`` and ``add-column`` are one-shot commands: each test runs them with the arguments
exactly as Snowplow's setup guides write them (base64 configs from ``support.snowplow``),
changing only the program name. Every service started, as a process, from Snowplow's
command lines is tested in ``tests/e2e/snowplow/test_snowplow_command_lines.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from plowline_cloud.clients import bigquery_client
from plowline_devstack.stack.lifecycle import LocalStack
from support.snowplow import EXAMPLE_CONFIG, RESOLVER_B64, V1_HOCON, b64


@pytest.fixture
def fresh_table(local_stack: LocalStack) -> Iterator[str]:
    """The name of a table that does not exist yet in the stack's dataset (dropped after)."""
    name = f"created_{uuid.uuid4().hex[:8]}"
    yield name
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    client.delete_table(f"{local_stack.project}.{local_stack.dataset}.{name}", not_found_ok=True)
    client.close()  # type: ignore[no-untyped-call]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, timeout=120, env=os.environ
    )


@pytest.mark.parametrize(
    "config", [pytest.param("0.x", id="0.x-json"), pytest.param("1.x", id="1.x-hocon")]
)
def test_mutator_create_and_add_column_take_snowplows_arguments(
    local_stack: LocalStack, fresh_table: str, config: str
) -> None:
    """``create`` and ``add-column`` with --config and --resolver make the table and its column."""
    clean = 0  # the exit code of a command that did its job
    if config == "0.x":
        document = json.loads(json.dumps(EXAMPLE_CONFIG))
        document["data"]["tableId"] = fresh_table
        encoded = b64(json.dumps(document))
    else:
        encoded = b64(V1_HOCON.replace("TABLE", fresh_table))
    common = [f"--config={encoded}", f"--resolver={RESOLVER_B64}"]

    created = _run(
        "plowline_mutator.cli", "create", *common,
        "--partitionColumn=load_tstamp", "--requirePartitionFilter",
    )  # fmt: skip
    added = _run(
        "plowline_mutator.cli", "add-column", *common, "--shredProperty=CONTEXTS",
        "--schema=iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0",
    )  # fmt: skip

    assert (clean, clean) == (created.returncode, added.returncode), created.stderr + added.stderr
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    table = client.get_table(f"{local_stack.project}.{local_stack.dataset}.{fresh_table}")
    client.close()  # type: ignore[no-untyped-call]
    column = "contexts_com_snowplowanalytics_snowplow_web_page_1_0_0"
    expected = (True, "load_tstamp")
    assert expected == (column in {f.name for f in table.schema}, table.time_partitioning.field)
