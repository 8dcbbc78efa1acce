"""Cloud Storage stand-in: generation preconditions are enforced as Cloud Storage does."""

from __future__ import annotations

import uuid

import pytest
from google.api_core.exceptions import PreconditionFailed
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
from plowline_devstack.stack.lifecycle import LocalStack


def _bucket(local_stack: LocalStack) -> storage.Bucket:
    client = storage.Client(project=local_stack.project, credentials=AnonymousCredentials())
    return client.bucket(local_stack.config.buckets[0])


def test_storage_refuses_create_only_write_of_existing_object(local_stack: LocalStack) -> None:
    """ifGenerationMatch=0 on an existing object is 412 and the object keeps its content."""
    blob = _bucket(local_stack).blob(f"preconditions/{uuid.uuid4().hex}")
    blob.upload_from_string(b"first", if_generation_match=0)
    with pytest.raises(PreconditionFailed):
        blob.upload_from_string(b"second", if_generation_match=0, retry=None)
    expected = b"first"
    assert expected == blob.download_as_bytes()


def test_storage_honours_generation_match_of_live_object(local_stack: LocalStack) -> None:
    """ifGenerationMatch=<live generation> overwrites; any other generation is 412."""
    blob = _bucket(local_stack).blob(f"preconditions/{uuid.uuid4().hex}")
    blob.upload_from_string(b"first", if_generation_match=0)
    blob.reload()
    with pytest.raises(PreconditionFailed):
        blob.upload_from_string(b"stale", if_generation_match=int(blob.generation) + 1, retry=None)
    blob.upload_from_string(b"second", if_generation_match=blob.generation)
    expected = b"second"
    assert expected == blob.download_as_bytes()
