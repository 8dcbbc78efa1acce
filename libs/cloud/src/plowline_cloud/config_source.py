"""Read ``--config`` and ``--resolver`` as Snowplow passes them: a path, or base64 of JSON or HOCON.

Snowplow 0.x deployments put the self-describing JSON on the command line base64-encoded
(``--config=$(base64 -w0 bigquery.json)``); 1.x and 2.x pass a HOCON file or its base64
(2.x names the resolver ``--iglu-config``: every service takes both names). Every
subcommand of every service reads both flags through this module, so they all accept the
same four forms: a JSON file, a HOCON file, base64 of JSON, base64 of HOCON.

Notes:
    A value that names an existing file is that file; anything else must be base64
    (standard or URL-safe, padding optional) of UTF-8 text. Text is parsed as JSON first,
    then as HOCON (pyhocon) with substitutions resolved: ``${loader.output.good}``, and
    ``${HOST}``-style environment variables as HOCON defines them. Every error is a
    ``ConfigError`` that starts with the flag, so the user knows which argument to fix.
    A 2.x config's derived names (``plowline_core.v2_names``) are overridden by the
    service's flags (``v2_overrides``) over ``PLOWLINE_V2_*`` variables.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import structlog
from plowline_core.errors import ConfigError
from plowline_core.pipeline_config import PipelineConfig
from plowline_core.v2_names import OVERRIDE_PREFIX, V2Names
from pyhocon import ConfigFactory, ConfigTree
from pyhocon.exceptions import ConfigException
from pyparsing import ParseBaseException

_log = structlog.get_logger("plowline.config")
UNMAPPED_WARNING = "config keys plowline does not use (ignored; see deploy/MIGRATING.md)"
UNMAPPED_WARNING_V2 = (
    "2.x config keys plowline does not use (ignored, each with the reason; see the README: "
    "Coming from Loader 2.x)"
)
IGLU_CONFIG_HELP = "2.x's name for --resolver (either may be given)"
_SHOWN = 200  # characters of a bad value quoted back in an error (paths fit)


@dataclass(frozen=True, slots=True)
class ConfigSource:
    """The text behind a ``--config``/``--resolver`` value and where relative paths start.

    Attributes:
        text: the file's content, or the decoded base64.
        base_dir: the file's directory; the working directory for base64 values.
        origin: the file's path as given, or ``(base64)``: how messages name it.
    """

    text: str
    base_dir: Path
    origin: str


def read_source(value: str | Path, flag: str) -> ConfigSource:
    """Return the text of ``value``: the file it names, else its base64 decoding.

    Raises:
        ConfigError: ``<flag> <value>: …`` when it is neither a readable file nor base64.
    """
    path = Path(value)
    try:
        is_file, exists = path.is_file(), path.exists()
    except OSError:  # e.g. a base64 string longer than a file name may be
        is_file = exists = False
    if is_file:
        try:
            return ConfigSource(path.read_text(encoding="utf-8"), path.resolve().parent, str(path))
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"{flag} {path}: cannot read: {error}") from error
    if exists:
        raise ConfigError(f"{flag} {path}: not a file")
    text = _decode_base64(str(value))
    if text is None:
        raise ConfigError(
            f"{flag} {_short(str(value))}: no such file, and not base64 either; pass a path "
            f"or the file's base64 ({flag}=$(base64 -w0 FILE))"
        )
    return ConfigSource(text, Path.cwd(), "(base64)")


def parse_source(source: ConfigSource, flag: str) -> dict[str, Any]:
    """Return the JSON or HOCON object in ``source`` as plain Python values.

    Raises:
        ConfigError: neither JSON nor HOCON, or not an object at the top.
    """
    try:
        document = orjson.loads(source.text)
    except orjson.JSONDecodeError:
        document = _parse_hocon(source, flag)
    if not isinstance(document, dict):
        raise ConfigError(f"{flag} {source.origin}: must be a JSON or HOCON object at the top")
    return document


def load_pipeline_config(
    value: str | Path,
    flag: str = "--config",
    warn: Callable[[str], None] | None = None,
    v2_overrides: Mapping[str, str | None] | None = None,
) -> PipelineConfig:
    """Read a Snowplow 0.x, 1.x or 2.x config; one warning names every key plowline ignores.

    The warning is logged, or handed to ``warn`` (tools whose stdout is their output
    print it on stderr themselves). ``v2_overrides`` (``V2Names`` field → flag value,
    None: not given) win over the ``PLOWLINE_V2_<FIELD>`` variables.

    Raises:
        ConfigError: unreadable, unparsable or invalid; the message starts with ``flag``.
    """
    source = read_source(value, flag)
    overrides = v2_environment() | {k: v for k, v in (v2_overrides or {}).items() if v}
    try:
        config = PipelineConfig.from_document(parse_source(source, flag), overrides)
    except ConfigError as error:
        if str(error).startswith(flag):
            raise
        raise ConfigError(f"{flag} {source.origin}: {error}") from error
    message = UNMAPPED_WARNING_V2 if config.v2 is not None else UNMAPPED_WARNING
    separator = "; " if config.v2 is not None else ", "  # 2.x entries hold commas
    if config.unmapped and warn is not None:
        warn(f"{message}: {separator.join(config.unmapped)}")
    elif config.unmapped:
        _log.warning(
            message,
            flag=flag,
            keys=list(config.unmapped),
        )
    return config


def v2_environment() -> dict[str, str]:
    """Return the 2.x name overrides set as ``PLOWLINE_V2_<FIELD>`` variables."""
    names = V2Names.__dataclass_fields__
    return {
        name: value for name in names if (value := os.environ.get(OVERRIDE_PREFIX + name.upper()))
    }


def load_document(value: str | Path, flag: str) -> tuple[dict[str, Any], ConfigSource]:
    """Return a JSON/HOCON document given as a path or base64, and where it came from."""
    source = read_source(value, flag)
    return parse_source(source, flag), source


def _decode_base64(value: str) -> str | None:
    compact = "".join(value.split())
    if not compact:
        return None
    padded = compact + "=" * (-len(compact) % 4)
    for altchars in (b"+/", b"-_"):
        try:
            text = base64.b64decode(padded, altchars=altchars, validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            continue
        if text.strip() and all(char.isprintable() or char in "\t\n\r" for char in text):
            return text
    return None


def _parse_hocon(source: ConfigSource, flag: str) -> Any:
    try:
        tree = ConfigFactory.parse_string(source.text, basedir=str(source.base_dir))
    except (ConfigException, ParseBaseException) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ConfigError(f"{flag} {source.origin}: neither JSON nor HOCON: {first}") from None
    return _plain(tree)


def _plain(node: Any) -> Any:
    if isinstance(node, ConfigTree | Mapping):
        return {str(key): _plain(child) for key, child in node.items()}
    if isinstance(node, list):
        return [_plain(child) for child in node]
    return node


def _short(value: str) -> str:
    return value if len(value) <= _SHOWN else value[:_SHOWN] + "…"
