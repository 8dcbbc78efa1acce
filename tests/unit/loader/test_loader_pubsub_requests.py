"""Pub/Sub requests built as raw protobuf carry exactly what proto-plus would have sent."""

from __future__ import annotations

from typing import Any

import pytest
from google.pubsub_v1.types import AcknowledgeRequest, ModifyAckDeadlineRequest, PullRequest
from plowline_cloud.pubsub.subscription import _request

PATH = "projects/p/subscriptions/s"
IDS = [f"ack-{n}" for n in range(1000)]


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        pytest.param(PullRequest, {"subscription": PATH, "max_messages": 1000}, id="pull"),
        pytest.param(AcknowledgeRequest, {"subscription": PATH, "ack_ids": IDS}, id="ack"),
        pytest.param(
            ModifyAckDeadlineRequest,
            {"subscription": PATH, "ack_ids": IDS, "ack_deadline_seconds": 60},
            id="modack",
        ),
        pytest.param(
            ModifyAckDeadlineRequest,
            {"subscription": PATH, "ack_ids": IDS[:3], "ack_deadline_seconds": 0},
            id="nack",
        ),
    ],
)
def test_raw_request_serialises_as_proto_plus_does(kind: Any, fields: dict[str, Any]) -> None:
    """The wire bytes equal those of the proto-plus message built from the same dict."""
    assert kind.serialize(kind(fields)) == kind.serialize(_request(kind, **fields))


def test_raw_request_is_the_clients_request_type() -> None:
    """The client takes the request as is (no conversion): it is the proto-plus type."""
    assert isinstance(
        _request(AcknowledgeRequest, subscription=PATH, ack_ids=IDS), AcknowledgeRequest
    )
