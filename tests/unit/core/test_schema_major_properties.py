"""Properties of 2.x minor-version merging over random series of flat schemas."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver
from plowline_core.schema.entity import ShredProperty
from plowline_core.schema.major import MajorColumn, major_column
from plowline_core.testing.clock import FixedClock
from plowline_core.testing.registry import InMemoryRegistry

_NAMES = st.sampled_from(["a", "b", "c", "d", "e"])
_TYPES = st.sampled_from(["string", "integer", "number", "boolean"])
_VERSION = st.dictionaries(_NAMES, st.tuples(_TYPES, st.booleans()), min_size=1, max_size=4)


def _schema(props: dict[str, tuple[str, bool]]) -> dict[str, Any]:
    required = [name for name, (_, req) in props.items() if req]
    properties = {name: {"type": kind} for name, (kind, _) in props.items()}
    return {"type": "object", "properties": properties, "required": required}


def _columns(series: list[dict[str, tuple[str, bool]]]) -> list[MajorColumn]:
    keys = [SchemaKey.parse(f"iglu:com.acme/prop/jsonschema/1-0-{i}") for i in range(len(series))]
    registry = InMemoryRegistry("acme", {k: _schema(p) for k, p in zip(keys, series, strict=True)})
    ref = RepositoryRef("acme", 0, (), EmbeddedConnection("acme"))
    resolver = Resolver([(ref, registry)], FixedClock(datetime(2026, 1, 1, tzinfo=UTC)))
    columns = [major_column(key, ShredProperty.UNSTRUCT_EVENT, resolver) for key in keys]
    assert all(isinstance(column, MajorColumn) for column in columns)
    return [column for column in columns if isinstance(column, MajorColumn)]


@given(st.lists(_VERSION, min_size=1, max_size=6))
def test_each_merged_column_widens_the_one_before(series: list[dict[str, Any]]) -> None:
    """Main columns only grow: each keeps the fields, order and types of the previous one."""
    mains = [c.field for c in _columns(series) if not c.recovered and c.field is not None]
    for before, after in pairwise(mains):
        kept = [(f.name, f.type) for f in after.fields[: len(before.fields)]]
        assert [(f.name, f.type) for f in before.fields] == kept


@given(st.lists(_VERSION, min_size=1, max_size=6))
def test_recovered_version_is_typed_alone_and_named_after_its_version(
    series: list[dict[str, Any]],
) -> None:
    """A recovery column holds exactly its version's fields and names that version."""
    for index, column in enumerate(_columns(series)):
        if column.recovered:
            assert column.field is not None
            assert sorted(series[index]) == sorted(f.name for f in column.field.fields)
            assert f"_recovered_1_0_{index}_" in column.column


@given(st.lists(_VERSION, min_size=1, max_size=6))
def test_first_version_is_never_recovered(series: list[dict[str, Any]]) -> None:
    """The first version of a model always goes to the model's column."""
    assert not _columns(series)[0].recovered
