"""The enriched TSV line builders shared by every package's tests."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse
from plowline_core.testing.tsv import (
    DEFAULTS,
    contexts_field,
    enriched_fields,
    enriched_line,
    unstruct_event_field,
    with_entities,
)


def test_default_line_is_valid() -> None:
    """The default line has 131 fields and parses to an event."""
    expected = (131, True)
    assert expected == (len(enriched_fields()), isinstance(parse(enriched_line()), EnrichedEvent))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(None, "", id="none"),
        pytest.param(True, "1", id="true"),
        pytest.param(False, "0", id="false"),
        pytest.param(7, "7", id="int"),
        pytest.param(1.5, "1.5", id="float"),
        pytest.param(datetime(2024, 5, 1, 10, 0, 0, 123000), "2024-05-01 10:00:00.123", id="naive"),
        pytest.param(
            datetime(2024, 5, 1, 12, 0, tzinfo=timezone(timedelta(hours=2))),
            "2024-05-01 10:00:00.000",
            id="aware",
        ),
        pytest.param("raw\\text", "raw\\text", id="str"),
    ],
)
def test_override_values_become_tsv_text(value: object, text: str) -> None:
    """Python values are written as the TSV text enrich would write."""
    fields = enriched_fields(etl_tstamp=value)
    assert text == fields[2]


def test_unknown_field_is_refused() -> None:
    """A misspelt field name is an error, not a silently ignored override."""
    with pytest.raises(TypeError, match="evnt_id"):
        enriched_line(evnt_id="x")


def test_entity_fields_take_entities() -> None:
    """Entity fields accept (schema, data) pairs and write self-describing JSON."""
    fields = enriched_fields(
        contexts=[("iglu:com.acme/a/jsonschema/1-0-0", {"k": 1})],
        unstruct_event=("iglu:com.acme/b/jsonschema/1-0-0", {"v": 2}),
    )
    expected = (
        contexts_field(("iglu:com.acme/a/jsonschema/1-0-0", {"k": 1})),
        unstruct_event_field(("iglu:com.acme/b/jsonschema/1-0-0", {"v": 2})),
    )
    assert expected == (fields[52], fields[58])


def test_with_entities_leaves_absent_ones_empty() -> None:
    """with_entities writes only the entity fields it is given."""
    fields = with_entities(derived_contexts=[("iglu:com.acme/d/jsonschema/1-0-0", {})]).split("\t")
    expected = ("", "", True)
    assert expected == (fields[52], fields[58], fields[122].startswith("{"))


def test_defaults_are_named_fields() -> None:
    """Every default names a real field, so the default line is what it says."""
    assert set(DEFAULTS) <= set(parse(enriched_line()).atomic)  # type: ignore[union-attr]
