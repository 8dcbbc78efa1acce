"""The loader's four ways to write to BigQuery, as a demo run chooses them.

A :class:`WriteMode` is one ``load`` of the Snowplow config plus what the loader needs
beside it on the local stack (a staging bucket and a short trigger for FILE_LOADS), and
says whether BigQuery drops a copy of a row the loader sends again after a crash or a
redelivery. :func:`write_config` writes the demo's ``config.json`` with that ``load``.

    name                load                                de-duplicates a re-sent row
    ──────────────────  ──────────────────────────────────  ────────────────────────────────
    insert-all          STREAMING_INSERTS                   within 60 s: insertId = event_id
    exactly-once        STORAGE_WRITE_API, exactly-once     always: PENDING streams + ledger
    write-api-default   STORAGE_WRITE_API, default          within one append (offsets),
                                                            never across deliveries
    file-loads          FILE_LOADS                          never: a load job has no insertId

Notes:
    In the two modes that do not de-duplicate, a batch the loader wrote but could not ack
    (SIGKILL between the write and the ack, an ack Pub/Sub lost) is written again when
    Pub/Sub redelivers it: at least once, as ``plowline_cloud.sinks`` documents.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STAGING_BUCKET = "plowline-staging"
"""The bucket FILE_LOADS stages its NDJSON objects in (provisioned for that mode only)."""
INSERT_ID_WINDOW_S = 60.0
"""BigQuery's best-effort insertId de-duplication, "up to one minute" (the local stack's too)."""
FILE_LOADS_TRIGGER_S = 5
"""Seconds between FILE_LOADS micro-batches on the local stack (Snowplow's minimum is 100)."""


@dataclass(frozen=True, slots=True)
class WriteMode:
    """One ``load`` of the config, what the loader needs beside it, and its duplicate rule.

    ``dedup_window_s``: how long after a row is stored a re-sent copy is dropped (``inf``:
    always; None: never, at least once).
    """

    name: str
    load: Mapping[str, Any]
    dedup_window_s: float | None
    summary: str
    loader_env: Mapping[str, str] = field(default_factory=dict)
    buckets: tuple[str, ...] = ()


WRITE_MODES: Mapping[str, WriteMode] = {
    mode.name: mode
    for mode in (
        WriteMode(
            "insert-all",
            {"mode": "STREAMING_INSERTS", "retry": False},
            INSERT_ID_WINDOW_S,
            "insertAll (streaming inserts); insertId = event_id, de-duplicated for ~60 s",
        ),
        WriteMode(
            "exactly-once",
            {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"},
            math.inf,
            "Storage Write API, PENDING streams committed behind a ledger of event ids",
        ),
        WriteMode(
            "write-api-default",
            {"mode": "STORAGE_WRITE_API", "stream": "default"},
            None,
            "Storage Write API, a COMMITTED stream with offsets (at least once across deliveries)",
        ),
        WriteMode(
            "file-loads",
            {"mode": "FILE_LOADS", "frequency": 100},
            None,
            f"load jobs of NDJSON staged in gs://{STAGING_BUCKET}, every "
            f"{FILE_LOADS_TRIGGER_S} s (at least once)",
            {
                "PLOWLINE_LOADER_STAGING_BUCKET": STAGING_BUCKET,
                "PLOWLINE_LOADER_TRIGGER_INTERVAL": str(FILE_LOADS_TRIGGER_S),
            },
            (STAGING_BUCKET,),
        ),
    )
}
"""Every write mode, by name, in the order a run of all of them takes."""


def write_mode(name: str) -> WriteMode:
    """Return the write mode called ``name``; KeyError lists the known names."""
    try:
        return WRITE_MODES[name]
    except KeyError:
        raise KeyError(f"unknown write mode {name!r}; known: {', '.join(WRITE_MODES)}") from None


def write_config(template: Path, mode: WriteMode, directory: Path) -> Path:
    """Write ``template`` (a 0.x ``bigquery_config``) with ``mode``'s load; return its path."""
    document = json.loads(template.read_text())
    document["data"]["load"] = dict(mode.load)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"config-{mode.name}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path
