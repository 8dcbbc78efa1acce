"""An Iglu registry over HTTP (Iglu Server, or a static registry behind a web server).

404                                   → None (the registry does not have the schema)
401 / 403                             → RegistryUnavailable at once (the apikey is wrong)
5xx, 429, timeout, connection error,
a body that is not a JSON object      → retried with backoff, then RegistryUnavailable
any other status                      → RegistryUnavailable at once
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.key import SchemaKey
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


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
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._name = name
        self._uri = uri.rstrip("/")
        self._apikey = apikey
        self._settings = (timeout, retries, backoff)
        headers = {"apikey": apikey} if apikey else {}
        self._client = httpx.Client(
            timeout=timeout, headers=headers, transport=transport, follow_redirects=True
        )
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
        try:
            return self._retrying(self._get, url)
        except _Flaky as error:
            attempts = self._settings[1] + 1
            raise RegistryUnavailable(f"{error} (gave up after {attempts} attempts)") from error

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
        try:
            response = self._client.get(url)
        except httpx.TransportError as error:
            raise _Flaky(
                f"{self._name}: GET {url} failed: {type(error).__name__}: {error}"
            ) from error
        status = response.status_code
        if status == 404:
            return None
        if status == 200:
            return self._schema(url, response.content)
        if status in (401, 403):
            raise RegistryUnavailable(
                f"{self._name}: GET {url} answered {status}: the apikey is wrong or missing"
            )
        failure = f"{self._name}: GET {url} answered {status}"
        raise _Flaky(failure) if status in _RETRYABLE_STATUS else RegistryUnavailable(failure)

    def _schema(self, url: str, content: bytes) -> Mapping[str, Any]:
        try:
            schema = orjson.loads(content)
        except orjson.JSONDecodeError as error:
            raise _Flaky(f"{self._name}: GET {url} returned invalid JSON: {error}") from error
        if not isinstance(schema, dict):
            raise _Flaky(f"{self._name}: GET {url} returned JSON that is not an object")
        return schema
