"""Specification of plowline's own option objects."""

from __future__ import annotations

from typing import Any

import pytest
from plowline_core.config import DeadLetterOptions, LoaderOptions, RepeaterOptions
from plowline_core.errors import ConfigError
from plowline_core.schema.entity import ColumnMode


def test_loader_defaults_to_full_column_mode() -> None:
    """The default column mode is loader 0.x/1.x's full SchemaVer columns."""
    expected = ColumnMode.FULL
    assert expected == LoaderOptions().column_mode


def test_loader_column_mode_accepts_a_string() -> None:
    """A column mode given as text (from settings) becomes the enum."""
    assert ColumnMode.MAJOR is LoaderOptions(column_mode="major").column_mode  # type: ignore[arg-type]


def test_repeater_defaults_are_snowplows() -> None:
    """Backoff 900 s, buffer 20 rows, window 30 s, as upstream."""
    expected = (900.0, 20, 30.0)
    assert expected == (
        RepeaterOptions().backoff_period,
        RepeaterOptions().buffer_size,
        RepeaterOptions().window,
    )


def test_dead_letter_defaults() -> None:
    """One-minute windows of at most 10000 rows, uncompressed."""
    assert DeadLetterOptions(60.0, 10_000, False) == DeadLetterOptions()


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        pytest.param(
            lambda: LoaderOptions(column_mode="wide"),  # type: ignore[arg-type]
            "column_mode: 'wide' is not one of",
            id="column-mode",
        ),
        pytest.param(
            lambda: LoaderOptions(max_batch_messages=0),
            "max_batch_messages: must be a positive",
            id="batch-zero",
        ),
        pytest.param(
            lambda: LoaderOptions(max_batch_bytes=20_000_000),
            "max_batch_bytes: must be at most",
            id="batch-bytes",
        ),
        pytest.param(
            lambda: LoaderOptions(parallelism=True),
            "parallelism: must be a positive",
            id="bool-not-number",
        ),
        pytest.param(
            lambda: RepeaterOptions(backoff_period=-1),
            "backoff_period: must be a positive",
            id="backoff",
        ),
        pytest.param(
            lambda: RepeaterOptions(dead_end_bucket="s3://x"),
            "dead_end_bucket: 's3://x' must look like",
            id="bucket-scheme",
        ),
        pytest.param(
            lambda: DeadLetterOptions(max_rows=0), "max_rows: must be a positive", id="max-rows"
        ),
    ],
)
def test_invalid_options_name_the_field(build: Any, expected: str) -> None:
    """A wrong option is a ConfigError starting with the option's name."""
    with pytest.raises(ConfigError) as caught:
        build()
    assert str(caught.value).startswith(expected), str(caught.value)


def test_repeater_accepts_a_gs_bucket_with_prefix() -> None:
    """gs://bucket/prefix is a valid dead-end location."""
    expected = "gs://dead-end/repeater"
    assert expected == RepeaterOptions(dead_end_bucket="gs://dead-end/repeater").dead_end_bucket
