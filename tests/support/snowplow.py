"""Snowplow's own configs and command lines on the local stack: what the tiers share (a plugin).

Registered once by the root conftest (``pytest_plugins``). For Snowplow's 0.x and 1.x
command lines: ``EXAMPLE_CONFIG`` (0.x's self-describing ``bigquery_config``, the local
stack's names), ``V1_HOCON`` (1.x's layout, ``TABLE`` to replace), ``b64`` and the base64
arguments built from them. For 2.x: the ``v2_files`` fixture (a minimal 2.x config on a new
table, its Pub/Sub names and buckets provisioned, and a resolver), ``v2_table`` and
``v2_shape`` (what 2.x's table must look like: ``V2_SHAPE``); ``V2CONFIG`` (our 2.x configs
and their registry, ``tests/data/v2config``) and ``HASH_1_0_2``, the recovery column hash
of ``com.acme/cart_item`` 1-0-2 there.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plowline_cloud.clients import bigquery_client
from plowline_devstack.stack.config import load_stack
from plowline_devstack.stack.provisioning import provision_pubsub, provision_storage
from plowline_devstack.stack.servers import free_port

from support.configs import embedded, resolver_config, write_json

if TYPE_CHECKING:
    from google.cloud import bigquery
    from plowline_devstack.stack.lifecycle import LocalStack

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "libs/devstack/src/plowline_devstack/examples"
V2CONFIG = REPO / "tests" / "data" / "v2config"
HASH_1_0_2 = "45701e70"
"""Java's String.hashCode of cart_item 1-0-2 re-encoded as the README states (checked by
``tests/integration/snowplow/test_snowplow_2x_columns.py``)."""

# -- 0.x and 1.x ----------------------------------------------------------------------------

# Snowplow 0.x: the self-describing bigquery_config (the local stack's names).
EXAMPLE_CONFIG: dict[str, Any] = json.loads((EXAMPLES / "config.json").read_text())
# A resolver with the example registry at an absolute path: a base64 resolver has no
# directory of its own, so a relative embedded path would start at the working directory.
EXAMPLE_RESOLVER = resolver_config(embedded(EXAMPLES / "iglu", name="examples"))
V1_HOCON = """
# Snowplow BigQuery Loader 1.x layout
projectId = "plowline-local"
loader {
  input { type = "PubSub", subscription = "enriched-loader" }
  output {
    good { type = "BigQuery", datasetId = "snowplow", tableId = "TABLE" }
    bad { type = "PubSub", topic = "bad-rows" }
    types { type = "PubSub", topic = "types" }
    failedInserts { type = "PubSub", topic = "failed-inserts" }
  }
  consumerSettings { maxQueueSize = 3000 }
}
mutator {
  input { type = "PubSub", subscription = "types-mutator" }
  output { good = ${loader.output.good} }
}
repeater {
  input { type = "PubSub", subscription = "failed-inserts-repeater" }
  output {
    good = ${loader.output.good}
    deadLetters { type = "Gcs", bucket = "gs://plowline-dead-end/snowplow-1x" }
  }
}
monitoring { stdout { period = "10 min" } }
"""


def b64(text: str) -> str:
    """``$(cat FILE | base64 -w 0)``, as Snowplow's guides build the arguments."""
    return base64.b64encode(text.encode()).decode()


V0_CONFIG = b64(json.dumps(EXAMPLE_CONFIG))
V1_CONFIG = b64(V1_HOCON.replace("TABLE", "events"))
RESOLVER_B64 = b64(json.dumps(EXAMPLE_RESOLVER))

# -- 2.x ------------------------------------------------------------------------------------

MONEY = ("tr_total", "ti_price_base")
V2_MINIMAL = """
license { accept = true }
input { subscription = "projects/plowline-local/subscriptions/enriched-loader" }
output {
  good { project = "plowline-local", dataset = "snowplow", table = "TABLE" }
  bad { topic = "projects/plowline-local/topics/bad-rows" }
}
monitoring.healthProbe.port = PORT
"""
V2_SHAPE = (129, ["NUMERIC", "NUMERIC"], "REQUIRED", ("DAY", "load_tstamp"), ["event_name"])
"""``v2_shape`` of 2.x's table: column count, money types, load_tstamp, partitioning, clustering."""


@pytest.fixture
def v2_files(local_stack: LocalStack, tmp_path: Path) -> Iterator[tuple[Path, Path, str, int]]:
    """A 2.x config on a new table (its Pub/Sub names and buckets provisioned), a resolver,
    the table's name and the health probe's port; the table is dropped after."""
    table, port = f"v2_{uuid.uuid4().hex[:8]}", free_port()
    config = tmp_path / "config.hocon"
    config.write_text(V2_MINIMAL.replace("TABLE", table).replace("PORT", str(port)))
    iglu = embedded(EXAMPLES / "iglu", name="examples")
    resolver = write_json(tmp_path / "resolver.json", resolver_config(iglu))
    stack, _ = load_stack(config)
    provision_pubsub(stack, local_stack.endpoints)
    provision_storage(stack, local_stack.endpoints)
    yield config, resolver, table, port
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    client.delete_table(f"{local_stack.project}.snowplow.{table}", not_found_ok=True)
    client.close()  # type: ignore[no-untyped-call]


def v2_table(local_stack: LocalStack, name: str) -> bigquery.Table:
    """Return the table ``name`` of the stack's ``snowplow`` dataset."""
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    try:
        return client.get_table(f"{local_stack.project}.snowplow.{name}")
    finally:
        client.close()  # type: ignore[no-untyped-call]


def v2_shape(table: bigquery.Table) -> tuple[Any, ...]:
    """Return what tells 2.x's table: compare with ``V2_SHAPE``."""
    fields = {field.name: field for field in table.schema}
    return (
        len(table.schema),
        [fields[name].field_type for name in MONEY],
        fields["load_tstamp"].mode,
        (table.time_partitioning.type_, table.time_partitioning.field),
        table.clustering_fields,
    )
