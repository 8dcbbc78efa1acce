"""Specification of which HTTP statuses mean "not found" for each Iglu repository."""

from __future__ import annotations

import pytest
from plowline_core.errors import ConfigError
from plowline_core.iglu.config import (
    EmbeddedConnection,
    HttpConnection,
    ResolverConfig,
    parse_not_found,
)
from support.configs import embedded, http, resolver_config


def _config() -> ResolverConfig:
    config = resolver_config(
        http("https://iglucentral.com", name="Iglu Central"),
        http("https://iglu.acme.com/api", name="acme server", priority=1, apikey="k"),
        embedded("iglu", name="local", priority=2),
        cache_size=500,
        cache_ttl=None,
    )
    return ResolverConfig.parse(config)


def _statuses(config: ResolverConfig) -> dict[str, frozenset[int]]:
    return {
        ref.name: ref.connection.not_found_statuses()
        for ref in config.repositories
        if isinstance(ref.connection, HttpConnection)
    }


def test_a_repository_without_apikey_takes_403_as_not_found() -> None:
    """A static registry (no apikey) answers 403 for a missing file: 403 and 404 mean not found."""
    expected = frozenset({403, 404})
    assert expected == HttpConnection("https://bucket.example").not_found_statuses()


def test_a_repository_with_an_apikey_takes_only_404_as_not_found() -> None:
    """An Iglu Server (apikey) answering 403 means the key is wrong: only 404 means not found."""
    expected = frozenset({404})
    assert expected == HttpConnection("https://iglu.example/api", "key").not_found_statuses()


def test_parses_entries_whose_names_hold_spaces() -> None:
    """Entries are separated by ';' and a repository name may hold spaces."""
    expected = {"Iglu Central": frozenset({404}), "acme server": frozenset({403, 404})}
    assert expected == parse_not_found(" Iglu Central=404 ; acme server=403, 404;")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("static", "expected REPOSITORY=STATUS", id="no-equals"),
        pytest.param("=403", "expected REPOSITORY=STATUS", id="no-name"),
        pytest.param("a=403;a=404", "named twice", id="twice"),
        pytest.param("a=500", "not a status that can mean 'not found'", id="5xx"),
        pytest.param("a=429", "not a status that can mean 'not found'", id="try-again"),
        pytest.param("a=forbidden", "not a status that can mean 'not found'", id="word"),
    ],
)
def test_refuses_malformed_overrides(text: str, message: str) -> None:
    """A malformed override is a ConfigError that says what is expected."""
    with pytest.raises(ConfigError, match=message):
        parse_not_found(text)


def test_an_override_replaces_the_default_and_keeps_404() -> None:
    """The given statuses replace the repository's default; 404 always means not found."""
    config = _config().with_not_found(
        {"Iglu Central": frozenset({410}), "acme server": frozenset({403})}
    )
    expected = {"Iglu Central": frozenset({404, 410}), "acme server": frozenset({403, 404})}
    assert expected == _statuses(config)


def test_repositories_without_an_override_keep_their_default() -> None:
    """Only the named repositories change."""
    config = _config().with_not_found({"acme server": frozenset({403})})
    expected = {"Iglu Central": frozenset({403, 404}), "acme server": frozenset({403, 404})}
    assert expected == _statuses(config)


@pytest.mark.parametrize(
    "name", [pytest.param("nope", id="unknown"), pytest.param("local", id="embedded")]
)
def test_an_override_must_name_an_http_repository(name: str) -> None:
    """Naming a repository the config lacks, or an embedded one, is a ConfigError listing the names."""
    with pytest.raises(ConfigError, match=r"HTTP repositories: \['Iglu Central', 'acme server'\]"):
        _config().with_not_found({name: frozenset({403})})


def test_the_embedded_repository_is_untouched() -> None:
    """Overrides apply to HTTP connections only."""
    config = _config().with_not_found({"Iglu Central": frozenset({403})})
    assert EmbeddedConnection("iglu") == config.repositories[2].connection
