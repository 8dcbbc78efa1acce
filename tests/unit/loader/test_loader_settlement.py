"""The one rule that settles a message: the task's verdict, and the driver's for split deliveries."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_loader.source.settlement import (
    RecordAccount,
    SplitVerdict,
    Verdict,
    split_verdict,
    verdict,
)

pytestmark = pytest.mark.unit

SUBSCRIPTIONS = ("projects/p/subscriptions/a", "projects/p/subscriptions/b")
DURABLE, HELD, NOT_DURABLE = "durable", "held", "not durable"

# One delivery: its subscription, and per record (the task it went to, what became of it).
deliveries = st.lists(
    st.tuples(
        st.sampled_from(SUBSCRIPTIONS),
        st.lists(
            st.tuples(st.integers(0, 3), st.sampled_from([DURABLE, HELD, NOT_DURABLE])),
            min_size=1,
            max_size=12,
        ),
    ),
    max_size=8,
)


def _accounts(drawn: list[tuple[str, list[tuple[int, str]]]]) -> list[RecordAccount]:
    """Return the accounts the tasks report: one per task and delivery it held records of."""
    accounts = []
    for number, (subscription, records) in enumerate(drawn):
        for task in sorted({task for task, _ in records}):
            mine = [(i, state) for i, (t, state) in enumerate(records) if t == task]
            accounts.append(
                RecordAccount(
                    f"ack-{number}",
                    subscription,
                    len(records),
                    frozenset(i for i, state in mine if state == DURABLE),
                    frozenset(i for i, state in mine if state == HELD),
                )
            )
    return accounts


def _expected(drawn: list[tuple[str, list[tuple[int, str]]]]) -> dict[str, str]:
    expected = {}
    for number, (_, records) in enumerate(drawn):
        states = {state for _, state in records}
        verdict = "nack" if NOT_DURABLE in states else "later" if HELD in states else "ack"
        expected[f"ack-{number}"] = verdict
    return expected


def _verdicts(verdict: SplitVerdict) -> dict[str, str]:
    found = {}
    for name, group in (("ack", verdict.ack), ("nack", verdict.nack), ("later", verdict.later)):
        for ids in group.values():
            found.update(dict.fromkeys(ids, name))
    return found


@given(deliveries)
def test_a_delivery_is_acked_exactly_when_all_its_records_are_durable(
    drawn: list[tuple[str, list[tuple[int, str]]]],
) -> None:
    """Acked iff every record is durable; nacked if one is not; later if one is held."""
    assert _expected(drawn) == _verdicts(split_verdict(_accounts(drawn)))


@given(deliveries, st.randoms(use_true_random=False))
def test_the_verdict_does_not_depend_on_the_order_of_the_reports(
    drawn: list[tuple[str, list[tuple[int, str]]]], shuffler: random.Random
) -> None:
    """The tasks' accounts in any order give the same verdict per ack id."""
    accounts = _accounts(drawn)
    shuffled = shuffler.sample(accounts, len(accounts))
    assert _verdicts(split_verdict(accounts)) == _verdicts(split_verdict(shuffled))


def test_a_record_no_task_reported_leaves_its_delivery_unacked() -> None:
    """Three records, two reported durable: the third is not accounted for, so it is nacked."""
    accounts = [
        RecordAccount("a", SUBSCRIPTIONS[0], 3, frozenset({0})),
        RecordAccount("a", SUBSCRIPTIONS[0], 3, frozenset({2})),
    ]
    assert {SUBSCRIPTIONS[0]: ["a"]} == split_verdict(accounts).nack


def test_a_record_durable_in_one_task_and_held_in_another_counts_as_durable() -> None:
    """A copy written elsewhere is durable: the delivery is acked, not held."""
    accounts = [
        RecordAccount("a", SUBSCRIPTIONS[0], 2, frozenset({0, 1})),
        RecordAccount("a", SUBSCRIPTIONS[0], 2, frozenset(), frozenset({1})),
    ]
    assert {SUBSCRIPTIONS[0]: ["a"]} == split_verdict(accounts).ack


def test_deliveries_are_settled_per_subscription() -> None:
    """Two subscriptions' deliveries are named under their own subscription."""
    accounts = [
        RecordAccount("a", SUBSCRIPTIONS[0], 1, frozenset({0})),
        RecordAccount("b", SUBSCRIPTIONS[1], 1, frozenset({0})),
    ]
    assert {SUBSCRIPTIONS[0]: ["a"], SUBSCRIPTIONS[1]: ["b"]} == split_verdict(accounts).ack


@pytest.mark.parametrize(
    ("records", "durable", "held", "expected"),
    [
        pytest.param(3, {0, 1, 2}, set(), Verdict.ACK, id="all-durable-ack"),
        pytest.param(0, set(), set(), Verdict.ACK, id="an-empty-batch-ack"),
        pytest.param(3, set(), set(), Verdict.NACK, id="nothing-written-nack"),
        pytest.param(None, set(), set(), Verdict.NACK, id="never-read-nack"),
        pytest.param(3, set(), {1}, Verdict.NACK, id="nothing-written-one-failed-nack"),
        pytest.param(2, set(), {0, 1}, Verdict.PARK, id="all-held-park"),
        pytest.param(3, {0, 2}, {1}, Verdict.PARK, id="siblings-written-one-held-park"),
        pytest.param(3, {0}, set(), Verdict.PARK, id="siblings-written-one-failed-park"),
        pytest.param(None, {0}, set(), Verdict.PARK, id="partly-read-park"),
    ],
)
def test_a_task_settles_a_message_by_what_its_records_became(
    records: int | None, durable: set[int], held: set[int], expected: Verdict
) -> None:
    """Acked when all durable, nacked when nothing was written (and not all held), parked
    when some records are written and others wait, or when all wait for a schema."""
    account = RecordAccount("a", SUBSCRIPTIONS[0], records, frozenset(durable), frozenset(held))
    assert expected == verdict(account)


@given(
    records=st.integers(0, 8),
    durable=st.sets(st.integers(0, 7)),
    held=st.sets(st.integers(0, 7)),
)
def test_a_message_with_a_written_record_is_never_handed_back_by_a_task(
    records: int, durable: set[int], held: set[int]
) -> None:
    """Issue 37, finding 2: a message any record of which is durable is acked or parked,
    never nacked (its redelivery would write that record again)."""
    durable = {i for i in durable if i < records}
    account = RecordAccount("a", SUBSCRIPTIONS[0], records, frozenset(durable), frozenset(held))
    settled = verdict(account)
    assert (settled is Verdict.NACK) == (not durable and not set(range(records)) <= held | durable)
