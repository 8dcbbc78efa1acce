"""The mutator's settings (flags over PLOWLINE_MUTATOR_* env) and its command-line parsing."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_core.errors import ConfigError
from plowline_core.schema.entity import ColumnMode
from plowline_mutator.cli import build_parser
from plowline_mutator.listen import listen_port
from plowline_mutator.settings import MutatorSettings, settings_from_args


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start every test without mutator or emulator variables."""
    for name in (
        "TOKEN",
        "PORT",
        "HOST",
        "COLUMN_MODE",
        "INSECURE_NO_AUTH",
        "OPEN_READ_ACCESS",
        "MAX_BODY_BYTES",
    ):
        monkeypatch.delenv(f"PLOWLINE_MUTATOR_{name}", raising=False)
    monkeypatch.delenv("BIGQUERY_EMULATOR_HOST", raising=False)


def parse(*argv: str) -> MutatorSettings:
    """Parse a command line and build its settings."""
    return settings_from_args(build_parser().parse_args(list(argv)))


def test_flags_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """--port overrides PLOWLINE_MUTATOR_PORT."""
    monkeypatch.setenv("PLOWLINE_MUTATOR_PORT", "9000")
    expected = 9100
    assert expected == parse("serve", "--port", "9100").port


def test_environment_fills_what_flags_leave_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLOWLINE_MUTATOR_COLUMN_MODE applies when --column-mode is absent."""
    monkeypatch.setenv("PLOWLINE_MUTATOR_COLUMN_MODE", "major")
    expected = ColumnMode.MAJOR
    assert expected == parse("listen").column_mode


def test_defaults_serve_on_port_8080() -> None:
    """Without flags or env, serve binds 127.0.0.1:8080."""
    settings = parse("serve")
    expected = ("127.0.0.1", 8080)
    assert expected == (settings.host, settings.port)


def test_emulator_endpoint_comes_from_the_standard_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """BIGQUERY_EMULATOR_HOST is read under its Google name."""
    monkeypatch.setenv("BIGQUERY_EMULATOR_HOST", "http://127.0.0.1:9050")
    expected = "http://127.0.0.1:9050"
    assert expected == parse("listen").bigquery_emulator_host


def test_token_file_is_read_and_kept_secret(tmp_path: Path) -> None:
    """--token-file gives a SecretStr token, stripped of its newline."""
    token = tmp_path / "token"
    token.write_text("abc123\n")
    settings = parse("serve", "--token-file", str(token))
    expected = ("abc123", "**********")
    secret = settings.token.get_secret_value() if settings.token else None
    assert expected == (secret, str(settings.token))


def test_serving_without_a_token_is_refused() -> None:
    """No token and no --insecure-no-auth is a ConfigError at start."""
    with pytest.raises(ConfigError, match="no API token"):
        parse("serve").require_auth()


def test_insecure_flag_allows_serving_without_a_token() -> None:
    """--insecure-no-auth lets serve start without a token."""
    parse("serve", "--insecure-no-auth").require_auth()


def test_blank_token_is_invalid(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blank PLOWLINE_MUTATOR_TOKEN is refused."""
    monkeypatch.setenv("PLOWLINE_MUTATOR_TOKEN", "  ")
    with pytest.raises(ConfigError, match="token"):
        parse("serve")


def test_out_of_range_port_is_invalid() -> None:
    """A port above 65535 is refused naming its flag and its variable."""
    with pytest.raises(ConfigError, match=r"--port \(PLOWLINE_MUTATOR_PORT\)"):
        parse("serve", "--port", "70000")


def test_missing_config_is_named() -> None:
    """require() names the missing flag."""
    with pytest.raises(ConfigError, match="--config"):
        parse("listen").require("config")


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(
            ["add-column", "--schema", "iglu:bad", "--shred-property", "CONTEXTS"], id="bad-uri"
        ),
        pytest.param(
            ["add-column", "--schema", "iglu:com.acme/a/jsonschema/1-0-0", "--shred-property", "X"],
            id="bad-property",
        ),
        pytest.param(["create", "--partitioningType", "hour"], id="hour-partitioning"),
    ],
)
def test_bad_flags_are_usage_errors(argv: list[str]) -> None:
    """Malformed flags exit with status 2 before anything is built."""
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    expected = 2
    assert expected == exit_info.value.code


def test_serve_keeps_reads_closed_and_bodies_small_by_default() -> None:
    """Without flags, reads need the token and bodies are limited to 64 KiB."""
    settings = parse("serve")
    expected = (False, 65536)
    assert expected == (settings.open_read_access, settings.max_body_bytes)


def test_read_access_opens_by_flag_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """--open-read-access and PLOWLINE_MUTATOR_OPEN_READ_ACCESS both open reads."""
    by_flag = parse("serve", "--open-read-access").open_read_access
    monkeypatch.setenv("PLOWLINE_MUTATOR_OPEN_READ_ACCESS", "true")
    assert (by_flag, parse("serve").open_read_access) == (True, True)


@pytest.mark.parametrize("size", ["0", "100", str(65 * 1024 * 1024)])
def test_body_limit_out_of_range_is_a_config_error(size: str) -> None:
    """A body limit under 1 KiB or over 64 MiB is refused at start, naming flag and variable."""
    with pytest.raises(ConfigError, match=r"--max-body-bytes \(PLOWLINE_MUTATOR_MAX_BODY_BYTES\)"):
        parse("serve", "--max-body-bytes", size)


@pytest.mark.parametrize(
    ("argv", "environment", "expected"),
    [
        pytest.param(["listen"], None, 8084, id="default"),
        pytest.param(["listen"], "9000", 9000, id="variable"),
        pytest.param(["listen", "--port", "9100"], "9000", 9100, id="flag"),
        pytest.param(["listen", "--port", "0"], None, 0, id="any"),
    ],
)
def test_listen_serves_its_probes_on_its_own_port(
    argv: list[str], environment: str | None, expected: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """listen's /healthz, /readyz and /metrics default to 8084 (serve's API keeps 8080)."""
    if environment is not None:
        monkeypatch.setenv("PLOWLINE_MUTATOR_PORT", environment)

    assert expected == listen_port(parse(*argv))


def test_serve_keeps_port_8080() -> None:
    """serve's default port is 8080, as before listen had a port of its own."""
    expected = 8080
    assert expected == parse("serve").port
