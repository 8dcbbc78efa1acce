"""A JSON Schema as schema-ddl decodes and re-encodes it: the check and the recovery hash of 2.x.

Loader 2.x decodes every schema into schema-ddl's JSON Schema model; a schema that does not
decode is an Iglu failure (``InvalidSchema``, "Cannot be parsed as JSON Schema AST"). A minor
version that cannot merge into its column gets a recovery column named after the
``String.hashCode`` of the model encoded again as compact JSON (common-streams
``TypedTabledEntity``). ``reencode`` gives that text, ``recovery_hash`` its 8 hex digits.

The encoding:

- 21 keys in a fixed order (``KEYS``), a missing one as ``null``, nested schemas alike; every
  other key (``self``, ``title``, ``allOf``…) is dropped;
- ``properties`` and ``patternProperties`` keep document order up to 4 keys; from 5 keys on,
  Scala 2.13's immutable HashMap order (``scala_order``);
- ``type``: one name prints as a string; a list is a set of type names (duplicates dropped),
  in list order up to 4, from 5 on in HashSet order over the names of schema-ddl's type
  objects (``Null``, ``String``…); an unknown name does not decode;
- whole numbers in ``minimum``/``maximum``/``multipleOf`` print as integers; the format
  ``ivp6`` is written ``ipv6``;
- a keyword whose value has the wrong JSON type does not decode (``null`` reads as absent).

Notes:
    Pure. Deviation: numbers inside ``enum`` print as Python reads them (``1e2`` as ``100.0``);
    circe keeps the source text, which a parsed schema no longer has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from plowline_core.errors import PlowlineError
from plowline_core.schema.scala_order import champ_order, java_string_hash

#: The keys schema-ddl's encoder writes, in its order.
KEYS = (
    "multipleOf",
    "minimum",
    "maximum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "$schema",
    "items",
    "additionalItems",
    "minItems",
    "maxItems",
    "properties",
    "additionalProperties",
    "required",
    "patternProperties",
    "type",
    "enum",
    "oneOf",
    "anyOf",
    "description",
)
_TYPE_OBJECTS = {
    "null": "Null",
    "boolean": "Boolean",
    "string": "String",
    "integer": "Integer",
    "number": "Number",
    "array": "Array",
    "object": "Object",
}
_SMALL = 4  # Scala's Map1..Map4 / Set1..Set4 keep insertion order
_FORMAT_ALIASES = {"ivp6": "ipv6"}


class InvalidSchema(PlowlineError):
    """The schema does not decode as schema-ddl's JSON Schema model (2.x: an Iglu failure)."""


def reencode(schema: Any) -> str:
    """Return the compact JSON text schema-ddl writes for ``schema``.

    Raises:
        InvalidSchema: naming the keyword that does not decode.
    """
    return _json(_schema(schema, "$"))


def recovery_hash(schema: Any) -> str:
    """Return the 8 lower-case hex digits of ``String.hashCode`` of ``reencode(schema)``.

    Raises:
        InvalidSchema: the schema does not decode.
    """
    return format(java_string_hash(reencode(schema)) & 0xFFFFFFFF, "08x")


def check(schema: Any) -> None:
    """Raise InvalidSchema when ``schema`` does not decode as schema-ddl's model."""
    _schema(schema, "$")


def _schema(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidSchema(f"{path}: a schema must be a JSON object")
    out: dict[str, Any] = {}
    for key in KEYS:
        item = value.get(key)
        out[key] = None if item is None else _DECODERS[key](item, f"{path}.{key}")
    return out


def _number(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise InvalidSchema(f"{path}: must be a number")
    try:
        number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    except InvalidOperation:
        raise InvalidSchema(f"{path}: must be a finite number") from None
    if not number.is_finite():
        raise InvalidSchema(f"{path}: must be a finite number")
    if number == number.to_integral_value():
        return int(number)
    return _Raw(str(number))


def _whole(value: Any, path: str) -> int:
    number = _number(value, path)
    if not isinstance(number, int):
        raise InvalidSchema(f"{path}: must be a whole number")
    return number


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise InvalidSchema(f"{path}: must be a string")
    return value


def _format(value: Any, path: str) -> str:
    text = _string(value, path)
    return _FORMAT_ALIASES.get(text, text)


def _schema_or_bool(value: Any, path: str) -> Any:
    return value if isinstance(value, bool) else _schema(value, path)


def _items(value: Any, path: str) -> Any:
    if isinstance(value, list):
        return [_schema(item, f"{path}[{index}]") for index, item in enumerate(value)]
    return _schema(value, path)


def _schemas(value: Any, path: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise InvalidSchema(f"{path}: must be an array of schemas")
    return [_schema(item, f"{path}[{index}]") for index, item in enumerate(value)]


def _schema_map(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidSchema(f"{path}: must be an object of schemas")
    keys = list(value)
    order = keys if len(keys) <= _SMALL else champ_order(keys)
    return {key: _schema(value[key], f"{path}.{key}") for key in order}


def _required(value: Any, path: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidSchema(f"{path}: must be an array of strings")
    return list(value)


def _type(value: Any, path: str) -> Any:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names:
        raise InvalidSchema(f"{path}: must be a type name or a non-empty array of them")
    for name in names:
        if name not in _TYPE_OBJECTS:
            raise InvalidSchema(f"{path}: {name!r} is not a JSON Schema type")
    if isinstance(value, str):
        return value
    distinct = list(dict.fromkeys(names))
    if len(distinct) == 1:
        return distinct[0]
    if len(distinct) <= _SMALL:
        return distinct
    by_object = {_TYPE_OBJECTS[name]: name for name in distinct}
    return [by_object[name] for name in champ_order(by_object)]


def _enum(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidSchema(f"{path}: must be an array")
    return value


class _Raw(str):
    """A number whose JSON text is already written (a BigDecimal's ``toString``)."""

    __slots__ = ()


def _json(value: Any) -> str:
    if isinstance(value, _Raw):
        return str.__str__(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_text(k)}:{_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_json(item) for item in value) + "]"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # any size: BigInt
    if isinstance(value, Decimal):
        return str(value)
    return _text(value)


def _text(value: Any) -> str:
    return orjson.dumps(value).decode()


_DECODERS: dict[str, Callable[[Any, str], Any]] = {
    "multipleOf": _number,
    "minimum": _number,
    "maximum": _number,
    "maxLength": _whole,
    "minLength": _whole,
    "pattern": _string,
    "format": _format,
    "$schema": _string,
    "items": _items,
    "additionalItems": _schema_or_bool,
    "minItems": _whole,
    "maxItems": _whole,
    "properties": _schema_map,
    "additionalProperties": _schema_or_bool,
    "required": _required,
    "patternProperties": _schema_map,
    "type": _type,
    "enum": _enum,
    "oneOf": _schemas,
    "anyOf": _schemas,
    "description": _string,
}
