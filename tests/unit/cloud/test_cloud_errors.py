"""Google client errors map onto plowline's exception tree."""

from __future__ import annotations

import pytest
import requests
from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc
from plowline_cloud.errors import map_google_error, translated
from plowline_core.errors import ConfigError, PermanentError, PlowlineError, TransientError


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(gexc.TooManyRequests("slow down"), id="429"),
        pytest.param(gexc.ResourceExhausted("quota"), id="RESOURCE_EXHAUSTED"),
        pytest.param(gexc.InternalServerError("boom"), id="500"),
        pytest.param(gexc.BadGateway("bad gateway"), id="502"),
        pytest.param(gexc.ServiceUnavailable("down"), id="UNAVAILABLE"),
        pytest.param(gexc.DeadlineExceeded("late"), id="DEADLINE_EXCEEDED"),
        pytest.param(gexc.Aborted("aborted"), id="ABORTED"),
        pytest.param(gexc.RetryError("deadline of 60s exceeded", cause=None), id="retry-deadline"),
        pytest.param(
            gexc.Forbidden("Exceeded rate limits", errors=[{"reason": "rateLimitExceeded"}]),
            id="403-rateLimitExceeded",
        ),
        pytest.param(requests.ConnectionError("refused"), id="requests-connection"),
        pytest.param(requests.Timeout("timed out"), id="requests-timeout"),
        pytest.param(ConnectionResetError("reset"), id="socket-reset"),
        pytest.param(TimeoutError(), id="timeout"),
        pytest.param(auth_exc.TransportError("token endpoint down"), id="auth-transport"),
    ],
)
def test_transient_errors(error: Exception) -> None:
    """Errors that a later retry can get past become TransientError."""
    assert TransientError is type(map_google_error(error))


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(gexc.BadRequest("bad"), id="400"),
        pytest.param(gexc.InvalidArgument("bad arg"), id="INVALID_ARGUMENT"),
        pytest.param(gexc.Unauthorized("who"), id="401"),
        pytest.param(gexc.Forbidden("no", errors=[{"reason": "accessDenied"}]), id="403"),
        pytest.param(gexc.NotFound("gone"), id="404"),
        pytest.param(gexc.AlreadyExists("there"), id="409"),
        pytest.param(gexc.PreconditionFailed("etag"), id="412"),
    ],
)
def test_permanent_errors(error: Exception) -> None:
    """Errors that the same request will always get become PermanentError."""
    assert PermanentError is type(map_google_error(error))


def test_missing_credentials_are_a_config_error() -> None:
    """Absent default credentials are a setting to fix, not something to retry."""
    error = auth_exc.DefaultCredentialsError("no credentials")
    assert ConfigError is type(map_google_error(error))


def test_message_keeps_the_original_words() -> None:
    """The mapped message names the operation and keeps Google's message and status."""
    error = gexc.NotFound("Not found: Table p:d.t")
    expected = "read schema: 404 Not found: Table p:d.t"
    assert expected == str(map_google_error(error, "read schema"))


def test_translated_raises_the_mapped_error() -> None:
    """Inside ``translated`` a Google error comes out as the mapped plowline error."""
    with pytest.raises(PermanentError) as caught, translated("insert rows"):
        raise gexc.BadRequest("no such field: x.")
    expected = "insert rows: 400 no such field: x."
    assert expected == str(caught.value)


def test_translated_chains_the_cause() -> None:
    """The Google error stays reachable as ``__cause__`` for logs and tracebacks."""
    original = gexc.ServiceUnavailable("down")
    with pytest.raises(TransientError) as caught, translated("publish"):
        raise original
    assert original is caught.value.__cause__


def test_translated_leaves_other_errors_alone() -> None:
    """A bug of ours (a ValueError) is not disguised as a Google failure."""
    with pytest.raises(ValueError, match="ours"), translated("anything"):
        raise ValueError("ours")


def test_translated_passes_plowline_errors_through() -> None:
    """A plowline error raised inside the block is re-raised unchanged."""
    error = PermanentError("already exists")
    with pytest.raises(PlowlineError) as caught, translated("put"):
        raise error
    assert error is caught.value
