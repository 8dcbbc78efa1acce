"""Each Cloud Storage fault of the catalogue, seen through the official google-cloud-storage client.

Every scenario starts its own ``python -m plowline_devstack.storage … --faults FILE`` with
one fault on, as ``plowline dev up --faults`` does.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import storage
from google.cloud.storage.retry import DEFAULT_RETRY
from plowline_cloud.clients import storage_client
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone

PROJECT = "plowline-faults"
Start = Callable[..., storage.Bucket]


@pytest.fixture
def faulty(tmp_path: Path) -> Iterator[Start]:
    """``faulty(faults, seed=0)``: a bucket on a storage server with those faults on."""
    started: list[tuple[servers.ServerProcess, storage.Client]] = []

    def start(faults: dict[str, Any], seed: int = 0) -> storage.Bucket:
        plan = tmp_path / f"faults-{len(started)}.json"
        plan.write_text(json.dumps({"seed": seed, "storage": faults}))
        log = tmp_path / f"storage-{len(started)}.log"
        server, endpoints = start_alone(
            servers.STORAGE, PROJECT, log, extra_args=["--faults", str(plan)]
        )
        client = storage_client(endpoints.project, endpoints.storage_url)
        started.append((server, client))
        return client.create_bucket(f"b-{uuid.uuid4().hex[:12]}", retry=None)  # type: ignore[arg-type]  # buckets are never faulted

    yield start
    for server, client in started:
        client.close()
        servers.stop(server)


def _names(bucket: storage.Bucket) -> list[str]:
    """Return the bucket's object names, listed with the default retry."""
    return sorted(blob.name for blob in bucket.list_blobs(retry=DEFAULT_RETRY))


def test_service_unavailable_answers_object_requests_with_503(faulty: Start) -> None:
    """service-unavailable: uploads and listings are answered 503 with Cloud Storage's error."""
    bucket = faulty({"service-unavailable": {"rate": 1.0}})
    answers = []
    with pytest.raises(gexc.ServiceUnavailable) as upload:
        bucket.blob("a").upload_from_string(b"x", if_generation_match=0, retry=None)
    answers.append(upload.value.code)
    with pytest.raises(gexc.ServiceUnavailable) as listing:
        next(iter(bucket.list_blobs(retry=None)))
    answers.append(listing.value.code)
    expected = ([503, 503], "We encountered an internal error. Please try again.")
    assert expected == (answers, listing.value.errors[0]["message"])


def test_the_default_retry_gets_uploads_through_service_unavailable(faulty: Start) -> None:
    """service-unavailable at 50%: create-only uploads with the default retry each store once."""
    bucket = faulty({"service-unavailable": {"rate": 0.5}}, seed=4)
    retry = DEFAULT_RETRY.with_delay(initial=0.05, maximum=0.2).with_timeout(30)
    for n in range(6):
        bucket.blob(f"o{n}").upload_from_string(b"%d" % n, if_generation_match=0, retry=retry)
    expected = ([f"o{n}" for n in range(6)], b"3")
    actual = (_names(bucket), bucket.blob("o3").download_as_bytes(retry=retry))
    assert expected == actual


def test_a_lost_upload_response_hides_a_stored_object(faulty: Start) -> None:
    """response-lost-after-write: the upload answers 503 but the object is stored; a retry gets 412."""
    bucket = faulty({"response-lost-after-write": {"rate": 1.0}})
    blob = bucket.blob("kept")
    with pytest.raises(gexc.ServiceUnavailable):
        blob.upload_from_string(b"first", if_generation_match=0, retry=None)
    with pytest.raises(gexc.PreconditionFailed):  # the retry a client makes after the 503
        blob.upload_from_string(b"first", if_generation_match=0, retry=None)
    expected = b"first"
    assert expected == blob.download_as_bytes()


def test_a_lost_upload_response_retried_without_precondition_writes_again(faulty: Start) -> None:
    """response-lost-after-write: without a precondition the retry overwrites, a new generation."""
    bucket = faulty({"response-lost-after-write": {"rate": 1.0}})
    blob = bucket.blob("twice")
    generations = []
    for _ in range(2):
        with pytest.raises(gexc.ServiceUnavailable):
            blob.upload_from_string(b"same", retry=None)
        generations.append(bucket.get_blob("twice").generation)  # type: ignore[union-attr]  # it exists
    expected = True
    assert expected == (generations[0] != generations[1]), generations


def test_without_faults_an_upload_answers_normally(faulty: Start) -> None:
    """A plan naming a storage fault at rate 0 changes nothing: the upload answers and stores."""
    bucket = faulty({"response-lost-after-write": {"rate": 0.0}, "service-unavailable": {}})
    bucket.blob("plain").upload_from_string(b"x", if_generation_match=0, retry=None)
    expected = ["plain"]
    assert expected == _names(bucket)


def test_delete_forbidden_answers_403_and_keeps_the_object(faulty: Start) -> None:
    """delete-forbidden: a delete is answered 403 (retention policy), the object stays."""
    bucket = faulty({"delete-forbidden": {"rate": 1.0}})
    bucket.blob("a").upload_from_string(b"x", if_generation_match=0, retry=None)
    with pytest.raises(gexc.Forbidden) as caught:
        bucket.blob("a").delete(retry=DEFAULT_RETRY)
    expected = (403, ["a"])
    assert expected == (caught.value.code, _names(bucket))
