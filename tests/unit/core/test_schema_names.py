"""Field-name normalisation and entity column names."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import ColumnMode, ShredProperty
from plowline_core.schema.names import column_name, is_valid_name, java_order, normalize_field_name


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("HTTPHeader", "http_header", id="acronym-split"),
        pytest.param("userID", "user_id", id="trailing-acronym"),
        pytest.param("a-b", "a_b", id="dash"),
        pytest.param("9lives", "_9lives", id="leading-digit"),
        pytest.param("Größe", "gr__e", id="non-ascii"),
        pytest.param("٣x", "_x", id="non-ascii-digit-is-replaced"),
    ],
)
def test_normalize_field_name(raw: str, expected: str) -> None:
    """A JSON property name becomes its snake-cased BigQuery field name."""
    assert expected == normalize_field_name(raw)


@given(st.text(min_size=1, max_size=40))
def test_normalize_field_name_gives_valid_names(raw: str) -> None:
    """Any non-empty property name normalises to a legal BigQuery name."""
    assert is_valid_name(normalize_field_name(raw)) or len(normalize_field_name(raw)) > 300


@given(st.text(max_size=40))
def test_normalize_field_name_is_idempotent(raw: str) -> None:
    """Normalising a normalised name changes nothing."""
    once = normalize_field_name(raw)
    assert once == normalize_field_name(once)


@pytest.mark.parametrize(
    ("shred", "mode", "expected"),
    [
        pytest.param(
            ShredProperty.UNSTRUCT_EVENT,
            ColumnMode.FULL,
            "unstruct_event_com_acme_httpheader_2_1_0",
            id="v1-unstruct",
        ),
        pytest.param(
            ShredProperty.CONTEXTS,
            ColumnMode.FULL,
            "contexts_com_acme_httpheader_2_1_0",
            id="v1-contexts",
        ),
        pytest.param(
            ShredProperty.DERIVED_CONTEXTS,
            ColumnMode.FULL,
            "contexts_com_acme_httpheader_2_1_0",
            id="v1-derived",
        ),
        pytest.param(
            ShredProperty.CONTEXTS,
            ColumnMode.MAJOR,
            "contexts_com_acme_httpheader_2",
            id="v2-contexts",
        ),
    ],
)
def test_column_name(shred: ShredProperty, mode: ColumnMode, expected: str) -> None:
    """An entity column is named by prefix, vendor, name and (full or major) version."""
    key = SchemaKey.parse("iglu:com.acme/HTTPHeader/jsonschema/2-1-0")
    assert expected == column_name(key, shred, mode)


def test_column_name_splits_camel_case_names() -> None:
    """The column rule splits lower/digit→Upper in the schema name, after a dash becomes '_'."""
    key = SchemaKey.parse("iglu:com.snowplowanalytics.sauna-x/AmazonS3Config/jsonschema/1-0-0")
    expected = "unstruct_event_com_snowplowanalytics_sauna_x_amazon_s3_config_1_0_0"
    assert expected == column_name(key, ShredProperty.UNSTRUCT_EVENT, ColumnMode.FULL)


def test_java_order_puts_upper_case_before_underscore_before_lower_case() -> None:
    """Names sort as Java Strings: 'Z' < '_' < 'a'."""
    assert sorted(["a", "_a", "Z"], key=java_order) == ["Z", "_a", "a"]


def test_java_order_sorts_by_utf16_code_units() -> None:
    """A supplementary character sorts before U+FFFD, as in Java (surrogates are D800-DFFF)."""
    assert sorted(["\ufffd", "\U0001f600"], key=java_order) == ["\U0001f600", "\ufffd"]
