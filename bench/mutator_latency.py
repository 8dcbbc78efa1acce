"""Mutation lag on the local stack: type published on the types topic → column visible (tables.get).

Starts the local stack (``plowline_devstack.stack.lifecycle.start_stack``), runs the mutator's
listener in-process on the provisioned ``types-mutator`` subscription, publishes ``N`` new
types one by one and, for each, polls ``tables.get`` until the column is there.

    uv run python bench/mutator_latency.py [--types 100] [--poll 0.02] [--column-mode major]

Prints p50 / p90 / p99 / max in seconds (target: p50 <= 1 s, p99 <= 3 s).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from plowline_cloud.bigquery import BigQueryTableSchemaStore
from plowline_cloud.clients import bigquery_client, publish_api_client, subscriber_client
from plowline_cloud.clock import SystemClock
from plowline_cloud.pubsub.publisher import PubSubPublisher
from plowline_cloud.pubsub.streaming import PubSubSubscriber
from plowline_core.iglu.config import HttpConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.messages import encode_types
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.names import column_name
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry
from plowline_devstack.stack.lifecycle import start_stack
from plowline_devstack.stack.provisioning import StackConfig
from plowline_mutator.listener import TypesListener
from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator


def _types(count: int) -> tuple[InMemoryRegistry, list[EntityType]]:
    registry = InMemoryRegistry("bench")
    types: list[EntityType] = []
    run = datetime.now(UTC).strftime("%H%M%S")
    for index in range(count):
        key = SchemaKey.parse(f"iglu:com.acme.bench/type_{run}_{index}/jsonschema/1-0-0")
        registry.add(key, {"type": "object", "properties": {"value": {"type": "string"}}})
        shred = ShredProperty.CONTEXTS if index % 2 else ShredProperty.UNSTRUCT_EVENT
        types.append(EntityType(key, shred))
    return registry, types


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    """Run the benchmark and print the latency figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", type=int, default=100, help="new types published (100)")
    parser.add_argument("--poll", type=float, default=0.02, help="tables.get poll interval (s)")
    parser.add_argument(
        "--column-mode",
        choices=[mode.value for mode in ColumnMode],
        default=ColumnMode.FULL.value,
        help="the mutator's column mode (major: Loader 2.x's columns; default full)",
    )
    args = parser.parse_args()
    mode = ColumnMode(args.column_mode)
    with tempfile.TemporaryDirectory() as tmp:
        stack = start_stack(Path(tmp), StackConfig(), persistent=False)
        try:
            endpoints = stack.endpoints
            bq = bigquery_client(stack.project, endpoints.bigquery_url)
            registry, types = _types(args.types)
            ref = RepositoryRef("bench", 0, (), HttpConnection("http://127.0.0.1:1"))
            resolver = Resolver([(ref, registry)], FixedClock(datetime.now(UTC)))
            store = BigQueryTableSchemaStore(bq, stack.table_ref, 60.0, SystemClock())
            mutator = Mutator(resolver, store, mode, threading.Lock())
            subscriber = PubSubSubscriber(
                subscriber_client(endpoints.pubsub_target), stack.subscription_path("types-mutator")
            )
            subscriber.start(TypesListener(mutator, MutatorMetrics()))
            publisher = PubSubPublisher(
                publish_api_client(endpoints.pubsub_target), stack.topic_path("types")
            )
            lags: list[float] = []
            for entity in types:
                name = column_name(entity.schema, entity.shred_property, mode)
                started = time.perf_counter()
                publisher.publish([encode_types([entity])])
                while name not in {f.name for f in bq.get_table(stack.table_ref).schema}:
                    time.sleep(args.poll)
                lags.append(time.perf_counter() - started)
            subscriber.stop(10)
        finally:
            stack.stop()
    print(
        f"mutator latency, column mode {mode.value}, {len(lags)} types published one by one "
        "(publish -> tables.get):"
    )
    print(
        f"  p50 {statistics.median(lags):.3f} s   p90 {_percentile(lags, 0.9):.3f} s   "
        f"p99 {_percentile(lags, 0.99):.3f} s   max {max(lags):.3f} s   mean {statistics.fmean(lags):.3f} s"
    )


if __name__ == "__main__":
    main()
