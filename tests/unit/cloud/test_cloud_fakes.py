"""The in-memory fakes behave like the Google adapters where the services rely on it."""

from __future__ import annotations

import pytest
from plowline_core.errors import PermanentError, TransientError
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.schema.field import Field, FieldType
from plowline_core.testing.sinks import InMemoryBlobStore, InMemoryPublisher, InMemoryRowSink
from plowline_core.testing.table import InMemoryTableSchemaStore

BASE = (Field("event_id", FieldType.STRING),)
EXTRA = Field("app_id", FieldType.STRING)


def test_row_with_unknown_field_fails_and_others_land() -> None:
    """An unknown field fails UNKNOWN_FIELD with BigQuery's words; the other rows are kept."""
    sink = InMemoryRowSink(InMemoryTableSchemaStore(BASE))
    bad = Row("2", {"event_id": "2", "zz": 1})
    failures = sink.insert([Row("1", {"event_id": "1"}), bad])
    expected = ([InsertFailure(bad, InsertReason.UNKNOWN_FIELD, "no such field: zz.", "zz")], ["1"])
    assert expected == (failures, sink.insert_ids)


def test_stale_schema_is_refreshed_on_a_miss() -> None:
    """A column another process added is found by the one refresh a miss triggers."""
    store = InMemoryTableSchemaStore(BASE)
    store.widen_backend([EXTRA])
    sink = InMemoryRowSink(store)
    expected = ([], 1)
    assert expected == (sink.insert([Row("1", {"event_id": "1", "app_id": "a"})]), store.refreshes)


def test_fields_stay_cached_until_refresh() -> None:
    """fields() keeps the cached view while the backend changes."""
    store = InMemoryTableSchemaStore(BASE)
    store.widen_backend([EXTRA])
    expected = (BASE, (*BASE, EXTRA))
    assert expected == (store.fields(), store.refresh())


def test_add_fields_returns_only_new_fields() -> None:
    """add_fields skips fields that exist and returns the ones it added."""
    store = InMemoryTableSchemaStore(BASE)
    expected = ((EXTRA,), ())
    assert expected == (store.add_fields([*BASE, EXTRA]), store.add_fields([EXTRA]))


def test_publisher_failure_records_nothing() -> None:
    """A failing publish raises and records no message."""
    publisher = InMemoryPublisher()
    publisher.fail_with = TransientError("down")
    with pytest.raises(TransientError):
        publisher.publish([b"x"])
    expected: list[bytes] = []
    assert expected == publisher.messages


def test_publisher_ids_in_order() -> None:
    """publish returns one id per message in order."""
    expected = ["1", "2"]
    assert expected == InMemoryPublisher().publish([b"a", b"b"])


def test_blob_store_refuses_overwrite() -> None:
    """put on an existing name raises PermanentError, like GcsBlobStore."""
    store = InMemoryBlobStore()
    store.put("a", b"1")
    with pytest.raises(PermanentError, match="already exists"):
        store.put("a", b"2")


def test_blob_store_move_and_list() -> None:
    """move renames; list is sorted and filtered by prefix."""
    store = InMemoryBlobStore()
    store.put("in/b", b"2")
    store.put("in/a", b"1")
    store.move("in/b", "done/b")
    expected = (["in/a"], ["done/b", "in/a"])
    assert expected == (store.list("in/"), store.list())


def test_blob_store_folders_are_the_next_level_under_a_prefix() -> None:
    """folders names each folder right under a prefix once, sorted, objects aside (as GCS does)."""
    store = InMemoryBlobStore()
    for name in ("b/x/1", "a/1", "b/y/2", "b/x/3", "c"):
        store.put(name, b".")
    expected = (["a/", "b/"], ["b/x/", "b/y/"], [])
    assert expected == (store.folders(), store.folders("b/"), store.folders("b/x/"))
