"""The loader's one composition root: the Google clients, the adapters and the BatchProcessor.

The driver reads and validates the files once (``worker_config``); the resulting
``WorkerConfig`` is a small picklable value that Spark ships to every task, and
``processor_for(config)`` builds the clients and the processor lazily, once per Python
worker process, on the executor that needs them.

Notes:
    Clients are neither picklable nor fork-safe: the cache is keyed by the process id, so
    a forked worker builds its own. Nothing here reads the environment: the settings did.
    ``load.mode`` picks the table's sink (``plowline_cloud.sinks.row_sink_for``); only the
    clients that mode needs are built (Storage Write for STORAGE_WRITE_API, Cloud Storage
    for FILE_LOADS). Every sink returns its refused rows, so the routing of failed
    inserts, bad rows and types is the same in every mode. Exactly-once commits each
    partition's PENDING stream (ledger first) before the partition acks: a redelivered
    batch finds its event ids in the ledger and adds no row; copies within one batch
    are kept to one task and one write (``batch.event_key``).
    A 2.x config (column mode ``major``) gets 2.x's failed events (``failed_events``).
    The resolver config travels as its JSON text plus the directory that relative
    embedded repositories are resolved against (which must exist on every executor).
    Memory (a loader pod's PSS budget): the Google client modules are imported when a processor is built,
    not with this module, so the driver and the source's reader processes never load them.
    A Snowplow 2.x config brings 2.x's settings (``read_config``), and the driver creates
    2.x's table when it is missing (``create_v2_table``), as loader 2.x does at start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from plowline_cloud.clock import SystemClock
from plowline_cloud.config_source import load_document, load_pipeline_config
from plowline_cloud.iglu import registries_from_config
from plowline_cloud.per_process import PerProcess
from plowline_cloud.pubsub.paths import subscription_path, topic_path
from plowline_core.badrows import Processor
from plowline_core.config import BigQueryConfig, LoaderOptions, LoadKind, WriteStreamKind
from plowline_core.distinct_rows import DistinctRowSink
from plowline_core.errors import ConfigError
from plowline_core.event.fields import V2_ATOMIC_COLUMNS, V2_CLUSTER_BY, V2_PARTITION_COLUMN
from plowline_core.grants import Grant, ResourceKind
from plowline_core.iglu.config import ResolverConfig, parse_not_found
from plowline_core.iglu.resolver import Resolver
from plowline_core.pipeline_config import PipelineConfig
from plowline_core.ports import RowSink, TableSchemaStore
from plowline_core.schema.entity import ColumnMode
from plowline_core.schema.legacy import ColumnRules
from plowline_core.transform.row import RowBuilder

from plowline_loader.batch.announcements import DEFAULT_REPUBLISH_AFTER_S, TypeTracker
from plowline_loader.batch.failed_events import FailedEventStyle
from plowline_loader.batch.processor import BatchProcessor, Destinations
from plowline_loader.batch.schema_hold import SchemaHold
from plowline_loader.batch.sizes import Limits
from plowline_loader.compressed_input import Decompression

if TYPE_CHECKING:
    from google.cloud import bigquery

    from plowline_loader.settings import LoaderSettings  # pydantic-settings: driver only

ARTIFACT = "plowline-loader"


GRANTS: tuple[Grant, ...] = (
    Grant("roles/pubsub.subscriber", ResourceKind.SUBSCRIPTION, "input"),
    Grant("roles/pubsub.publisher", ResourceKind.TOPIC, "typesTopic"),
    Grant("roles/pubsub.publisher", ResourceKind.TOPIC, "badRows"),
    Grant("roles/pubsub.publisher", ResourceKind.TOPIC, "failedInserts"),
    Grant("roles/bigquery.dataEditor", ResourceKind.DATASET, "datasetId"),
    Grant("roles/storage.objectAdmin", ResourceKind.BUCKET, "--checkpoint"),
)
"""What the loader's clients need (``plowline_core.grants``; deploy/GKE.md grants these).

FILE_LOADS also needs ``roles/bigquery.jobUser`` on the project and
``roles/storage.objectAdmin`` on ``--staging-bucket`` (GKE.md says so where it grants).
"""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """What an executor needs to build its BatchProcessor (picklable, hashable).

    Notes:
        ``resolver_json`` is left out of the repr: it holds the Iglu registries' apikeys,
        and a repr reaches logs and Spark's task errors.
    """

    bigquery: BigQueryConfig
    resolver_json: str = field(repr=False)
    resolver_dir: str
    column_mode: ColumnMode
    version: str
    pubsub_emulator_host: str | None = None
    bigquery_emulator_host: str | None = None
    schema_refresh_s: float = 60.0
    max_bad_row_bytes: int = 6_900_000
    insert_batch_rows: int = 2000  # partition.CHUNK_MESSAGES: a chunk, one request
    bigquery_grpc_host: str | None = None
    storage_emulator_host: str | None = None
    staging_bucket: str | None = None
    ledger_table: str | None = None
    iglu_not_found: str | None = None
    types_republish_s: float = DEFAULT_REPUBLISH_AFTER_S
    options: LoaderOptions = field(default_factory=LoaderOptions)
    creates_table: bool = False  # a 2.x config: the driver creates 2.x's table if missing

    decompression: Decompression = field(default_factory=Decompression)
    schema_hold: SchemaHold = field(default_factory=SchemaHold)

    @property
    def column_rules(self) -> ColumnRules:
        """The 2.x per-schema switches (skipSchemas, legacyColumns) the row builder takes."""
        return self.options.column_rules

    @property
    def exactly_once(self) -> bool:
        """Whether ``load`` is STORAGE_WRITE_API on the exactly-once stream."""
        load = self.bigquery.load
        return (
            load.mode is LoadKind.STORAGE_WRITE_API and load.stream is WriteStreamKind.EXACTLY_ONCE
        )

    def topic(self, name: str) -> str:
        """Return the full path of a topic named in the config (short names: its project)."""
        return topic_path(self.bigquery.project_id, name)

    @property
    def input_subscription(self) -> str:
        """The full path of the enriched input subscription."""
        return subscription_path(self.bigquery.project_id, self.bigquery.input)


def load_bigquery_config(value: str | Path) -> BigQueryConfig:
    """Read and validate the Snowplow config (0.x JSON or 1.x HOCON; a path or base64)."""
    return load_pipeline_config(value, "--config").bigquery


def read_config(settings: LoaderSettings) -> tuple[LoaderSettings, PipelineConfig]:
    """Read ``--config`` (once): the settings with a 2.x config's values, and the config.

    Raises:
        ConfigError: the config is missing or invalid.
    """
    overrides = {
        "types_topic": settings.types_topic,
        "failed_inserts_topic": settings.failed_inserts_topic,
    }
    pipeline = load_pipeline_config(settings.config, "--config", v2_overrides=overrides)
    return settings.with_config(pipeline), pipeline


def worker_config(
    settings: LoaderSettings, version: str, pipeline: PipelineConfig | None = None
) -> WorkerConfig:
    """Read the configs named by ``settings`` and return the executors' config.

    ``pipeline``: the config ``read_config`` returned with ``settings`` (read here if None).

    Raises:
        ConfigError: a config is missing or invalid (the resolver is built once to check it).
    """
    if pipeline is None:
        settings, pipeline = read_config(settings)
    bigquery = pipeline.bigquery
    resolver, source = load_document(settings.resolver, "--resolver")
    config = WorkerConfig(
        bigquery=bigquery,
        resolver_json=orjson.dumps(resolver).decode(),
        resolver_dir=str(source.base_dir),
        column_mode=settings.column_mode,
        version=version,
        pubsub_emulator_host=settings.pubsub_emulator_host,
        bigquery_emulator_host=settings.bigquery_emulator_host,
        schema_refresh_s=settings.schema_refresh,
        max_bad_row_bytes=settings.max_bad_row_bytes,
        insert_batch_rows=settings.insert_batch_rows,
        bigquery_grpc_host=settings.bigquery_emulator_grpc_host,
        storage_emulator_host=settings.storage_emulator_host,
        staging_bucket=staging_bucket(settings.staging_bucket, bigquery),
        ledger_table=settings.ledger_table,
        iglu_not_found=settings.iglu_not_found,
        types_republish_s=settings.too_many_columns_delay,
        options=settings.options(pipeline),
        creates_table=pipeline.v2 is not None,
        decompression=Decompression(settings.max_bytes_single_payload, settings.max_bytes_in_batch),
        schema_hold=settings.schema_hold(),
    )
    build_resolver(config)
    return config


def create_v2_table(config: WorkerConfig) -> bool:
    """Create loader 2.x's table unless the table exists (kept as it is); True if created now.

    Raises:
        PlowlineError: BigQuery refused or failed (e.g. no such dataset, no permission).
    """
    from plowline_cloud.clients import bigquery_client
    from plowline_cloud.events_table import create_events_table

    bigquery = config.bigquery
    client = bigquery_client(bigquery.project_id, config.bigquery_emulator_host)
    try:
        return create_events_table(
            client,
            bigquery.table_ref,
            V2_ATOMIC_COLUMNS,
            partition_column=V2_PARTITION_COLUMN,
            cluster_by=V2_CLUSTER_BY,
            check_existing=False,
        )
    finally:
        client.close()  # type: ignore[no-untyped-call]  # untyped in the client


def staging_bucket(value: str | None, bigquery: BigQueryConfig) -> str | None:
    """Return the FILE_LOADS staging bucket's name (``gs://`` optional).

    Raises:
        ConfigError: FILE_LOADS without a bucket, or a value that is not a bucket.
    """
    if value is None:
        if bigquery.load.mode is LoadKind.FILE_LOADS:
            raise ConfigError(
                "load.mode FILE_LOADS needs --staging-bucket (PLOWLINE_LOADER_STAGING_BUCKET)"
            )
        return None
    name = value.removeprefix("gs://").rstrip("/")
    if not name or "/" in name:
        raise ConfigError(f"--staging-bucket: {value!r} must be a bucket name or gs://bucket")
    return name


def build_resolver(config: WorkerConfig) -> Resolver:
    """Return the Iglu resolver of ``config`` (ConfigError naming the file's problem)."""
    try:
        parsed = ResolverConfig.parse(orjson.loads(config.resolver_json))
    except orjson.JSONDecodeError as error:
        raise ConfigError(f"--resolver: not JSON: {error}") from error
    except ConfigError as error:
        raise ConfigError(f"--resolver: {error}") from error
    try:
        parsed = parsed.with_not_found(parse_not_found(config.iglu_not_found or ""))
    except ConfigError as error:
        raise ConfigError(f"--iglu-not-found: {error}") from error
    try:
        registries = registries_from_config(parsed, Path(config.resolver_dir))
        return Resolver.from_config(parsed, registries, SystemClock())
    except ConfigError as error:
        raise ConfigError(f"--resolver: {error}") from error


def build_processor(config: WorkerConfig) -> BatchProcessor:
    """Build the clients, the adapters and the BatchProcessor of ``config``."""
    from plowline_cloud.clients import bigquery_client, publish_api_client
    from plowline_cloud.pubsub.publisher import PubSubPublisher
    from plowline_cloud.table_schema import BigQueryTableSchemaStore

    clock = SystemClock()
    bigquery = config.bigquery
    client = bigquery_client(bigquery.project_id, config.bigquery_emulator_host)
    schema = BigQueryTableSchemaStore(client, bigquery.table_ref, config.schema_refresh_s, clock)
    from plowline_cloud.write_api_pending import ExactlyOnceSink

    sink = build_row_sink(config, client, schema)
    # Whole batches in whole Publish requests (bad rows, failed inserts, types: fewer, larger requests cost less CPU).
    publisher = publish_api_client(config.pubsub_emulator_host)
    destinations = Destinations(
        schema=schema,
        table=DistinctRowSink(sink) if config.exactly_once else sink,
        hand_over=sink if isinstance(sink, ExactlyOnceSink) else None,
        types=PubSubPublisher(publisher, config.topic(bigquery.types_topic)),
        bad_rows=PubSubPublisher(publisher, config.topic(bigquery.bad_rows)),
        failed_inserts=PubSubPublisher(publisher, config.topic(bigquery.failed_inserts)),
    )
    builder = RowBuilder(build_resolver(config), config.column_mode, rules=config.column_rules)
    return BatchProcessor(
        builder,
        destinations,
        TypeTracker(config.column_mode, config.types_republish_s, routes=builder.column_of),
        clock,
        Processor(ARTIFACT, config.version),
        Limits(max_bad_row_bytes=config.max_bad_row_bytes),
        failed_event_style(config.column_mode),
        config.schema_hold,
    )


def failed_event_style(column_mode: ColumnMode) -> FailedEventStyle:
    """Return whose failed events the loader writes: 2.x's for a 2.x config (``major``)."""
    if column_mode is ColumnMode.MAJOR:
        return FailedEventStyle.LOADER_2X
    return FailedEventStyle.LOADER_1X


def build_row_sink(
    config: WorkerConfig, client: bigquery.Client, schema: TableSchemaStore
) -> RowSink:
    """Return the table's sink for ``load.mode``, building the extra clients it needs.

    Notes:
        In exactly-once mode ``build_processor`` wraps it in ``DistinctRowSink`` and
        hands it the ids of the failed inserts it published (``Destinations.hand_over``).
    """
    from plowline_cloud.bigquery import BigQueryRowSink
    from plowline_cloud.clients import storage_client
    from plowline_cloud.sinks import SinkClients, row_sink_for
    from plowline_cloud.write_api import write_client

    bigquery_config = config.bigquery
    load = bigquery_config.load
    if load.mode is LoadKind.STREAMING_INSERTS:
        # Built here rather than by row_sink_for: the request size is a loader setting.
        return BigQueryRowSink(
            client, bigquery_config.table_ref, schema, max_rows=config.insert_batch_rows
        )
    clients = SinkClients(
        bigquery=client,
        write=write_client(config.bigquery_grpc_host)
        if load.mode is LoadKind.STORAGE_WRITE_API
        else None,
        storage=storage_client(bigquery_config.project_id, config.storage_emulator_host)
        if load.mode is LoadKind.FILE_LOADS
        else None,
        staging_bucket=config.staging_bucket,
        ledger_table=config.ledger_table,
    )
    return row_sink_for(load, clients, bigquery_config.table_ref, schema)


processor_for: PerProcess[WorkerConfig, BatchProcessor] = PerProcess(build_processor)
"""This process's BatchProcessor for a ``WorkerConfig``, built on first use.

One per Python worker process: the type tracker's deduplication and the cached table
schema live as long as the worker (Spark reuses workers between tasks)."""


def task_processor(config: WorkerConfig) -> BatchProcessor:
    """Return this process's ``processor_for(config)``: the factory the driver hands its tasks.

    Notes:
        A module-level function, so a task's pickled function carries it by reference
        (``processor_for`` holds a lock and, in the driver, built clients: never pickled).
    """
    return processor_for(config)
