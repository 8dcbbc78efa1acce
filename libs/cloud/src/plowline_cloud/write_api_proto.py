"""Protobuf rows for the Storage Write API, built from the table schema.

The Write API takes rows as serialized proto2 messages plus a self-contained
``DescriptorProto`` (nested RECORDs as nested types). Value encodings follow the
Write API's type mapping:

    BigQuery       proto field            value sent
    ─────────────  ─────────────────────  ─────────────────────────────────────
    STRING         string                 as is
    INTEGER        int64                  int
    FLOAT          double                 float
    BOOLEAN        bool                   bool
    TIMESTAMP      int64                  microseconds since the Unix epoch (UTC)
    DATE           int32                  days since 1970-01-01
    NUMERIC        string                 decimal text (BigQuery parses it exactly)
    BIGNUMERIC     string                 decimal text
    JSON           string                 JSON text
    BYTES          bytes                  the base64 text of insertAll, decoded
    TIME, DATETIME string                 as is (canonical text, as insertAll takes it)
    GEOGRAPHY      string                 as is (WKT or GeoJSON)
    INTERVAL       string                 as is
    RECORD         nested message         recursively
    REPEATED       repeated label         list items
    RANGE, other   (left out)             a value for such a column fails its row

Notes:
    Pure functions of the schema; ``RowEncoder`` is cached per schema tuple by the
    sinks. A value that does not encode (wrong type) is reported per row, never raised.
    plowline's rows only carry the types it writes; the others appear in a table when an
    analyst adds them, and then only a row naming such a column is refused (by the
    encoder here, by BigQuery with insertAll and load jobs); every other row loads.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message
from plowline_core.schema.field import Field, FieldType, Mode

_FDP = descriptor_pb2.FieldDescriptorProto
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_SCALARS: dict[FieldType, int] = {
    FieldType.STRING: _FDP.TYPE_STRING,
    FieldType.INTEGER: _FDP.TYPE_INT64,
    FieldType.FLOAT: _FDP.TYPE_DOUBLE,
    FieldType.BOOLEAN: _FDP.TYPE_BOOL,
    FieldType.TIMESTAMP: _FDP.TYPE_INT64,
    FieldType.DATE: _FDP.TYPE_INT32,
    FieldType.NUMERIC: _FDP.TYPE_STRING,
    FieldType.JSON: _FDP.TYPE_STRING,
    FieldType.BIGNUMERIC: _FDP.TYPE_STRING,
    FieldType.BYTES: _FDP.TYPE_BYTES,
    FieldType.TIME: _FDP.TYPE_STRING,
    FieldType.DATETIME: _FDP.TYPE_STRING,
    FieldType.GEOGRAPHY: _FDP.TYPE_STRING,
    FieldType.INTERVAL: _FDP.TYPE_STRING,
}
ROW_MESSAGE = "PlowlineRow"
AUTO = "AUTO"


def descriptor_for(
    fields: Sequence[Field], name: str = ROW_MESSAGE
) -> descriptor_pb2.DescriptorProto:
    """Return a self-contained proto2 descriptor for rows of a table with ``fields``."""
    message = descriptor_pb2.DescriptorProto(name=name)
    for number, field in enumerate(fields, start=1):
        if not encodable(field):
            continue
        entry = message.field.add(name=field.name, number=number)
        entry.label = _FDP.LABEL_REPEATED if field.mode is Mode.REPEATED else _FDP.LABEL_OPTIONAL
        if field.type is FieldType.RECORD:
            nested = descriptor_for(field.fields, f"R{number}_{field.name}")
            message.nested_type.append(nested)
            entry.type = _FDP.TYPE_MESSAGE
            entry.type_name = nested.name
        else:
            entry.type = _SCALARS[field.type]
    return message


def encodable(field: Field) -> bool:
    """Say whether Write API rows can carry values of ``field`` (RANGE and unknown types not)."""
    return field.type is FieldType.RECORD or field.type in _SCALARS


def timestamp_micros(value: Any) -> int:
    """Return microseconds since the epoch for an ISO-8601 timestamp (or a number of seconds)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return round(value * 1_000_000)
    text = str(value).strip()
    if text == AUTO:
        # insertAll's "AUTO" (server time, Snowplow's load_tstamp) has no Write API form.
        return timestamp_micros(datetime.now(UTC).isoformat())
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text.replace(" UTC", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    delta = parsed - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def date_days(value: Any) -> int:
    """Return days since 1970-01-01 for an ISO date."""
    return date.fromisoformat(str(value)).toordinal() - _EPOCH_DAY


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _numeric_text(value: Any) -> str:
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    return str(value)


def _bytes(value: Any) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"not base64 text: {value!r}")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"not base64 text: {exc}") from None


def _float(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def _int(value: Any) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise TypeError(f"not an integer: {value!r}")
    return int(value)


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"not a boolean: {value!r}")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not a string: {value!r}")
    return value


_CONVERT: dict[FieldType, Any] = {
    FieldType.STRING: _string,
    FieldType.INTEGER: _int,
    FieldType.FLOAT: _float,
    FieldType.BOOLEAN: _bool,
    FieldType.TIMESTAMP: timestamp_micros,
    FieldType.DATE: date_days,
    FieldType.NUMERIC: _numeric_text,
    FieldType.JSON: _json_text,
    FieldType.BIGNUMERIC: _numeric_text,
    FieldType.BYTES: _bytes,
    FieldType.TIME: _string,
    FieldType.DATETIME: _string,
    FieldType.GEOGRAPHY: _string,
    FieldType.INTERVAL: _string,
}


class RowEncoder:
    """Serialize BigQuery-JSON rows as proto2 messages of one table schema."""

    def __init__(self, fields: Sequence[Field]) -> None:
        self.fields = tuple(fields)
        self.descriptor = descriptor_for(self.fields)
        pool = descriptor_pool.DescriptorPool()
        file_proto = descriptor_pb2.FileDescriptorProto(name="plowline_row.proto", syntax="proto2")
        file_proto.message_type.append(self.descriptor)
        pool.Add(file_proto)
        found = pool.FindMessageTypeByName(self.descriptor.name)
        self._message_class = message_factory.GetMessageClass(found)
        self._by_name = _by_lower_name(self.fields)

    def encode(self, data: Mapping[str, Any]) -> bytes:
        """Return the serialized row.

        Raises:
            ValueError: a value does not fit its column (the message names the column).
        """
        message = self._message_class()
        _fill(message, self._by_name, data, "")
        return bytes(message.SerializeToString())


def _fill(
    message: Message, fields: Mapping[str, Field], data: Mapping[str, Any], path: str
) -> None:
    for name, value in data.items():
        if value is None:
            continue
        field = fields.get(name.lower())
        if field is None:
            raise ValueError(f"no such field: {path}{name}.")
        if not encodable(field):
            raise ValueError(
                f"{path}{name}: the column is {field.type_name}, "
                "which plowline does not write with the Storage Write API"
            )
        if field.mode is Mode.REPEATED:
            if not isinstance(value, list):
                raise ValueError(f"{path}{name}: expected an array")
            _fill_repeated(message, field, value, f"{path}{name}")
        elif field.type is FieldType.RECORD:
            _fill_record(getattr(message, name), field, value, f"{path}{name}")
        else:
            setattr(message, name, _scalar(field, value, f"{path}{name}"))


def _fill_repeated(message: Message, field: Field, items: list[Any], where: str) -> None:
    target = getattr(message, field.name)
    if field.type is FieldType.RECORD:
        for item in items:
            if item is None:
                raise ValueError(f"{where}: null in an array")
            _fill_record(target.add(), field, item, where)
        return
    for item in items:
        if item is None:
            raise ValueError(f"{where}: null in an array")
        target.append(_scalar(field, item, where))


def _fill_record(message: Message, field: Field, value: Any, where: str) -> None:
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object")
    message.SetInParent()  # an empty object is a present (non-NULL) struct
    _fill(message, _by_lower_name(field.fields), value, f"{where}.")


def _by_lower_name(fields: Sequence[Field]) -> dict[str, Field]:
    # BigQuery column names are case-insensitive; the descriptor keeps the table's spelling.
    return {field.name.lower(): field for field in fields}


def _scalar(field: Field, value: Any, where: str) -> Any:
    try:
        return _CONVERT[field.type](value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{where}: cannot convert {value!r} to {field.type_name}: {exc}") from None
