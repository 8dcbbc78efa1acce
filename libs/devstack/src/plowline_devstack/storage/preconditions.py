"""Generation preconditions on object writes, as Cloud Storage enforces them.

Real Cloud Storage: a write with ``ifGenerationMatch=0`` succeeds only while no live object
has that name, else 412 Precondition Failed; ``ifGenerationMatch=N`` succeeds only while the
live object's generation is N. gcp-storage-emulator ignores both and overwrites, so a test of
"never overwrite" passes there whether or not the code asks for the precondition, and a
retried write after a lost response (which Cloud Storage answers with 412) looks like a
success. This correction checks the precondition before the emulator's write handlers run.

Notes:
    Checked on the request that starts a write: a simple or multipart upload
    (``uploadType=media|multipart``), the start of a resumable upload (Cloud Storage checks
    again when it completes; plowline's writes are single-request) and the XML API's
    ``PUT`` with ``x-goog-if-generation-match``. Only ``ifGenerationMatch`` is restored.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from gcp_storage_emulator import server as emulator_server
from gcp_storage_emulator.exceptions import NotFound
from gcp_storage_emulator.handlers import objects

Handler = Callable[..., Any]

_QUERY = "ifGenerationMatch"
_XML_HEADER = "x-goog-if-generation-match"


def _live_generation(storage: Any, bucket: str, name: str) -> str | None:
    """Return the generation of the live object ``bucket/name`` (None: there is none)."""
    try:
        obj = storage.get_file_obj(bucket, name)
    except NotFound:
        return None
    return str(obj.get("generation", "1"))


def precondition_failed(storage: Any, bucket: str, name: str | None, wanted: str | None) -> bool:
    """Return True when a write of ``bucket/name`` asking ``ifGenerationMatch=wanted`` must fail."""
    if wanted is None or name is None:
        return False
    live = _live_generation(storage, bucket, name)
    if wanted == "0":
        return live is not None
    return live != wanted


def _json_object_name(request: Any) -> str | None:
    if "name" in request.query:
        return str(request.query["name"][0])
    data = request.data
    if isinstance(data, dict):
        meta = data.get("meta", data)
        name = meta.get("name") if isinstance(meta, dict) else None
        return None if name is None else str(name)
    return None


def _refuse(response: Any) -> None:
    response.status = HTTPStatus.PRECONDITION_FAILED
    response.json(
        {
            "error": {
                "code": 412,
                "message": "At least one of the pre-conditions you specified did not hold.",
                "errors": [{"reason": "conditionNotMet", "location": "If-Match"}],
            }
        }
    )


def checked_insert(original: Handler) -> Handler:
    """Wrap the JSON API upload handler so ``ifGenerationMatch`` is honoured."""

    def insert(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> Any:
        wanted = request.query.get(_QUERY, [None])[0]
        bucket = request.params["bucket_name"]
        if precondition_failed(storage, bucket, _json_object_name(request), wanted):
            return _refuse(response)
        return original(request, response, storage, *args, **kwargs)

    return insert


def checked_xml_upload(original: Handler) -> Handler:
    """Wrap the XML API ``PUT`` so ``x-goog-if-generation-match`` is honoured."""

    def xml_upload(request: Any, response: Any, storage: Any, *args: Any, **kwargs: Any) -> Any:
        wanted = request.get_header(_XML_HEADER, None)
        params = request.params
        if precondition_failed(storage, params["bucket_name"], params["object_id"], wanted):
            return _refuse(response)
        return original(request, response, storage, *args, **kwargs)

    return xml_upload


def install() -> None:
    """Route the emulator's write handlers through the precondition checks (idempotent)."""
    if getattr(objects.insert, "_plowline_checked", False):
        return
    replacements: dict[Handler, Handler] = {
        objects.insert: checked_insert(objects.insert),
        objects.xml_upload: checked_xml_upload(objects.xml_upload),
    }
    for wrapped in replacements.values():
        wrapped._plowline_checked = True  # type: ignore[attr-defined]  # marker for idempotence
    for _pattern, handlers in emulator_server.HANDLERS:
        for method, handler in list(handlers.items()):
            if handler in replacements:
                handlers[method] = replacements[handler]
    # The server also falls back to ``objects.insert`` by attribute for uploads posted
    # without the /upload prefix.
    objects.insert = replacements[objects.insert]
