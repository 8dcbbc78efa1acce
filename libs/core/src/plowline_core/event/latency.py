"""How long an event took from the collector to the table: ``collector_tstamp`` to a row.

Both ways a row reaches the table measure it the same way (the loader's insert, the
repeater's re-insert), so the dashboard can add the two histograms into one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

LATENCY_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 3600.0)
"""Histogram bounds, in seconds, of every event-to-row latency plowline exposes."""


def collector_latency_s(row: Mapping[str, Any], written_at: datetime) -> float | None:
    """Return seconds from the row's ``collector_tstamp`` to ``written_at``; None without one.

    Notes:
        ``collector_tstamp`` is the row's ISO text (naive means UTC, as in the enriched
        TSV); a value that is not text or not ISO gives None rather than a made-up latency.
    """
    stamp = row.get("collector_tstamp")
    if not isinstance(stamp, str):
        return None
    try:
        collected = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return (_aware(written_at) - _aware(collected)).total_seconds()


def collector_latencies_s(rows: Iterable[Mapping[str, Any]], written_at: datetime) -> list[float]:
    """Return ``collector_latency_s`` of each row that has one, in order (rows without are left out).

    Notes:
        The same floats as ``collector_latency_s`` row by row (held to it by a property
        test), in a third less time: the time written is made aware once, and a naive
        stamp (UTC) is taken from the naive UTC wall time, never made aware itself.
    """
    written = _aware(written_at)
    written_naive = written.astimezone(UTC).replace(tzinfo=None)
    parse = datetime.fromisoformat
    latencies: list[float] = []
    for row in rows:
        stamp = row.get("collector_tstamp")
        if isinstance(stamp, str):
            try:
                collected = parse(stamp)
            except ValueError:
                continue
            since = written_naive if collected.tzinfo is None else written
            latencies.append((since - collected).total_seconds())
    return latencies


def _aware(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
