"""The Cloud Storage faults of the catalogue (:mod:`.catalogue`), on object requests.

* ``service-unavailable``: an object request (upload, download, get, list, delete, patch,
  copy, compose) is answered 503 with Cloud Storage's JSON error, nothing done. The
  official client retries idempotent calls (and uploads carrying a generation
  precondition) on 503.
* ``response-lost-after-write``: an upload (POST or PUT on an object route) is stored,
  then answered 503 instead of the object's metadata. A retry with ``ifGenerationMatch=0``
  then gets 412 (the object exists: the ``preconditions`` correction), one without a
  precondition writes the object again.
* ``delete-forbidden``: an object delete is answered 403 (a bucket retention policy, or a
  service account without ``storage.objects.delete``), nothing deleted. Not retried: the
  object stays.

Bucket requests and the emulator's own ``/`` and ``/wipe`` are never faulted, so a stack
always starts and provisions. Each fault draws from its own generator seeded with the
plan's seed and its name. Installed on top of :mod:`plowline_devstack.storage.preconditions` by wrapping the
handlers of gcp-storage-emulator's route table.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from gcp_storage_emulator import server as emulator_server
from gcp_storage_emulator.handlers import objects

from plowline_devstack.faults.draws import FaultDraws

SERVICE_UNAVAILABLE = "service-unavailable"
RESPONSE_LOST = "response-lost-after-write"
DELETE_FORBIDDEN = "delete-forbidden"
MESSAGE = "We encountered an internal error. Please try again."
RETENTION_MESSAGE = (
    "Object '{name}' is subject to bucket's retention policy or object retention and cannot "
    "be deleted or overwritten until its retention period expires."
)

Handler = Callable[..., Any]


class StorageFaults(FaultDraws):
    """Draw the Cloud Storage faults a plan turned on."""


def unavailable(response: Any) -> None:
    """Make ``response`` Cloud Storage's 503 (whatever the handler put in it before)."""
    _error(response, HTTPStatus.SERVICE_UNAVAILABLE, MESSAGE, "backendError")


def forbidden(response: Any, name: str) -> None:
    """Make ``response`` Cloud Storage's 403 for an object under a retention policy."""
    _error(response, HTTPStatus.FORBIDDEN, RETENTION_MESSAGE.format(name=name), "forbidden")


def _error(response: Any, status: HTTPStatus, message: str, reason: str) -> None:
    """Make ``response`` Cloud Storage's JSON error (``error.code``, ``message``, ``errors``)."""
    response.status = status
    response.json(
        {
            "error": {
                "code": int(status),
                "message": message,
                "errors": [{"message": message, "domain": "global", "reason": reason}],
            }
        }
    )


def faulted(original: Handler, faults: StorageFaults, write: bool, delete: bool = False) -> Handler:
    """Wrap one object handler with the faults (``write``: it stores an object; ``delete``)."""

    def handler(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> Any:
        if delete and faults.draw(DELETE_FORBIDDEN):
            name = str(getattr(request, "params", {}).get("object_id", "object"))
            return forbidden(response, name)
        if faults.draw(SERVICE_UNAVAILABLE):
            _ = request.data  # read the body, so the connection stays usable
            return unavailable(response)
        result = original(request, response, storage, *args, **kwargs)
        if write and response.status == HTTPStatus.OK and faults.draw(RESPONSE_LOST):
            unavailable(response)
        return result

    return handler


def _object_route(regex: str) -> bool:
    return "object_id" in regex or regex.endswith("/o$")


def install(faults: StorageFaults) -> None:
    """Wrap every object route's handlers with ``faults`` (nothing when none is on)."""
    if not faults.names:
        return
    wrapped: dict[tuple[Handler, bool, bool], Handler] = {}
    for regex, handlers in emulator_server.HANDLERS:
        if not _object_route(regex):
            continue
        for method, original in list(handlers.items()):
            key = (original, method in ("POST", "PUT"), method == "DELETE")
            if key not in wrapped:
                wrapped[key] = faulted(original, faults, *key[1:])
            handlers[method] = wrapped[key]
    # Uploads posted without the /upload prefix reach ``objects.insert`` by attribute.
    objects.insert = wrapped.get((objects.insert, True, False), objects.insert)
