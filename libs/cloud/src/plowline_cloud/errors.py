"""Translate Google client errors onto plowline's exception tree at the boundary.

    Google / transport error                         plowline
    ─────────────────────────────────────────────    ──────────────────────────────
    429, ResourceExhausted, 5xx, UNAVAILABLE,        TransientError
    DEADLINE_EXCEEDED, ABORTED, CANCELLED,
    403 rateLimitExceeded/backendError,
    RetryError (the client's own deadline ran out),
    connection errors and timeouts
    400, INVALID_ARGUMENT, 401, 403, 404, 409,       PermanentError (original message kept)
    412, other 4xx
    missing or unusable credentials                  ConfigError

Notes:
    Only errors that come from Google clients or the network are translated; anything
    else (a bug of ours, a ``PlowlineError`` raised inside the block) passes through.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc
from plowline_core.errors import ConfigError, PermanentError, PlowlineError, TransientError

try:  # requests is how the HTTP clients (BigQuery, GCS) talk; its errors are connection errors
    from requests import exceptions as _requests_exc

    _REQUESTS_ERRORS: tuple[type[BaseException], ...] = (_requests_exc.RequestException,)
except ImportError:  # pragma: no cover - requests ships with the Google clients
    _REQUESTS_ERRORS = ()

_TRANSIENT_CALL_ERRORS: tuple[type[gexc.GoogleAPICallError], ...] = (
    gexc.TooManyRequests,
    gexc.ServerError,
    gexc.Aborted,
    gexc.Cancelled,
)
# BigQuery answers some throttling with 403 and these reasons (not a permission problem).
_TRANSIENT_REASONS = frozenset({"rateLimitExceeded", "backendError", "internalError"})
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError,
    TimeoutError,
    auth_exc.TransportError,
    *_REQUESTS_ERRORS,
)
_TRANSLATED: tuple[type[BaseException], ...] = (
    gexc.GoogleAPIError,
    auth_exc.GoogleAuthError,
    *_NETWORK_ERRORS,
)


def error_reasons(exc: BaseException) -> frozenset[str]:
    """Return the ``reason`` strings a Google API error carries (BigQuery's ``errors[].reason``)."""
    errors = getattr(exc, "errors", None) or ()
    reasons = set()
    for item in errors:
        if isinstance(item, dict) and item.get("reason"):
            reasons.add(str(item["reason"]))
    reason = getattr(exc, "reason", None)
    if isinstance(reason, str) and reason:
        reasons.add(reason)
    return frozenset(reasons)


def is_transient(exc: BaseException) -> bool:
    """Say whether retrying the same call later can succeed."""
    if isinstance(exc, gexc.RetryError | auth_exc.TransportError):
        return True
    if isinstance(exc, _TRANSIENT_CALL_ERRORS):
        return True
    if isinstance(exc, gexc.Forbidden) and error_reasons(exc) & _TRANSIENT_REASONS:
        return True
    if isinstance(exc, gexc.GoogleAPICallError):
        return False
    return isinstance(exc, _NETWORK_ERRORS)


def _describe(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    code = getattr(exc, "code", None)
    if isinstance(message, str) and message:
        return f"{code} {message}" if isinstance(code, int) else message
    return str(exc) or type(exc).__name__


def map_google_error(exc: BaseException, operation: str | None = None) -> PlowlineError:
    """Return the plowline error for a Google client or network error (not raised).

    Notes:
        The message is ``"<operation>: <status> <Google's message>"`` so logs name the call.
    """
    if isinstance(exc, PlowlineError):
        return exc
    text = _describe(exc)
    message = f"{operation}: {text}" if operation else text
    if is_transient(exc):
        return TransientError(message)
    if isinstance(exc, auth_exc.DefaultCredentialsError):
        return ConfigError(message)
    return PermanentError(message)


@contextmanager
def translated(operation: str) -> Iterator[None]:
    """Run a block of Google client calls, re-raising their errors as plowline errors."""
    try:
        yield
    except PlowlineError:
        raise
    except _TRANSLATED as exc:
        raise map_google_error(exc, operation) from exc
