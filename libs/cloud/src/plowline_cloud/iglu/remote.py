"""An Iglu registry over HTTP (Iglu Server, or a static registry behind a web server).

404, and each status of ``not_found``  → None (the registry does not have the schema)
                                         (default: 403 too when there is no apikey, see
                                         ``plowline_core.iglu.config``)
401 / 403 otherwise                    → RegistryUnavailable at once (the apikey is wrong)
5xx, 429, timeout, connection error,
a body that is not a JSON object       → retried with backoff, then RegistryUnavailable
a body still arriving after
``2 * timeout``, or over ``MAX_SCHEMA_BYTES`` → retried with backoff, then RegistryUnavailable
list_versions: ``GET {uri}/schemas/{vendor}/{name}/{format}/{model}``, Iglu Server's list of
the model's schema URIs; any answer but a 200 with a JSON array (a static registry answers
404 or a directory page) → None: the registry cannot list.
a redirect from https to http, more
than ``MAX_REDIRECTS`` redirects        → RegistryUnavailable at once
any other status                       → RegistryUnavailable at once
a key whose URL would leave
``{uri}/schemas/``                      → None, nothing sent (no schema lives there)

Notes:
    Bounded: each attempt waits at most ``timeout`` per connect or read, and gives up on a
    body still trickling in after ``2 * timeout`` (so at most about ``3 * timeout``); a
    lookup makes at most ``retries + 1`` attempts, so a registry that hangs costs a lookup
    about ``(retries + 1) * timeout`` and one that trickles ``(retries + 1) * 3 * timeout``,
    plus the backoff. Redirects are followed by hand: the
    ``apikey`` header goes only to the registry's own origin (scheme, host and port), never
    to the host a redirect names, and a redirect from https to http is refused (schemas
    decide casting and DDL; they are not read from plain http once https was asked for).
    Confined: a lookup GETs exactly ``{uri}/schemas/{vendor}/{name}/{format}/{M-R-A}`` as
    written; a key whose URL a client would normalise elsewhere (``..``, which ``SchemaKey``
    already refuses) is not sent, so neither the request nor the apikey leaves the registry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import httpx
import orjson
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.key import SchemaKey, SchemaVer
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
_REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
MAX_SCHEMA_BYTES = 4 * 1024 * 1024  # Iglu Central's largest schema is a few dozen KiB


class _Flaky(RegistryUnavailable):
    """A failure worth another attempt."""


class HttpRegistry:
    """Satisfy ``Registry`` with ``GET {uri}/schemas/{vendor}/{name}/{format}/{M-R-A}``.

    Notes:
        ``retries`` extra attempts after the first, waiting ``backoff * 2**n`` seconds (at most
        ``8 * backoff``). Pickles as its settings; the unpickled copy opens its own client.
    """

    def __init__(
        self,
        name: str,
        uri: str,
        apikey: str | None = None,
        timeout: float = 5.0,
        retries: int = 2,
        backoff: float = 0.2,
        not_found: frozenset[int] = frozenset({404}),
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._name = name
        self._uri = uri.rstrip("/")
        self._apikey = apikey
        self._settings = (timeout, retries, backoff, not_found | {404})
        self._origin = httpx.URL(self._uri)
        self._schemas = httpx.URL(f"{self._uri}/schemas/").raw_path
        self._client = httpx.Client(timeout=timeout, transport=transport, follow_redirects=False)
        self._retrying = Retrying(
            stop=stop_after_attempt(retries + 1),
            wait=wait_exponential(multiplier=backoff, max=8 * backoff),
            retry=retry_if_exception_type(_Flaky),
            sleep=sleep,
            reraise=True,
        )

    @property
    def name(self) -> str:
        """The repository's name."""
        return self._name

    @property
    def uri(self) -> str:
        """The base URI (before ``/schemas``)."""
        return self._uri

    def lookup(self, key: SchemaKey) -> Mapping[str, Any] | None:
        """Return the schema, None on 404; raise RegistryUnavailable when it cannot answer."""
        url = f"{self._uri}/schemas/{key.to_path()}"
        if httpx.URL(url).raw_path != self._schemas + key.to_path().encode():
            return None  # the URL would leave schemas/: no schema of this registry is there
        try:
            return self._retrying(self._get, url)
        except _Flaky as error:
            attempts = self._settings[1] + 1
            raise RegistryUnavailable(f"{error} (gave up after {attempts} attempts)") from error

    def list_versions(
        self, vendor: str, name: str, format: str, model: int
    ) -> Sequence[SchemaVer] | None:
        """Return the model's versions Iglu Server lists, or None when the registry cannot list.

        Raises:
            RegistryUnavailable: the registry could not answer (after the retries).
        """
        url = f"{self._uri}/schemas/{vendor}/{name}/{format}/{model}"
        try:
            status, content = self._retrying(self._follow, httpx.URL(url), time.monotonic())
        except _Flaky as error:
            raise RegistryUnavailable(str(error)) from error
        if status != 200:
            return None
        try:
            listed = orjson.loads(content)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(listed, list):
            return None
        versions: list[SchemaVer] = []
        for item in listed:
            uri = item if isinstance(item, str) else None
            try:
                key = SchemaKey.parse(uri) if uri is not None else None
            except ValueError:
                key = None
            if key is not None and (key.vendor, key.name, key.version.model) == (
                vendor,
                name,
                model,
            ):
                versions.append(key.version)
        return sorted(versions)

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def __enter__(self) -> HttpRegistry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        return (HttpRegistry, (self._name, self._uri, self._apikey, *self._settings))

    def _get(self, url: str) -> Mapping[str, Any] | None:
        status, content = self._follow(httpx.URL(url), time.monotonic())
        if status in self._settings[3]:
            return None
        if status == 200:
            return self._schema(url, content)
        if status in (401, 403):
            raise RegistryUnavailable(
                f"{self._name}: GET {url} answered {status}: the apikey is wrong or missing "
                f"(a static registry that answers {status} for a missing schema: add "
                f"'{self._name}={status}' to the service's --iglu-not-found)"
            )
        failure = f"{self._name}: GET {url} answered {status}"
        raise _Flaky(failure) if status in _RETRYABLE_STATUS else RegistryUnavailable(failure)

    def _follow(self, url: httpx.URL, started: float) -> tuple[int, bytes]:
        """GET ``url``, following redirects; the apikey goes to the registry's origin only."""
        for _ in range(MAX_REDIRECTS + 1):
            headers = (
                {"apikey": self._apikey} if self._apikey and _same_origin(url, self._origin) else {}
            )
            try:
                with self._client.stream("GET", url, headers=headers) as response:
                    location = response.headers.get("location")
                    if response.status_code not in _REDIRECT_STATUS or location is None:
                        return response.status_code, self._body(url, response, started)
            except httpx.TransportError as error:
                raise _Flaky(
                    f"{self._name}: GET {url} failed: {type(error).__name__}: {error}"
                ) from error
            target = url.join(location)
            if url.scheme == "https" and target.scheme != "https":
                raise RegistryUnavailable(
                    f"{self._name}: GET {url} redirects to {target}, from https to "
                    f"{target.scheme}: refused (fix the repository's uri or the server)"
                )
            url = target
        raise RegistryUnavailable(f"{self._name}: more than {MAX_REDIRECTS} redirects from {url}")

    def _body(self, url: httpx.URL, response: httpx.Response, started: float) -> bytes:
        """Read the body, giving up past ``2 * timeout`` or ``MAX_SCHEMA_BYTES``."""
        deadline = started + 2 * self._settings[0]
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_SCHEMA_BYTES:
                raise _Flaky(f"{self._name}: GET {url} sent more than {MAX_SCHEMA_BYTES} bytes")
            if time.monotonic() > deadline:
                raise _Flaky(
                    f"{self._name}: GET {url} still sending after {2 * self._settings[0]:g} s"
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def _schema(self, url: str, content: bytes) -> Mapping[str, Any]:
        try:
            schema = orjson.loads(content)
        except orjson.JSONDecodeError as error:
            raise _Flaky(f"{self._name}: GET {url} returned invalid JSON: {error}") from error
        if not isinstance(schema, dict):
            raise _Flaky(f"{self._name}: GET {url} returned JSON that is not an object")
        return schema


def _same_origin(url: httpx.URL, origin: httpx.URL) -> bool:
    return (url.scheme, url.host, url.port) == (origin.scheme, origin.host, origin.port)
