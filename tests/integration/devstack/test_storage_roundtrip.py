"""Cloud Storage stand-in: objects put into a provisioned bucket list and read back."""

from __future__ import annotations

import uuid

from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from plowline_devstack.stack.lifecycle import LocalStack


def _client(local_stack: LocalStack) -> storage.Client:
    # Built from STORAGE_EMULATOR_HOST, which the local_stack fixture exports for the session.
    return storage.Client(project=local_stack.project, credentials=AnonymousCredentials())


def test_storage_buckets_are_provisioned(local_stack: LocalStack) -> None:
    """Both default buckets exist."""
    actual = sorted(b.name for b in _client(local_stack).list_buckets())

    assert sorted(local_stack.config.buckets) <= actual


def test_storage_put_list_get(local_stack: LocalStack) -> None:
    """An uploaded object is listed under its prefix and downloads byte for byte."""
    bucket = _client(local_stack).bucket(local_stack.config.buckets[0])
    prefix = f"test-{uuid.uuid4().hex[:8]}/"
    payload = b'{"event_id": "e1"}\n{"event_id": "e2"}\n'
    bucket.blob(prefix + "part-0.ndjson").upload_from_string(
        payload, content_type="application/x-ndjson"
    )

    listed = [b.name for b in bucket.list_blobs(prefix=prefix)]
    downloaded = bucket.blob(prefix + "part-0.ndjson").download_as_bytes()

    assert ([prefix + "part-0.ndjson"], payload) == (listed, downloaded)
