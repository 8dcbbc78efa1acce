"""GcsBlobStore against gcp-storage-emulator."""

from __future__ import annotations

from typing import Any

import pytest
from plowline_cloud.clients import storage_client
from plowline_cloud.storage import GcsBlobStore
from plowline_core.errors import PermanentError

BUCKET = "plowline-dead-end"


@pytest.fixture
def store(gcs: Any, blob_prefix: str) -> GcsBlobStore:
    """A blob store under a fresh prefix of the provisioned dead-end bucket."""
    return GcsBlobStore(gcs, BUCKET, blob_prefix)


def test_put_then_get(store: GcsBlobStore) -> None:
    """An object written with put reads back byte for byte."""
    store.put("a/1.ndjson", b'{"x":1}\n')
    expected = b'{"x":1}\n'
    assert expected == store.get("a/1.ndjson")


def test_put_sets_content_type(store: GcsBlobStore, gcs: Any, blob_prefix: str) -> None:
    """The object carries the content type given to put."""
    store.put("typed.json", b"{}", content_type="application/json")
    blob = gcs.bucket(BUCKET).get_blob(f"{blob_prefix}/typed.json")
    expected = "application/json"
    assert expected == blob.content_type


def test_put_refuses_overwrite(store: GcsBlobStore) -> None:
    """Writing a name that exists raises PermanentError and keeps the first content."""
    store.put("once", b"first")
    with pytest.raises(PermanentError, match="already exists"):
        store.put("once", b"second")
    expected = b"first"
    assert expected == store.get("once")


def test_list_is_sorted_and_relative(store: GcsBlobStore) -> None:
    """list returns the names under a prefix, relative to the store's prefix, sorted."""
    for name in ("b/2", "a/1", "b/1", "c"):
        store.put(name, b".")
    expected = (["a/1", "b/1", "b/2", "c"], ["b/1", "b/2"])
    assert expected == (store.list(), store.list("b/"))


def test_folders_are_the_next_level_under_a_prefix(store: GcsBlobStore) -> None:
    """folders names each folder right under a prefix once, relative and sorted, objects aside."""
    for name in ("b/x/1", "a/1", "b/y/2", "b/x/3", "c"):
        store.put(name, b".")
    expected = (["a/", "b/"], ["b/x/", "b/y/"], [])
    assert expected == (store.folders(), store.folders("b/"), store.folders("b/x/"))


def test_get_missing_is_permanent(store: GcsBlobStore) -> None:
    """Reading a name that does not exist raises PermanentError."""
    with pytest.raises(PermanentError, match="404"):
        store.get("missing")


def test_move(store: GcsBlobStore) -> None:
    """move puts the content under the new name and removes the old one."""
    store.put("incoming/x", b"payload")
    store.move("incoming/x", "done/x")
    expected = (["done/x"], b"payload")
    assert expected == (store.list(), store.get("done/x"))


def test_move_after_interrupted_move(store: GcsBlobStore) -> None:
    """A destination already holding the same content only gets the source deleted."""
    store.put("incoming/x", b"payload")
    store.put("done/x", b"payload")
    store.move("incoming/x", "done/x")
    expected = ["done/x"]
    assert expected == store.list()


def test_move_refuses_other_content(store: GcsBlobStore) -> None:
    """A destination holding other content is not overwritten."""
    store.put("incoming/x", b"new")
    store.put("done/x", b"old")
    with pytest.raises(PermanentError, match="already exists"):
        store.move("incoming/x", "done/x")


def _through(proxy: Any, blob_prefix: str) -> GcsBlobStore:
    """A blob store whose requests go through ``proxy``."""
    return GcsBlobStore(storage_client("plowline-local", proxy.url), BUCKET, blob_prefix)


def test_put_needs_no_read_permission(
    storage_proxy: Any, store: GcsBlobStore, blob_prefix: str
) -> None:
    """put writes with every read refused (roles/storage.objectCreator) and reads no object."""
    storage_proxy.forbid_reads = True
    _through(storage_proxy, blob_prefix).put("a.ndjson", b"row\n")
    object_reads = [p for m, p in storage_proxy.seen if m in ("GET", "HEAD") and "/o/" in p]
    expected = ([], b"row\n")
    assert expected == (object_reads, store.get("a.ndjson"))


def test_put_after_lost_response_writes_once(
    storage_proxy: Any, store: GcsBlobStore, blob_prefix: str
) -> None:
    """A write whose response is lost is retried, the 412 taken as its own: one object, no error."""
    storage_proxy.lose_uploads = 1
    _through(storage_proxy, blob_prefix).put("lost.ndjson", b"row\n")
    uploads = [path for method, path in storage_proxy.seen if method == "POST"]
    expected = (2, ["lost.ndjson"], b"row\n")
    assert expected == (len(uploads), store.list(), store.get("lost.ndjson"))


def test_put_refuses_a_name_held_before_the_first_attempt(
    storage_proxy: Any, store: GcsBlobStore, blob_prefix: str
) -> None:
    """A 412 on the first attempt is someone else's object: PermanentError, content kept."""
    store.put("taken", b"theirs")
    with pytest.raises(PermanentError, match="already exists"):
        _through(storage_proxy, blob_prefix).put("taken", b"ours")
    expected = b"theirs"
    assert expected == store.get("taken")
