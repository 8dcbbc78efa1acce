"""Exactly-once appends: PENDING write streams, committed behind a ledger of event ids.

Protocol per ``insert`` call (``prepare``, then ``commit``). The loader calls it once per
chunk of a task's partition (at most ``plowline_loader.partition.CHUNK_MESSAGES``, 500),
the repeater once per batch: each call commits its own streams, nothing is shared between
chunks, partitions or micro-batches, and exactly once is per event id, by the ledger.
``commit`` takes several prepared streams at once only for tests that stage a crash
between the two steps:

1. Drop rows whose event id the ledger already holds (``_recover`` first makes sure the
   stream that holds them is committed: see 5).
2. Append the rest to a fresh PENDING stream of the events table; finalize it. An
   append whose response is lost may have landed: that stream is abandoned (never
   committed, so never visible) and the rows go to a fresh stream, never resent blind.
3. Write one ledger row per prepared stream (``batch_id``, ``partition_id``: a fresh
   id and ``0`` from ``insert``; the events stream's name, its event ids) to a PENDING
   stream of the ledger table, finalize it and commit it: the ledger is the *prepare log*.
4. Commit the events stream(s) in one BatchCommitWriteStreams (atomic on the events
   table).
5. On a redelivery the ledger names the stream: it is committed again. BigQuery answers
   "already committed" when step 4 had happened (rows are in once) and commits it now
   when the crash fell between 3 and 4 (rows land once, from the first attempt). When
   it answers that the stream can never be committed (not found: expired or garbage-
   collected; INVALID_STREAM_STATE; SCHEMA_MISMATCH_EXTRA_FIELDS after a column was
   dropped; finalized or of the wrong type), the events table is asked which of its ids
   landed, and the others are written again on a fresh stream (step 2). Any other stream
   error is transient (the call raises; the next delivery tries again).
6. Hand-over (``hand_over``): once the loader's failed-insert publish is durable, it
   commits one ledger row of ``kind`` ``handed_over`` naming those event ids (no
   stream). From then on the ids are the repeater's: a later copy reaching the loader
   (a Pub/Sub duplicate arriving after the mutator added the column) is placed
   already, acked and not written, even while the repeater's re-insert is in flight.
   The repeater's sink (``honour_hand_overs=False``) ignores these marks: it owns the
   ids; its own re-inserts are ledgered as rows, so its duplicates are still dropped.

Notes:
    Why not one commit across both tables: BatchCommitWriteStreams commits streams of
    the one ``parent`` table it names, so events and ledger cannot share a transaction;
    the ordering above (ledger first, then events, recovery by re-commit) gives the same
    outcome. Idempotent: ``insert`` of rows already committed (same ``insert_id``), after
    a crash anywhere, adds no row. The key is ``Row.insert_id`` (= ``event_id``): two
    different events sharing an event id are treated as one (Snowplow's synthetic
    duplicates keep the first). Not covered: the *same* message processed concurrently
    by two workers before either ledger write (Pub/Sub delivers at least once; use an
    exactly-once subscription, or remove the rare duplicate by ``event_id``). If a
    prepared PENDING stream expired before the redelivery (BigQuery drops uncommitted
    streams after a while), the events table itself is asked which ids landed.
    What the hand-over leaves open: a crash (or a failing mark: the loader acks
    anyway, the failed inserts being durable) after the failed-insert publish and
    before the mark is committed leaves no mark, and a later copy of the id reaching
    the loader while the repeater re-inserts it can still be written twice (both pass
    the ledger check before either commits). The window is one ledger commit long.
    A stream judged uncommittable stays in the ledger beside the fresh one: were it let
    commit after all (a dropped column added back while it lives), its rows would land
    twice. The ids lookup on a ``--requirePartitionFilter`` table filters its partition
    column over the rows (``partition_filter``): unfiltered, BigQuery refuses it, and
    every redelivery of those ids would fail for ever.
    Ledger schema: ``kind`` (NULLABLE STRING) was added for hand-overs; NULL is a rows
    entry, so ledgers written before it read the same. ``ensure_ledger`` adds the
    column to an existing ledger (``tables.patch`` allows adding a NULLABLE column);
    a loader or repeater of an older version writes rows entries without it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from google.cloud.bigquery_storage_v1 import BigQueryWriteClient, types
from plowline_core.errors import PermanentError, TransientError
from plowline_core.ports import InsertFailure, Row, TableSchemaStore
from plowline_core.schema.field import Field, FieldType, Mode

from plowline_cloud.errors import translated
from plowline_cloud.partition_filter import Partitioning, partition_filter, partitioning_of
from plowline_cloud.table_schema import table_reference
from plowline_cloud.write_api import StreamWriter, UnansweredAppend, table_path

LEDGER_FIELDS = (
    Field("batch_id", FieldType.STRING, Mode.REQUIRED),
    Field("partition_id", FieldType.STRING, Mode.REQUIRED),
    Field("stream", FieldType.STRING, Mode.REQUIRED),
    Field("event_ids", FieldType.STRING, Mode.REPEATED),
    Field("prepared_at", FieldType.TIMESTAMP),
    Field("kind", FieldType.STRING),
)
LEDGER_DEADLINE_S = 60.0
"""How long ``ensure_ledger`` waits on each of its calls before it gives up."""
_REQUEST_TIMEOUT_S = 30.0  # one ledger/table REST request unanswered this long is abandoned
HANDED_OVER = "handed_over"
"""``kind`` of a ledger entry whose event ids the loader handed to the repeater."""
_NO_STREAM = ""  # ``stream`` is REQUIRED; a hand-over entry names none
_SEC = types.StorageError.StorageErrorCode
_NEVER_COMMITS = frozenset(
    {
        _SEC.STREAM_NOT_FOUND,  # expired or garbage-collected
        # Also bqemulator's answer to a second commit: the table then holds the ids. Its
        # words are never read ("cannot be committed" once passed for "committed").
        _SEC.INVALID_STREAM_STATE,
        _SEC.SCHEMA_MISMATCH_EXTRA_FIELDS,  # a column of its rows was dropped
        _SEC.STREAM_FINALIZED,
        _SEC.INVALID_STREAM_TYPE,
    }
)
"""Stream errors of a commit that no later commit of the same stream can undo."""


@dataclass(frozen=True, slots=True)
class Prepared:
    """Rows of one ``insert`` call, appended to a finalized PENDING stream (not yet visible)."""

    batch_id: str
    partition_id: str
    stream: str | None
    event_ids: tuple[str, ...]
    failures: tuple[InsertFailure, ...]


class _FixedSchema:
    """The ledger's schema (it never changes)."""

    def fields(self) -> tuple[Field, ...]:
        return LEDGER_FIELDS

    def refresh(self) -> tuple[Field, ...]:
        return LEDGER_FIELDS

    def add_fields(self, fields: Sequence[Field]) -> tuple[Field, ...]:
        return ()


def ensure_ledger(
    bq_client: bigquery.Client,
    ledger_ref: str | bigquery.TableReference,
    *,
    deadline: float = LEDGER_DEADLINE_S,
) -> None:
    """Create the ledger table when it does not exist; add ``kind`` to an older one.

    Each of its two calls (create, then perhaps patch) gives up after about ``deadline``
    seconds: a request whose connection or answer stalls for a third of it is abandoned,
    and retried only while two thirds have not passed. A BigQuery that accepts and never
    answers is a TransientError naming the ledger, never a wait for ever (a service's
    start-up waits on this call).
    """
    schema = [bigquery.SchemaField.from_api_repr(field.to_api()) for field in LEDGER_FIELDS]
    table = bigquery.Table(table_reference(bq_client, ledger_ref), schema=schema)
    retry = DEFAULT_RETRY.with_deadline(deadline * 2 / 3)
    timeout = deadline / 3
    with translated(f"create ledger {table.table_id} (within {deadline:g} s)"):
        live = bq_client.create_table(table, exists_ok=True, retry=retry, timeout=timeout)
    present = {field.name for field in live.schema}
    missing = [field for field in schema if field.name not in present]
    if not missing:
        return
    live.schema = [*live.schema, *missing]  # NULLABLE additions only: tables.patch allows them
    names = ", ".join(f.name for f in missing)
    with translated(f"add {names} to ledger {table.table_id} (within {deadline:g} s)"):
        bq_client.update_table(live, ["schema"], retry=retry, timeout=timeout)


class ExactlyOnceSink:
    """Exactly-once rows through PENDING streams and a ledger (satisfies ``RowSink``)."""

    def __init__(
        self,
        write_client: BigQueryWriteClient,
        bq_client: bigquery.Client,
        table_ref: str | bigquery.TableReference,
        ledger_ref: str | bigquery.TableReference,
        schema_store: TableSchemaStore,
        *,
        lookback_days: int = 8,
        fresh_streams: int = 3,
        honour_hand_overs: bool = True,
        **options: Any,
    ) -> None:
        self._client = write_client
        self._bq = bq_client
        self._table = table_reference(bq_client, table_ref)
        self._ledger = table_reference(bq_client, ledger_ref)
        self._lookback_days = lookback_days  # Pub/Sub keeps messages 7 days at most
        self._fresh_streams = fresh_streams  # streams tried when appends go unanswered
        self._honour_hand_overs = honour_hand_overs  # False for the repeater: it owns them
        self._events = StreamWriter(write_client, schema_store, **options)
        self._ledger_writer = StreamWriter(write_client, _FixedSchema(), **options)
        self._partitioning: tuple[Partitioning | None] | None = None  # read once, when needed

    @property
    def bytes_sent(self) -> int:
        """Serialized row bytes sent so far, ledger included (for benchmarks)."""
        return self._events.bytes_sent + self._ledger_writer.bytes_sent

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        """Write rows exactly once (one chunk of a partition); return the rejected ones."""
        prepared = self.prepare(uuid.uuid4().hex, "0", rows)
        self.commit([prepared])
        return list(prepared.failures)

    def prepare(self, batch_id: str, partition_id: str, rows: Sequence[Row]) -> Prepared:
        """Append the rows the ledger lacks to a finalized PENDING stream (not visible yet)."""
        fresh = self._unledgered(rows)
        if not fresh:
            return Prepared(batch_id, partition_id, None, (), ())
        stream, failures = self._append_once(fresh)
        failed = {id(failure.row) for failure in failures}
        ids = tuple(row.insert_id for row in fresh if id(row) not in failed)
        self._finalize(stream)
        return Prepared(batch_id, partition_id, stream if ids else None, ids, tuple(failures))

    def _append_once(self, rows: Sequence[Row]) -> tuple[str, list[InsertFailure]]:
        """Append ``rows`` to a fresh PENDING stream, each once; return it and the rejected rows.

        Notes:
            An append that got no response may have landed: resending it on the same
            stream could append it twice (no offsets), and both copies would be
            committed. So the stream is abandoned (an uncommitted PENDING stream never
            becomes visible) and every row is written again on a fresh one.
        """
        last: UnansweredAppend | None = None
        for _ in range(self._fresh_streams):
            stream = self._create_stream(self._table)
            try:
                return stream, self._events.write(stream, rows, resend_unanswered=False)
            except UnansweredAppend as error:
                last = error  # abandoned: never finalized, never committed
        raise TransientError(f"{self._fresh_streams} PENDING streams in a row: {last}")

    def commit(self, prepared: Sequence[Prepared]) -> None:
        """Ledger the prepared streams, then commit them in one BatchCommitWriteStreams.

        Raises:
            TransientError: a commit failed; none of the rows is visible, or the
                ledger already holds it and the next delivery completes the commit.
        """
        written = [part for part in prepared if part.stream is not None]
        if not written:
            return
        self._write_ledger([_ledger_row(part) for part in written])
        self._batch_commit(self._table, [str(part.stream) for part in written])

    def _write_ledger(self, entries: Sequence[Row]) -> None:
        """Append ``entries`` to a fresh PENDING stream of the ledger and commit it."""
        ledger_stream = self._create_stream(self._ledger)
        rejected = self._ledger_writer.write(ledger_stream, entries)
        if rejected:
            raise PermanentError(f"ledger {self._ledger.table_id} refused: {rejected[0].message}")
        self._finalize(ledger_stream)
        self._batch_commit(self._ledger, [ledger_stream])

    def hand_over(self, insert_ids: Sequence[str]) -> None:
        """Commit a ledger entry marking ``insert_ids`` as handed to the repeater (step 6).

        Raises:
            TransientError: the ledger write or commit failed; nothing is marked.
        """
        if not insert_ids:
            return
        entry = Row(
            f"handover/{uuid.uuid4().hex}",
            {
                "batch_id": uuid.uuid4().hex,
                "partition_id": HANDED_OVER,
                "stream": _NO_STREAM,
                "event_ids": sorted(set(insert_ids)),
                "prepared_at": _now_iso(),
                "kind": HANDED_OVER,
            },
        )
        self._write_ledger([entry])

    def _unledgered(self, rows: Sequence[Row]) -> list[Row]:
        """Return the rows whose event id no committed ledger entry holds (recovering first)."""
        if not rows:
            return []
        entries = self._ledger_entries([row.insert_id for row in rows])
        ledgered, landed = placed_by_ledger(entries, honour_hand_overs=self._honour_hand_overs)
        for stream, ids in ledgered.items():
            landed |= ids if self._recover(stream) else self._ids_in_table(ids, rows)
        return [row for row in rows if row.insert_id not in landed]

    def _ledger_entries(self, ids: list[str]) -> list[tuple[str, str, str | None]]:
        sql = (
            f"SELECT stream, id, kind FROM `{_full(self._ledger)}`, UNNEST(event_ids) AS id "
            "WHERE id IN UNNEST(@ids) "
            "AND prepared_at >= TIMESTAMP_SUB(CURRENT_TIMESTAMP(), INTERVAL @days DAY)"
        )
        return [
            (str(stream), str(event_id), None if kind is None else str(kind))
            for stream, event_id, kind in self._query(sql, ids)
        ]

    def _ids_in_table(self, ids: set[str], rows: Sequence[Row]) -> set[str]:
        sql = f"SELECT DISTINCT event_id FROM `{_full(self._table)}` WHERE event_id IN UNNEST(@ids)"
        partitioning = self._table_partitioning()
        extra: list[bigquery.ScalarQueryParameter] = []
        if partitioning is not None and partitioning.required:
            looked_up = [row.data for row in rows if row.insert_id in ids]
            clause, extra = partition_filter(
                partitioning, looked_up, datetime.now(UTC), self._lookback_days
            )
            sql += f" AND {clause}"
        return {str(row[0]) for row in self._query(sql, sorted(ids), extra)}

    def _table_partitioning(self) -> Partitioning | None:
        if self._partitioning is None:
            with translated(f"read the partitioning of {self._table.table_id}"):
                table = self._bq.get_table(
                    self._table,
                    retry=DEFAULT_RETRY.with_deadline(60),
                    timeout=_REQUEST_TIMEOUT_S,
                )
            self._partitioning = (partitioning_of(table),)
        return self._partitioning[0]

    def _query(
        self, sql: str, ids: Sequence[str], extra: Sequence[Any] = ()
    ) -> list[tuple[Any, ...]]:
        params = [
            bigquery.ArrayQueryParameter("ids", "STRING", list(ids)),
            bigquery.ScalarQueryParameter("days", "INT64", self._lookback_days),
            *extra,
        ]
        config = bigquery.QueryJobConfig(query_parameters=params)
        retry = DEFAULT_RETRY.with_deadline(60)
        with translated(f"read ledger {self._ledger.table_id}"):
            job = self._bq.query(
                sql, job_config=config, retry=retry, job_retry=None, timeout=_REQUEST_TIMEOUT_S
            )
            return [tuple(row.values()) for row in job.result(retry=retry, timeout=60)]

    def _recover(self, stream: str) -> bool:
        """Commit a ledgered stream again; say whether its rows are (now) in the table.

        False when BigQuery says the stream can never be committed: the caller asks the
        events table which of its ids landed, and writes the others again.

        Raises:
            TransientError: another stream error (the next delivery tries again).
        """
        errors = self._commit_errors(self._table, [stream])
        if not errors:
            return True
        if all(error.code == _SEC.STREAM_ALREADY_COMMITTED for error in errors):
            return True
        if all(error.code in _NEVER_COMMITS for error in errors):
            return False
        raise TransientError(f"recover {stream}: {errors[0].error_message}")

    def _create_stream(self, table: bigquery.TableReference) -> str:
        stream = types.WriteStream(type_=types.WriteStream.Type.PENDING)
        with translated(f"create a PENDING stream on {table.table_id}"):
            created = self._client.create_write_stream(
                parent=table_path(table), write_stream=stream
            )
        return str(created.name)

    def _finalize(self, stream: str) -> None:
        with translated(f"finalize {stream}"):
            self._client.finalize_write_stream(name=stream)

    def _batch_commit(self, table: bigquery.TableReference, streams: list[str]) -> None:
        errors = self._commit_errors(table, streams)
        if errors:
            raise TransientError(f"commit {len(streams)} streams: {errors[0].error_message}")

    def _commit_errors(
        self, table: bigquery.TableReference, streams: list[str]
    ) -> list[types.StorageError]:
        with translated(f"commit {len(streams)} streams to {table.table_id}"):
            response = self._client.batch_commit_write_streams(
                request=types.BatchCommitWriteStreamsRequest(
                    parent=table_path(table), write_streams=streams
                )
            )
        return list(response.stream_errors)


def placed_by_ledger(
    entries: Iterable[tuple[str, str, str | None]], *, honour_hand_overs: bool
) -> tuple[dict[str, set[str]], set[str]]:
    """Split ledger entries ``(stream, event id, kind)`` into streams to recover and ids placed.

    Returns the ids of each rows entry by its stream (NULL ``kind``: a rows entry, as in
    ledgers older than the column), and the ids handed to the repeater (placed already
    when ``honour_hand_overs``; ignored otherwise: the repeater owns them).
    """
    streams: dict[str, set[str]] = {}
    handed_over: set[str] = set()
    for stream, event_id, kind in entries:
        if kind == HANDED_OVER:
            if honour_hand_overs:
                handed_over.add(event_id)
        else:
            streams.setdefault(stream, set()).add(event_id)
    return streams, handed_over


def _ledger_row(part: Prepared) -> Row:
    return Row(
        f"{part.batch_id}/{part.partition_id}",
        {
            "batch_id": part.batch_id,
            "partition_id": part.partition_id,
            "stream": part.stream,
            "event_ids": list(part.event_ids),
            "prepared_at": _now_iso(),
        },
    )


def _now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _full(table: bigquery.TableReference) -> str:
    return f"{table.project}.{table.dataset_id}.{table.table_id}"
