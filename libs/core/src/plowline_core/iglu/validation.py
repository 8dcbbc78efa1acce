"""Validate self-describing configuration documents and say exactly which key is wrong.

A Snowplow configuration file is a self-describing JSON ``{"schema": "iglu:…", "data": {…}}``.
``check_self_describing`` picks the JSON Schema for the document's key from a fixed table,
validates the whole document, and raises ``ConfigError`` whose message starts with the key
path from the document's root (``data.repositories[1].connection: …``).

Notes:
    Pure. Schemas are compiled once per process (they are module constants of the callers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft7Validator, FormatChecker
from jsonschema.exceptions import ValidationError, best_match

from plowline_core.errors import ConfigError
from plowline_core.iglu.key import SchemaKey

_MAX_REPORTED = 5
_FORMATS = FormatChecker()


def check_self_describing(
    document: Mapping[str, Any], schemas: Mapping[SchemaKey, Mapping[str, Any]]
) -> tuple[SchemaKey, Mapping[str, Any]]:
    """Validate a self-describing document against its schema; return its key and ``data``.

    Raises:
        ConfigError: not an object, an unexpected ``schema``, or data that breaks the schema.
    """
    if not isinstance(document, Mapping):
        raise ConfigError(f"expected a self-describing JSON object, got {_kind(document)}")
    uri = document.get("schema")
    key = _accepted_key(uri, schemas)
    envelope = {
        "type": "object",
        "properties": {"schema": {"type": "string"}, "data": schemas[key]},
        "required": ["schema", "data"],
        "additionalProperties": False,
    }
    check_against(document, envelope)
    return key, document["data"]


def check_against(instance: Any, schema: Mapping[str, Any], prefix: str = "") -> None:
    """Raise ConfigError listing the paths where ``instance`` breaks ``schema``."""
    validator = Draft7Validator(schema, format_checker=_FORMATS)
    errors = sorted(
        (_deepest(error) for error in validator.iter_errors(instance)),
        key=lambda error: join_path(prefix, error.absolute_path),
    )
    if errors:
        raise ConfigError(describe(errors, prefix))


def describe(errors: Iterable[ValidationError], prefix: str = "") -> str:
    """Return ``path: message`` for the first few errors, joined by ``; ``."""
    lines = [f"{join_path(prefix, error.absolute_path)}: {error.message}" for error in errors]
    more = len(lines) - _MAX_REPORTED
    text = "; ".join(lines[:_MAX_REPORTED])
    return f"{text}; and {more} more" if more > 0 else text


def join_path(prefix: str, parts: Iterable[str | int]) -> str:
    """Return ``a.b[1].c`` for the parts ``a, b, 1, c`` after a prefix."""
    text = prefix
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text = f"{text}.{part}" if text else str(part)
    return text or "(document)"


def _deepest(error: ValidationError) -> ValidationError:
    # oneOf/anyOf say "is not valid under any of the given schemas"; the best branch error
    # names the actual key, which is what a person fixing the file needs.
    if error.context:
        best = best_match(error.context)
        if best is not None:
            return _deepest(best)
    return error


def _accepted_key(uri: Any, schemas: Mapping[SchemaKey, Mapping[str, Any]]) -> SchemaKey:
    accepted = ", ".join(sorted(key.to_uri() for key in schemas))
    key = _key_or_none(uri)
    if key is None or key not in schemas:
        raise ConfigError(f"schema: expected one of {accepted}, got {uri!r}")
    return key


def _key_or_none(uri: Any) -> SchemaKey | None:
    if not isinstance(uri, str):
        return None
    try:
        return SchemaKey.parse(uri)
    except ValueError:
        return None


def _kind(value: Any) -> str:
    return type(value).__name__
