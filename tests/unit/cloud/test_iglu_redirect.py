"""Specification of HttpRegistry's refusal to follow a registry from https down to http.

Notes:
    httpx's MockTransport stands in for the network (a local https server would need a
    certificate the registry trusts); the redirects between real servers are specified in
    tests/integration/cloud/test_iglu_http.py.
"""

from __future__ import annotations

import httpx
import pytest
from plowline_cloud.iglu import HttpRegistry
from plowline_core.errors import RegistryUnavailable
from plowline_core.iglu.key import SchemaKey

KEY = SchemaKey.parse("iglu:com.acme/checkout_started/jsonschema/1-0-0")


def _registry(location: str, seen: list[httpx.Request]) -> HttpRegistry:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if (request.url.host, request.url.port) == ("iglu.acme.com", None):
            return httpx.Response(302, headers={"Location": location})
        return httpx.Response(200, json={"type": "object"})

    transport = httpx.MockTransport(answer)
    return HttpRegistry("acme", "https://iglu.acme.com/api", "s3cret", transport=transport)


def test_a_redirect_from_https_to_http_is_refused() -> None:
    """A registry asked over https that redirects to http is unavailable; http is never asked."""
    seen: list[httpx.Request] = []
    with (
        _registry("http://mirror.acme.com/schema.json", seen) as registry,
        pytest.raises(RegistryUnavailable, match="from https to http: refused"),
    ):
        registry.lookup(KEY)
    expected = ["https"]
    assert expected == [request.url.scheme for request in seen]


def test_a_redirect_to_another_https_host_drops_the_apikey() -> None:
    """The apikey goes to the registry's origin only, not to the host a redirect names."""
    seen: list[httpx.Request] = []
    with _registry("https://mirror.acme.com/schema.json", seen) as registry:
        registry.lookup(KEY)
    expected = [("iglu.acme.com", "s3cret"), ("mirror.acme.com", None)]
    assert expected == [(request.url.host, request.headers.get("apikey")) for request in seen]


def test_the_same_host_on_another_port_is_another_origin() -> None:
    """A redirect to the same host on another port does not get the apikey."""
    seen: list[httpx.Request] = []
    with _registry("https://iglu.acme.com:8443/schema.json", seen) as registry:
        registry.lookup(KEY)
    expected = [(None, "s3cret"), (8443, None)]
    assert expected == [(request.url.port, request.headers.get("apikey")) for request in seen]
