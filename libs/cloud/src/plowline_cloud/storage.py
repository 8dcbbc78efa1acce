"""Cloud Storage adapter: private, never-overwritten objects under a bucket prefix.

Notes:
    ``put`` needs only ``storage.objects.create`` (``roles/storage.objectCreator``): it never
    reads before writing, and asks Cloud Storage for ``if_generation_match=0``, the atomic
    "never overwrite". A 412 then means one of two things, told apart by what ``put`` saw:
    on the first attempt, someone else holds the name (``ObjectExists``); after an attempt
    whose response was lost (a retried error), it is that attempt's own object, already
    written, so ``put`` returns. The writers name each object uniquely (a fresh id per
    flush), so no other writer can hold the name of a write that was retried: rows are
    never written twice and the messages are never nacked for ever.
    The local stack enforces preconditions as Cloud Storage does
    (``plowline_devstack.storage.preconditions``).
    Objects get no ACL of their own: they inherit the bucket's (private) access.
"""

from __future__ import annotations

import functools
from typing import Any

import google.cloud.storage as storage  # type: ignore[import-untyped]  # no py.typed
from google.api_core import exceptions as gexc
from google.cloud.storage.retry import DEFAULT_RETRY  # type: ignore[import-untyped]  # no py.typed
from plowline_core.errors import ConfigError, ObjectExists, PermanentError

from plowline_cloud.errors import translated

_SCHEME = "gs://"


class _Attempts:
    """Whether an upload attempt failed in a way the retry policy retried."""

    def __init__(self) -> None:
        self.retried = False

    def failed(self, _error: Exception) -> None:
        """Note a retried failure: that attempt may have written the object."""
        self.retried = True


def parse_gcs_url(url: str) -> tuple[str, str]:
    """Split ``gs://bucket/some/prefix`` into ``("bucket", "some/prefix/")``.

    Raises:
        ConfigError: the URL does not start with ``gs://`` or names no bucket.
    """
    if not url.startswith(_SCHEME):
        raise ConfigError(f"not a Cloud Storage URL (expected gs://bucket/prefix): {url!r}")
    bucket, _, path = url[len(_SCHEME) :].partition("/")
    if not bucket:
        raise ConfigError(f"Cloud Storage URL names no bucket: {url!r}")
    prefix = path.strip("/")
    return bucket, f"{prefix}/" if prefix else ""


class GcsBlobStore:
    """Objects of one bucket under an optional prefix (satisfies ``BlobStore``)."""

    def __init__(
        self,
        client: storage.Client,
        bucket: str,
        prefix: str = "",
        *,
        timeout: float = 60.0,
        retry_deadline: float = 120.0,
    ) -> None:
        self._client = client
        self._bucket = client.bucket(bucket)
        self._prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        self._timeout = timeout
        self._retry = DEFAULT_RETRY.with_deadline(retry_deadline)

    @property
    def url(self) -> str:
        """Where the objects live, as ``gs://bucket/prefix/``."""
        return f"{_SCHEME}{self._bucket.name}/{self._prefix}"

    def put(self, name: str, data: bytes, content_type: str = "application/x-ndjson") -> None:
        """Write a new private object; raise ObjectExists if someone else holds the name.

        Notes:
            Idempotent under retries: a 412 after a retried attempt is this call's own
            earlier write, whose response was lost (see the module docstring).
        """
        blob = self._blob(name)
        attempts = _Attempts()
        with translated(f"write {self._where(name)}"):
            # The retry wraps the whole upload (the client's own retry is off) so that this
            # call sees each retried failure.
            upload = functools.partial(
                blob.upload_from_string,
                data,
                content_type=content_type,
                if_generation_match=0,
                timeout=self._timeout,
                retry=None,
            )
            try:
                self._retry(upload, on_error=attempts.failed)()
            except gexc.PreconditionFailed as exc:
                if attempts.retried:
                    return
                raise ObjectExists(f"{self._where(name)} already exists") from exc

    # Above list(): below it, ``list`` in an annotation names that method.
    def folders(self, prefix: str = "") -> list[str]:
        """Return the folders (relative, ending in ``/``) right under ``prefix``, sorted.

        Notes:
            A delimiter listing: Cloud Storage answers the folders as ``prefixes`` beside
            the objects directly under ``prefix``, one page per 1,000 entries.
        """
        with translated(f"list folders of {self._where(prefix)}"):
            listing = self._client.list_blobs(
                self._bucket,
                prefix=self._prefix + prefix,
                delimiter="/",
                timeout=self._timeout,
                retry=self._retry,
            )
            for _page in listing.pages:  # prefixes fill in as the pages are read
                pass
            folders = [str(folder) for folder in listing.prefixes]
        return sorted(folder[len(self._prefix) :] for folder in folders)

    def list(self, prefix: str = "") -> list[str]:
        """Return the names (relative to the store's prefix) under ``prefix``, sorted."""
        with translated(f"list {self._where(prefix)}"):
            blobs = self._client.list_blobs(
                self._bucket, prefix=self._prefix + prefix, timeout=self._timeout, retry=self._retry
            )
            names = [str(blob.name) for blob in blobs]
        return sorted(name[len(self._prefix) :] for name in names)

    def get(self, name: str) -> bytes:
        """Return an object's content (PermanentError when it does not exist)."""
        with translated(f"read {self._where(name)}"):
            return bytes(
                self._blob(name).download_as_bytes(timeout=self._timeout, retry=self._retry)
            )

    def move(self, source: str, destination: str) -> None:
        """Copy ``source`` to ``destination``, then delete ``source``.

        Notes:
            Idempotent after a crash between copy and delete: a destination that already
            holds the same content only gets the source deleted; other content is refused.
        """
        blob = self._blob(source)
        target = self._blob(destination)
        with translated(f"move {self._where(source)} to {self._where(destination)}"):
            if target.exists(timeout=self._timeout, retry=self._retry):
                if self._content(target) != self._content(blob):
                    raise PermanentError(f"{self._where(destination)} already exists")
            else:
                self._bucket.copy_blob(
                    blob, self._bucket, target.name, timeout=self._timeout, retry=self._retry
                )
            blob.delete(timeout=self._timeout, retry=self._retry)

    def _content(self, blob: Any) -> bytes:
        return bytes(blob.download_as_bytes(timeout=self._timeout, retry=self._retry))

    def _blob(self, name: str) -> Any:
        return self._bucket.blob(self._prefix + name.lstrip("/"))

    def _where(self, name: str) -> str:
        return f"{self.url}{name}"
