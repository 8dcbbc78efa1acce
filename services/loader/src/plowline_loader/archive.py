"""Archived enriched TSV for ``backfill``: list local or ``gs://`` sources, read them in tasks.

A source is a file, a directory (every file below it), or ``gs://bucket/prefix`` (every
object whose name starts with the prefix). Names ending in ``.gz`` are gunzipped.
``ArchivePartition`` runs in a Spark task: it reads each file of its partition line by
line and feeds the ``BatchProcessor`` in chunks, retrying a chunk with backoff while a
dependency (registry, BigQuery, Pub/Sub) is failing.

Notes:
    Re-running a backfill is safe within BigQuery's dedup window (insertId = event_id);
    after it, rows are duplicated but removable by event_id. Picklable.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from plowline_cloud.clients import storage_client
from plowline_cloud.errors import translated
from plowline_core.errors import ConfigError, TransientError
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from plowline_loader.batch.message import InboundMessage
from plowline_loader.batch.outcome import BatchOutcome
from plowline_loader.bootstrap import WorkerConfig, processor_for

_GS = "gs://"


def list_sources(sources: Sequence[str], storage_host: str | None, project: str) -> list[str]:
    """Expand ``sources`` to a sorted list of file paths and ``gs://`` object URLs.

    Raises:
        ConfigError: a local source does not exist, or a source matches no file.
    """
    found: list[str] = []
    for source in sources:
        matched = (
            _list_gcs(source, storage_host, project)
            if source.startswith(_GS)
            else _list_local(Path(source))
        )
        if not matched:
            raise ConfigError(f"SOURCE {source}: no file found")
        found.extend(matched)
    return sorted(set(found))


def _list_local(path: Path) -> list[str]:
    if path.is_file():
        return [str(path.resolve())]
    if path.is_dir():
        return [str(p.resolve()) for p in sorted(path.rglob("*")) if p.is_file()]
    raise ConfigError(f"SOURCE {path}: no such file or directory")


def _list_gcs(url: str, storage_host: str | None, project: str) -> list[str]:
    bucket, _, prefix = url[len(_GS) :].partition("/")
    if not bucket:
        raise ConfigError(f"SOURCE {url}: names no bucket")
    client = storage_client(project, storage_host)
    with translated(f"list {url}"):
        names = [blob.name for blob in client.list_blobs(bucket, prefix=prefix)]
    return [f"{_GS}{bucket}/{name}" for name in names if not name.endswith("/")]


def read_lines(source: str, storage_host: str | None, project: str) -> Iterator[bytes]:
    """Yield the lines of one file or object, without line endings, skipping empty lines."""
    with _open(source, storage_host, project) as stream:
        for line in stream:
            stripped = line.rstrip(b"\r\n")
            if stripped:
                yield stripped


def _open(source: str, storage_host: str | None, project: str) -> IO[bytes]:
    if source.startswith(_GS):
        bucket, _, name = source[len(_GS) :].partition("/")
        client = storage_client(project, storage_host)
        with translated(f"download {source}"):
            raw: IO[bytes] = io.BytesIO(client.bucket(bucket).blob(name).download_as_bytes())
    else:
        raw = open(source, "rb")  # noqa: SIM115 - closed by the caller's with block
    if source.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    return raw


@dataclass(frozen=True)
class ArchivePartition:
    """A picklable ``mapPartitions`` function: load the partition's files, yield one outcome each."""

    config: WorkerConfig
    storage_host: str | None = None
    chunk: int = 1000
    attempts: int = 8
    backoff_s: float = 0.5

    def __call__(self, sources: Iterable[str]) -> Iterator[BatchOutcome]:
        """Process every line of every file in the partition."""
        for source in sources:
            yield self._load(source)

    def _load(self, source: str) -> BatchOutcome:
        total = BatchOutcome()
        batch: list[InboundMessage] = []
        project = self.config.bigquery.project_id
        for number, line in enumerate(read_lines(source, self.storage_host, project), 1):
            batch.append(InboundMessage(line, f"{source}:{number}"))
            if len(batch) >= self.chunk:
                total = total.merge(self._process(batch))
                batch = []
        if batch:
            total = total.merge(self._process(batch))
        return total

    def _process(self, batch: list[InboundMessage]) -> BatchOutcome:
        retrying = Retrying(
            retry=retry_if_exception_type(TransientError),
            stop=stop_after_attempt(self.attempts),
            wait=wait_exponential(multiplier=self.backoff_s, max=30.0),
            reraise=True,
        )
        outcome = retrying(processor_for(self.config).process, batch)
        return outcome.without_latencies()
