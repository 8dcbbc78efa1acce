"""The widening plan and the per-row check of fields the table lacks."""

from __future__ import annotations

from typing import Any

from plowline_core.schema.field import Field, FieldType, Mode
from plowline_core.schema.widening import Conflict, missing_fields, plan_widening

S = FieldType.STRING
EVENT_ID = Field("event_id", S, Mode.REQUIRED)
CTX = Field("contexts_a", FieldType.RECORD, Mode.REPEATED, (Field("x", S),))


def test_plan_adds_new_top_level_column() -> None:
    """A needed column the table lacks is an addition, appended to the schema."""
    plan = plan_widening((EVENT_ID,), (CTX,))
    assert (plan.additions, plan.schema) == ((CTX,), (EVENT_ID, CTX))


def test_plan_relaxes_required_new_column() -> None:
    """A REQUIRED needed column is added NULLABLE."""
    plan = plan_widening((), (Field("c", S, Mode.REQUIRED),))
    assert (Field("c", S),) == plan.additions


def test_plan_adds_nested_field_as_nullable() -> None:
    """A new sub-field of an existing record is a nested addition, NULLABLE."""
    needed = Field(
        "contexts_a", FieldType.RECORD, Mode.REPEATED, (Field("x", S), Field("y", S, Mode.REQUIRED))
    )
    plan = plan_widening((CTX,), (needed,))
    expected_schema = (
        Field("contexts_a", FieldType.RECORD, Mode.REPEATED, (Field("x", S), Field("y", S))),
    )
    assert ((("contexts_a", Field("y", S)),), expected_schema) == (
        plan.nested_additions,
        plan.schema,
    )


def test_plan_reports_type_conflict_and_keeps_table() -> None:
    """A needed field with another type is a conflict; the table's field stays."""
    needed = Field("contexts_a", FieldType.RECORD, Mode.REPEATED, (Field("x", FieldType.INTEGER),))
    plan = plan_widening((CTX,), (needed,))
    expected = (Conflict("contexts_a.x", Field("x", S), Field("x", FieldType.INTEGER)),)
    assert (expected, (CTX,)) == (plan.conflicts, plan.schema)


def test_plan_reports_repeated_versus_nullable_conflict() -> None:
    """A REPEATED column where the table has a NULLABLE one is a conflict."""
    plan = plan_widening((Field("c", S),), (Field("c", S, Mode.REPEATED),))
    assert len(plan.conflicts) == 1


def test_plan_accepts_required_need_in_nullable_column() -> None:
    """A NULLABLE table field holds a REQUIRED needed field: no conflict."""
    plan = plan_widening((Field("c", S),), (Field("c", S, Mode.REQUIRED),))
    assert (plan.is_empty, plan.conflicts) == (True, ())


def test_plan_matches_names_case_insensitively() -> None:
    """BigQuery column names ignore case, so 'C' in the table is 'c' needed."""
    plan = plan_widening((Field("C", S),), (Field("c", S),))
    assert plan.is_empty


def test_plan_against_merged_schema_is_empty() -> None:
    """Planning again against the merged schema adds nothing (idempotent)."""
    needed = (
        Field("contexts_a", FieldType.RECORD, Mode.REPEATED, (Field("y", S, Mode.REQUIRED),)),
        Field("n", S),
    )
    first = plan_widening((CTX, EVENT_ID), needed)
    again = plan_widening(first.schema, needed)
    assert (True, (), first.schema) == (again.is_empty, again.conflicts, again.schema)


def test_missing_fields_lists_unknown_top_level_keys() -> None:
    """Keys the table lacks are reported by name, in row order."""
    row = {"event_id": "e", "zzz": 1, "aaa": None}
    assert missing_fields((EVENT_ID,), row) == ["zzz", "aaa"]


def test_missing_fields_walks_repeated_records_once_per_path() -> None:
    """Unknown keys inside array items are reported once as dotted paths."""
    row = {"contexts_a": [{"x": "1", "q": 1}, {"q": 2}, None]}
    assert missing_fields((CTX,), row) == ["contexts_a.q"]


def test_missing_fields_walks_nullable_records() -> None:
    """Unknown keys inside a record value are reported as dotted paths."""
    table = (Field("u", FieldType.RECORD, Mode.NULLABLE, (Field("x", S),)),)
    assert missing_fields(table, {"u": {"x": "a", "y": "b"}}) == ["u.y"]


def test_missing_fields_is_empty_for_a_fitting_row() -> None:
    """A row whose every key is in the table misses nothing."""
    assert missing_fields((EVENT_ID, CTX), {"event_id": "e", "contexts_a": [{"x": "1"}]}) == []


def test_missing_fields_follows_a_changed_schema() -> None:
    """A new schema tuple is compiled afresh, not served from the old cache entry."""
    old = (EVENT_ID,)
    missing_fields(old, {"event_id": "e"})
    new = (EVENT_ID, Field("n", S))
    assert missing_fields(new, {"event_id": "e", "n": "x"}) == []


class _CountingRow(dict[str, Any]):
    """A row that counts how often its items are iterated."""

    item_walks = 0

    def items(self) -> Any:
        type(self).item_walks += 1
        return super().items()


def test_missing_fields_visits_only_the_records_of_a_fitting_row() -> None:
    """A row whose top-level keys all fit is checked by its RECORD values alone, not column by column."""
    table = (EVENT_ID, CTX, *(Field(f"a{n}", S) for n in range(100)))
    row = _CountingRow({"event_id": "e", "contexts_a": [{"x": "1"}]})
    row.update({f"a{n}": "v" for n in range(100)})
    assert (missing_fields(table, row), _CountingRow.item_walks) == ([], 0)


def test_missing_fields_reports_several_records_in_row_order() -> None:
    """Unknown keys under several RECORD columns come back in the row's column order."""
    other = Field("contexts_b", FieldType.RECORD, Mode.REPEATED, (Field("x", S),))
    row = {"contexts_b": [{"q": 1}], "event_id": "e", "contexts_a": [{"r": 2}]}
    assert missing_fields((CTX, EVENT_ID, other), row) == ["contexts_b.q", "contexts_a.r"]


class _CountingRecord(dict[str, Any]):
    """A RECORD value (a Mapping that is not a plain dict) that counts its key lookups."""

    key_walks = 0

    def keys(self) -> Any:
        type(self).key_walks += 1
        return super().keys()


def test_missing_fields_walks_each_record_of_a_deep_row_once() -> None:
    """An unknown leaf 20 RECORDs deep costs a walk per level, not 2**20 (it is still reported)."""
    field = Field("r", S)
    row: dict[str, Any] = {"zz": 1}
    for _ in range(20):
        field = Field("r", FieldType.RECORD, Mode.NULLABLE, (field,))
        row = _CountingRecord({"r": row})
    _CountingRecord.key_walks = 0
    missing = missing_fields((field,), dict(row))
    assert ([".".join(["r"] * 20) + ".zz"], True) == (missing, _CountingRecord.key_walks <= 40)
