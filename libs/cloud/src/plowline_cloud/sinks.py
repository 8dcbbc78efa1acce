"""Choose the BigQuery sink for ``load.mode``.

    load.mode                       sink                 delivery
    ──────────────────────────────  ───────────────────  ─────────────────────────────
    STREAMING_INSERTS               BigQueryRowSink      at least once (insertAll)
    FILE_LOADS                      FileLoadSink         at least once (load jobs)
    STORAGE_WRITE_API, default      WriteApiRowSink      at least once (a COMMITTED stream)
    STORAGE_WRITE_API, exactly-once ExactlyOnceSink      exactly once per event id

Notes:
    Every sink satisfies ``RowSink``; a loader task calls ``insert`` once per chunk of
    its partition (at most ``partition.CHUNK_MESSAGES``, 500 messages) and acks its
    deliveries once its ``insert`` returned. ``ExactlyOnceSink.insert`` commits its own
    PENDING stream each call (one BatchCommitWriteStreams per chunk, nothing shared
    between chunks or partitions), so exactly once is per event id, by its ledger:
    it recognises ids committed by an earlier call, not two copies in one call;
    ``plowline_core.distinct_rows.DistinctRowSink`` writes each insert id once per call
    (the loader and the repeater wrap it so in exactly-once mode).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.cloud import bigquery
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient
from plowline_core.config import LoadKind, LoadMode, WriteStreamKind
from plowline_core.errors import ConfigError
from plowline_core.ports import RowSink, TableSchemaStore

from plowline_cloud.load_jobs import FileLoadSink
from plowline_cloud.row_sink import BigQueryRowSink
from plowline_cloud.table_schema import table_reference
from plowline_cloud.write_api_committed import WriteApiRowSink
from plowline_cloud.write_api_pending import ExactlyOnceSink, ensure_ledger


@dataclass(frozen=True, slots=True)
class SinkClients:
    """What the sinks may need; a composition root fills what its ``load.mode`` uses.

    Attributes:
        bigquery: the REST client (insertAll, load jobs, ledger queries).
        write: the Storage Write client (``write_api.write_client``).
        storage: the Cloud Storage client (staging for FILE_LOADS).
        staging_bucket: the bucket FILE_LOADS stages objects in.
        ledger_table: ``project.dataset.table`` of the exactly-once ledger
            (default: ``<events table>_ledger``).
    """

    bigquery: bigquery.Client
    write: BigQueryWriteClient | None = None
    storage: Any = None
    staging_bucket: str | None = None
    ledger_table: str | None = None


def row_sink_for(
    load: LoadMode,
    clients: SinkClients,
    table_ref: str | bigquery.TableReference,
    schema_store: TableSchemaStore,
) -> RowSink:
    """Return the sink that implements ``load`` for one table.

    Raises:
        ConfigError: a client the mode needs is missing.
    """
    table = table_reference(clients.bigquery, table_ref)
    insert_all = BigQueryRowSink(clients.bigquery, table, schema_store)
    if load.mode is LoadKind.STREAMING_INSERTS:
        return insert_all
    if load.mode is LoadKind.FILE_LOADS:
        if clients.storage is None or not clients.staging_bucket:
            raise ConfigError(
                "load.mode FILE_LOADS: a storage client and staging bucket are needed"
            )
        return FileLoadSink(
            clients.bigquery,
            clients.storage,
            clients.staging_bucket,
            table,
            schema_store,
            insert_all,
        )
    if clients.write is None:
        raise ConfigError("load.mode STORAGE_WRITE_API: a Storage Write client is needed")
    if load.stream is WriteStreamKind.EXACTLY_ONCE:
        ledger = clients.ledger_table or (
            f"{table.project}.{table.dataset_id}.{table.table_id}_ledger"
        )
        ensure_ledger(clients.bigquery, ledger)
        return ExactlyOnceSink(clients.write, clients.bigquery, table, ledger, schema_store)
    return WriteApiRowSink(clients.write, table, schema_store)
