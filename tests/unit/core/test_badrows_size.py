"""The size-violation bad row keeps itself within the size limit it reports."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_core.badrows import Processor, SizeViolationRow

_PROCESSOR = Processor("plowline-loader", "0.1.0")
_NOW = "2024-05-01T10:00:00Z"


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"x" * 50_000, id="ascii"),
        pytest.param("é☕\U0001f600".encode() * 5_000, id="multibyte"),
        pytest.param(b'"\\\n\x00' * 10_000, id="escaped"),
        pytest.param(b"\xff\xfe" * 10_000, id="invalid-utf8"),
    ],
)
def test_encoded_row_fits_limit(payload: bytes) -> None:
    """The encoded bad row is at most the maximum allowed size."""
    row = SizeViolationRow.for_payload(payload, 10_000, "under 10000 bytes", _NOW)
    assert len(row.to_json(_PROCESSOR)) <= 10_000


def test_payload_is_kept_whole_when_it_fits() -> None:
    """A payload that fits is not cut."""
    row = SizeViolationRow.for_payload("small", 10_000, "under 10000 bytes", _NOW, _PROCESSOR)
    expected = "small"
    assert expected == row.payload


def test_failure_reports_sizes() -> None:
    """The failure reports the limit, the real byte size and the expectation."""
    row = SizeViolationRow.for_payload("é" * 10, 20, "under 20 bytes", _NOW)
    failure = orjson.loads(row.to_json(_PROCESSOR))["data"]["failure"]
    expected = {
        "timestamp": _NOW,
        "maximumAllowedSizeBytes": 20,
        "actualSizeBytes": 20,
        "expectation": "under 20 bytes",
    }
    assert expected == failure


def test_payload_prefix_is_as_long_as_fits() -> None:
    """With the real processor the cut payload fills the limit to within one character."""
    row = SizeViolationRow.for_payload(b"y" * 5_000, 1_000, "under 1000 bytes", _NOW, _PROCESSOR)
    assert len(row.to_json(_PROCESSOR)) == 1_000


def test_expectation_is_capped() -> None:
    """The expectation is cut to the schema's 256 characters."""
    row = SizeViolationRow.for_payload(b"z", 1_000, "e" * 300, _NOW)
    assert len(row.expectation) == 256


@settings(max_examples=50)
@given(st.binary(max_size=4_000), st.integers(0, 3_000))
def test_encoded_row_never_exceeds_a_reachable_limit(payload: bytes, limit: int) -> None:
    """Whenever an empty payload fits, the encoded row fits the limit."""
    row = SizeViolationRow.for_payload(payload, limit, "limit", _NOW, _PROCESSOR)
    empty = SizeViolationRow(limit, len(payload), "limit", "", _NOW).to_json(_PROCESSOR)
    assert len(row.to_json(_PROCESSOR)) <= max(limit, len(empty))


def test_a_huge_payload_is_cut_with_a_bounded_number_of_encodings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cutting a 10 MB payload encodes it a fixed number of times (no search over prefixes)."""
    from plowline_core.badrows import size

    calls: list[int] = []

    def counting(document: object, **options: object) -> bytes:
        calls.append(1)
        return real(document, **options)  # type: ignore[arg-type]

    real = size.dumps
    monkeypatch.setattr(size, "dumps", counting)
    row = SizeViolationRow.for_payload(b"x" * 10_000_000, 6_900_000, "limit", _NOW, _PROCESSOR)
    expected = (6_900_000, 2)  # the cut text encoded once, the row once
    assert expected == (len(row.to_json(_PROCESSOR)), len(calls) - 1)


@settings(max_examples=50)
@given(st.text(max_size=300), st.integers(300, 700))
def test_cut_payload_is_the_longest_that_fits(payload: str, limit: int) -> None:
    """One more character of the payload would not fit the limit."""
    row = SizeViolationRow.for_payload(payload, limit, "limit", _NOW, _PROCESSOR)
    assert payload.startswith(row.payload)
    if row.payload != payload:
        cut = payload[: len(row.payload) + 1]
        longer = SizeViolationRow(limit, row.actual_size, "limit", cut, _NOW)
        assert len(longer.to_json(_PROCESSOR)) > limit
