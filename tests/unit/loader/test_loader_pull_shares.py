"""Specification of the share rule: a micro-batch's probe is spread over its partitions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_cloud.pubsub.subscription import MAX_PULL
from plowline_loader.source.pulls import MAX_MESSAGE_BYTES, probe_size, shares

MiB = 1024 * 1024


@given(
    messages=st.integers(0, 2 * MAX_PULL),
    partitions=st.integers(1, 16),
    max_messages=st.integers(1, 20_000),
)
def test_every_probed_message_goes_to_one_partition_in_even_shares(
    messages: int, partitions: int, max_messages: int
) -> None:
    """Each probed message is dealt exactly once and no two shares differ by more than one."""
    probed = list(range(messages))
    dealt = [share for share, _ in shares(probed, partitions, max_messages)]
    sizes = [len(share) for share in dealt]
    expected = (probed, True)
    assert expected == (sorted(m for share in dealt for m in share), max(sizes) - min(sizes) <= 1)


@given(
    messages=st.integers(0, MAX_PULL),
    partitions=st.integers(1, 16),
    max_messages=st.integers(1, 20_000),
)
def test_after_the_first_batch_no_probe_caps_a_partition(
    messages: int, partitions: int, max_messages: int
) -> None:
    """Issue 37, finding 1: a short probe is no batch; every partition pulls on to its budget."""
    planned = shares(list(range(messages)), partitions, max_messages)
    expected = [max(max_messages, len(share)) for share, _ in planned]
    assert expected == [budget for _, budget in planned]


def test_a_backlog_smaller_than_one_pull_is_dealt_in_half_and_pulled_on() -> None:
    """The unkind case: 300 messages in a short probe go 150 and 150, and both pull on."""
    planned = shares(list(range(300)), 2, 10_000)
    expected = [(150, 10_000), (150, 10_000)]
    assert expected == [(len(share), budget) for share, budget in planned]


@pytest.mark.parametrize(
    ("partitions", "probed", "first", "expected"),
    [
        pytest.param(2, 1000, False, [10_000, 10_000], id="full-probe-pulls-on"),
        pytest.param(2, 0, False, [10_000, 10_000], id="no-probe-pulls-on"),
        pytest.param(1, 3, True, [10_000], id="one-partition-pulls-on-in-the-first-batch"),
    ],
)
def test_a_backlog_or_a_lone_partition_keeps_the_whole_budget(
    partitions: int, probed: int, first: bool, expected: list[int]
) -> None:
    """A full probe, no probe, or one partition: every partition may pull up to max_messages."""
    planned = shares(list(range(probed)), partitions, 10_000, first)
    assert expected == [budget for _, budget in planned]


@pytest.mark.parametrize(
    ("partitions", "max_messages", "max_bytes", "first", "expected"),
    [
        pytest.param(2, 10_000, 16 * MiB, 1600, MAX_PULL, id="small-events-one-full-pull"),
        pytest.param(2, 100, 16 * MiB, 1600, 200, id="the-batch-budget"),
        pytest.param(2, 10_000, 16 * MiB, MAX_MESSAGE_BYTES, 3, id="the-byte-budgets"),
        pytest.param(1, 10_000, 1, MAX_MESSAGE_BYTES, 1, id="at-least-one"),
    ],
)
def test_the_probe_asks_for_one_pull_within_the_batchs_budgets(
    partitions: int, max_messages: int, max_bytes: int, first: int, expected: int
) -> None:
    """The probe asks for MAX_PULL at most, within the partitions' message and byte budgets."""
    assert expected == probe_size(partitions, max_messages, max_bytes, first)


def test_the_first_batch_is_its_probe_even_when_full() -> None:
    """The query's first batch, its tasks cold: a full probe of 1,000 is the batch, 500 each."""
    planned = shares(list(range(1000)), 2, 10_000, first=True)
    expected = [(500, 500), (500, 500)]
    assert expected == [(len(share), budget) for share, budget in planned]
