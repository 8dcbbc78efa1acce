"""A batch's collector latencies are exactly the row-by-row ones (``collector_latency_s``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.event.latency import collector_latencies_s, collector_latency_s

pytestmark = pytest.mark.unit

_zones = st.one_of(
    st.none(),
    st.just(UTC),
    st.integers(-23 * 60, 23 * 60).map(lambda m: timezone(timedelta(minutes=m))),
)
_moments = st.builds(
    lambda moment, zone: moment.replace(tzinfo=zone),
    st.datetimes(datetime(1990, 1, 1), datetime(2090, 1, 1)),
    _zones,
)
_stamps = st.one_of(
    _moments.map(lambda moment: moment.isoformat()),
    _moments.map(lambda moment: moment.isoformat(sep=" ", timespec="milliseconds")),
    _moments.map(lambda moment: moment.isoformat().replace("+00:00", "Z")),
    st.text(max_size=30),  # mostly not ISO: left out
    st.none(),
    st.integers(),
)
_rows = st.lists(
    st.one_of(
        st.builds(lambda stamp: {"collector_tstamp": stamp, "event_id": "e"}, _stamps),
        st.just({"event_id": "no stamp"}),
    ),
    max_size=20,
)


@given(rows=_rows, written_at=_moments)
def test_batch_latencies_are_the_row_by_row_ones(
    rows: list[dict[str, Any]], written_at: datetime
) -> None:
    """Every row's latency, in order, the same float; rows without one left out."""
    one_by_one = [collector_latency_s(row, written_at) for row in rows]

    expected = [latency for latency in one_by_one if latency is not None]
    assert expected == collector_latencies_s(rows, written_at)


@pytest.mark.parametrize(
    ("stamp", "written_at", "seconds"),
    [
        pytest.param(
            "2024-02-27T05:00:59.575Z", datetime(2024, 2, 27, 5, 1, tzinfo=UTC), 0.425, id="z"
        ),
        pytest.param(
            "2024-02-27 05:00:59.575",
            datetime(2024, 2, 27, 7, 1, tzinfo=timezone(timedelta(hours=2))),
            0.425,
            id="naive-is-utc",
        ),
        pytest.param(
            "2024-02-27T07:00:59+02:00", datetime(2024, 2, 27, 5, 1), 1.0, id="naive-written-is-utc"
        ),
    ],
)
def test_batch_latency_reads_zones(stamp: str, written_at: datetime, seconds: float) -> None:
    """A naive stamp or time written is UTC; an offset is honoured."""
    assert [pytest.approx(seconds)] == collector_latencies_s(
        [{"collector_tstamp": stamp}], written_at
    )
