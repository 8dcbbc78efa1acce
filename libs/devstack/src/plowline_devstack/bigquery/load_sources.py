"""Correction: load jobs read their ``gs://`` sources from the Cloud Storage stand-in.

Real BigQuery: ``jobs.insert`` with ``configuration.load.sourceUris = ["gs://b/o"]``
reads the objects from Cloud Storage.

bqemulator 1.4.0 maps ``gs://b/o`` onto a local directory (``BQEMU_GCS_LOCAL_ROOT``) and,
without one, fails every such load job (``Cannot resolve gs:// URIs``). This correction
downloads each source from the storage emulator named by ``STORAGE_EMULATOR_HOST`` in
the BigQuery server's environment (the devstack's own variable) into a private
temporary file, and loads that. With no ``STORAGE_EMULATOR_HOST`` the shipped mapping
applies.

Notes:
    Wildcards (``gs://b/prefix*``) are not expanded; plowline loads named objects.
"""

from __future__ import annotations

import os
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

import bqemulator.jobs.executor as executor

from plowline_devstack.bigquery.interception import Correction

_shipped_resolve = executor._resolve_uri
_TEMP = Path(tempfile.mkdtemp(prefix="bqemu-gcs-"))


def object_url(storage_host: str, uri: str) -> str:
    """Return the JSON API media URL of ``gs://bucket/object`` on ``storage_host``."""
    bucket, _, name = uri[len("gs://") :].partition("/")
    host = storage_host if "://" in storage_host else f"http://{storage_host}"
    quoted = urllib.parse.quote(name, safe="")
    return f"{host.rstrip('/')}/download/storage/v1/b/{bucket}/o/{quoted}?alt=media"


def _resolve_uri(uri: str, ctx: object) -> str:
    storage_host = os.environ.get("STORAGE_EMULATOR_HOST")
    settings = getattr(ctx, "settings", None)
    if not uri.startswith("gs://") or not storage_host or getattr(settings, "gcs_local_root", None):
        return str(_shipped_resolve(uri, ctx))  # type: ignore[arg-type]  # the emulator's context
    with urllib.request.urlopen(object_url(storage_host, uri), timeout=30) as response:
        data = response.read()
    handle, path = tempfile.mkstemp(dir=_TEMP, suffix=Path(uri).suffix or ".data")
    with os.fdopen(handle, "wb") as out:
        out.write(data)
    return path


def install() -> None:
    """Resolve ``gs://`` load sources through the storage emulator."""
    executor._resolve_uri = _resolve_uri


GCS_LOAD_SOURCES = Correction(
    name="gcs-load-sources",
    summary="load jobs read gs:// sources from the Cloud Storage emulator",
    patch=install,
)
