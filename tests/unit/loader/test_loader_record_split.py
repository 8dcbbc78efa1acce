"""Compressed batches split into records before the exactly-once shuffle, and tracked after it."""

from __future__ import annotations

import gzip
import uuid
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_cloud.pubsub.pulled import PulledMessage
from plowline_core.event.compressed import Compression, write_batch
from plowline_core.testing.tsv import enriched_line
from plowline_loader.compressed_input import Decompression
from plowline_loader.record_split import Opening, SplitTracker, Surveyor, split_rows, survey
from plowline_loader.source.settlement import split_verdict
from pyspark.sql import Row

pytestmark = pytest.mark.unit

SUBSCRIPTION = "projects/p/subscriptions/in"
LIMIT = Decompression(max_bytes_single_payload=4000, max_bytes_in_batch=5000)
LINE = enriched_line(event_id="2d6e6b1c-7a3f-4c4e-9d1a-0f6f3f0c9b11").encode()


def _lines(count: int) -> list[bytes]:
    return [enriched_line(event_id=str(uuid.uuid4())).encode() for _ in range(count)]


def _message(data: bytes, ack_id: str = "ack-1") -> PulledMessage:
    return PulledMessage(ack_id, SUBSCRIPTION, f"m-{ack_id}", 1_700_000_000_000_000, data)


NOT_SPLIT = [
    pytest.param(LINE, id="plain-line"),
    pytest.param(write_batch([], Compression.GZIP), id="empty-batch"),
    pytest.param(gzip.compress(b"\x02\x01" + write_batch([], Compression.GZIP)[2:]), id="v2"),
    pytest.param(Compression.ZSTD.signature + b"\x00not a frame", id="corrupt"),
    pytest.param(write_batch([LINE, LINE[:1] + b"x" * 5000], Compression.GZIP), id="oversized"),
    pytest.param(
        write_batch([LINE, write_batch([LINE], Compression.GZIP)], Compression.ZSTD), id="nested"
    ),
    pytest.param(write_batch([LINE, LINE], Compression.GZIP)[:-3], id="truncated"),
]


@pytest.mark.parametrize("data", NOT_SPLIT)
def test_a_delivery_that_does_not_open_cleanly_stays_one_row(data: bytes) -> None:
    """A plain line, an empty, unknown, corrupt, truncated, oversized or nested batch: as itself."""
    surveyor = Surveyor(LIMIT)
    message = _message(data)

    weight = surveyor(message)

    expected = (len(data), [[(message, None, None)]])
    assert expected == (
        weight,
        [[tuple(row) for row in g] for g in split_rows([message], surveyor)],
    )


@pytest.mark.parametrize("compression", [Compression.GZIP, Compression.ZSTD])
def test_a_clean_batch_is_one_row_per_record_weighed_by_its_lines(compression: Compression) -> None:
    """Each record a row with its index and the count; the weight is the records' bytes."""
    lines = _lines(3)
    message = _message(write_batch(lines, compression))
    surveyor = Surveyor(Decompression(4000, 10**6))

    weight = surveyor(message)
    rows = [row for group in split_rows([message], surveyor) for row in group]

    expected = (
        sum(map(len, lines)),
        [(message._replace(data=line), i, 3) for i, line in enumerate(lines)],
    )
    assert expected == (weight, [tuple(row) for row in rows])


@given(st.lists(st.integers(1, 3000), min_size=1, max_size=30))
def test_groups_stay_near_max_bytes_in_batch(sizes: list[int]) -> None:
    """Every record once, in order; a group closes once its records reach maxBytesInBatch."""
    lines = [b"x" * size for size in sizes]
    message = _message(write_batch(lines, Compression.ZSTD))
    surveyor = Surveyor(LIMIT)
    surveyor(message)

    groups = list(split_rows([message], surveyor))

    opened = [sum(len(row.message.data) for row in group) for group in groups]
    cut_early = [
        size - len(group[-1].message.data) >= LIMIT.max_bytes_in_batch
        for size, group in zip(opened, groups, strict=True)
    ]
    expected = (lines, [False] * len(groups))
    assert expected == ([row.message.data for group in groups for row in group], cut_early)


def test_surveys_are_taken_out_once_the_rows_are_made() -> None:
    """The surveyor keeps nothing once a pull's rows are made (memory across pulls)."""
    surveyor = Surveyor(LIMIT)
    message = _message(write_batch(_lines(2), Compression.GZIP))
    surveyor(message)
    list(split_rows([message], surveyor))
    assert not surveyor.openings


def _row(message: PulledMessage, record: int | None, records: int | None) -> Row:
    return Row(
        ack_id=message.ack_id,
        subscription=message.subscription,
        message_id=message.message_id,
        publish_time=datetime(2024, 5, 1, 10, 0, 0),
        data=bytearray(message.data),
        attributes={},
        record=record,
        records=records,
    )


def test_a_task_names_records_as_compressed_input_does_and_accounts_for_them() -> None:
    """Records become ``<id>#<n>``; a held record is held, a handed-back delivery has nothing durable."""
    split, handed_back, plain = _message(b"", "a"), _message(b"", "b"), _message(LINE, "c")
    rows = [
        _row(split._replace(data=LINE), 0, 4),
        _row(split._replace(data=LINE), 2, 4),
        _row(handed_back._replace(data=LINE), 1, 2),
        _row(plain, None, None),
    ]
    tracker = SplitTracker()

    ids = [message.message_id for message in tracker.messages(rows)]
    accounts = tracker.accounts({"b", "c"}, {"m-a#2"})

    expected = (
        ["m-a#0", "m-a#2", "m-b#1", "m-c"],
        frozenset({"a", "b"}),
        [("a", 4, frozenset({0}), frozenset({2})), ("b", 2, frozenset(), frozenset())],
    )
    assert expected == (
        ids,
        tracker.ack_ids,
        [(a.ack_id, a.records, a.durable, a.held) for a in accounts],
    )


def test_survey_counts_a_clean_batch() -> None:
    """Two lines: an opening of two records and their bytes."""
    assert Opening(2, 2 * len(LINE)) == survey(write_batch([LINE, LINE], Compression.GZIP), LIMIT)


@given(
    st.lists(st.integers(1, 6), min_size=1, max_size=5),
    st.integers(1, 4),
    st.data(),
)
def test_records_spread_over_tasks_ack_their_batch_only_when_all_are_durable(
    batch_sizes: list[int], tasks: int, data: st.DataObject
) -> None:
    """Batches split, their rows dealt to tasks: acked when all durable, nacked when one is not."""
    messages = [
        _message(write_batch(_lines(size), Compression.GZIP), f"ack-{n}")
        for n, size in enumerate(batch_sizes)
    ]
    surveyor = Surveyor(LIMIT)
    for message in messages:
        surveyor(message)
    rows = [row for group in split_rows(messages, surveyor) for row in group]
    dealt = [data.draw(st.integers(0, tasks - 1)) for _ in rows]
    failing = data.draw(st.sampled_from([None, *range(len(rows))]))
    accounts = []
    for task in range(tasks):
        mine = [row for row, to in zip(rows, dealt, strict=True) if to == task]
        tracker = SplitTracker()
        list(tracker.messages([_row(row.message, row.record, row.records) for row in mine]))
        not_durable = (
            set() if failing is None or dealt[failing] != task else {rows[failing].message.ack_id}
        )
        accounts.extend(tracker.accounts(not_durable, set()))

    verdict = split_verdict(accounts)

    nacked = [] if failing is None else [rows[failing].message.ack_id]
    acked = [m.ack_id for m in messages if m.ack_id not in nacked]
    expected = (sorted(acked), nacked)
    assert expected == (
        sorted(verdict.ack.get(SUBSCRIPTION, [])),
        verdict.nack.get(SUBSCRIPTION, []),
    )


def test_a_retried_action_skips_what_an_earlier_attempt_made_durable() -> None:
    """Issue 37, finding 6: rows durable in the first attempt are not processed again (no
    bad row published twice, no event counted twice); a skipped record still counts durable."""
    split, plain, fresh = _message(b"", "a"), _message(LINE, "c"), _message(LINE, "d")
    rows = [
        _row(split._replace(data=LINE), 0, 2),
        _row(split._replace(data=LINE), 1, 2),
        _row(plain, None, None),
        _row(fresh, None, None),
    ]
    tracker = SplitTracker()

    ids = [m.message_id for m in tracker.messages(rows, frozenset({"m-a#0", "m-c"}))]
    accounts = tracker.accounts(set(), set())

    expected = (["m-a#1", "m-d"], [("a", 2, frozenset({0, 1}))])
    assert expected == (ids, [(a.ack_id, a.records, a.durable) for a in accounts])
