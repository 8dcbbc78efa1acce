"""Pub/Sub resource names: validation and the short ids used in error messages.

Notes:
    The rules follow the real service: a resource id starts with a letter, is 3-255
    characters of letters, digits and ``-_.~+%``, and does not start with ``goog``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import grpc

from plowline_devstack.pubsub.backlog import well_formed_ack_id
from plowline_devstack.pubsub.status import StatusError

_ID = re.compile(r"[A-Za-z][A-Za-z0-9\-_.~+%]{2,254}")
_PROJECT = re.compile(r"projects/([^/]+)")
DELETED_TOPIC = "_deleted-topic_"


def _check(name: str, collection: str) -> str:
    parts = name.split("/")
    valid = (
        len(parts) == 4
        and parts[0] == "projects"
        and parts[1] != ""
        and parts[2] == collection
        and _ID.fullmatch(parts[3]) is not None
        and not parts[3].startswith("goog")
    )
    if not valid:
        raise StatusError(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"Invalid resource name given (name={name}). Refer to "
            "https://cloud.google.com/pubsub/docs/pubsub-basics#resource_names "
            "for more information.",
        )
    return name


def topic_name(name: str) -> str:
    """Return ``name`` if it is a well-formed topic name, else raise INVALID_ARGUMENT."""
    return _check(name, "topics")


def subscription_name(name: str) -> str:
    """Return ``name`` if it is a well-formed subscription name, else raise INVALID_ARGUMENT."""
    return _check(name, "subscriptions")


def project_name(name: str) -> str:
    """Return ``name`` if it is ``projects/<id>``, else raise INVALID_ARGUMENT."""
    if _PROJECT.fullmatch(name) is None:
        raise StatusError(
            grpc.StatusCode.INVALID_ARGUMENT, f"Invalid resource name given (name={name})."
        )
    return name


def short_id(name: str) -> str:
    """Return the last segment of a resource name, as the real service quotes it."""
    return name.rsplit("/", 1)[-1]


def not_found(name: str) -> StatusError:
    """Build the NOT_FOUND error the real service returns for a missing resource."""
    return StatusError(
        grpc.StatusCode.NOT_FOUND, f"Resource not found (resource={short_id(name)})."
    )


INVALID_ACK_IDS = (
    "Some acknowledgement ids in the request were invalid. This could be because the "
    "acknowledgement ids have expired or the acknowledgement ids were malformed."
)


def ack_ids(ids: Sequence[str]) -> Sequence[str]:
    """Return ``ids``, or refuse the request with INVALID_ARGUMENT if one is malformed.

    Notes:
        Pub/Sub's own words; Google's emulator refuses them too (``Invalid ack id``).
    """
    if any(not well_formed_ack_id(ack_id) for ack_id in ids):
        raise StatusError(grpc.StatusCode.INVALID_ARGUMENT, INVALID_ACK_IDS)
    return ids
