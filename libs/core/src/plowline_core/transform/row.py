"""Build the BigQuery-JSON row of an enriched event, or the bad row that replaces it.

The row is the event's atomic values (NULLs omitted, as the parser gives them), one
column per entity type, and ``"load_tstamp": "AUTO"``, which BigQuery fills with the
insertion time. Contexts of the same column share one array; a schema found in both
``contexts`` and ``derived_contexts`` gets both sets of items, contexts first (loader 2.x
behaviour; loader 1.x let the derived ones overwrite the others, losing data).

Column mode ``major`` (loader 2.x): each entity goes where 2.x routes it
(``schema.major``): the model's column (its minor versions merged up to the entity's), the
version's recovery column when it cannot merge, its 1.x column when ``rules`` make it legacy,
or nowhere (2.x adds no column: an empty closed object, or a schema ``rules`` skip). A schema
that does not decode as JSON Schema, and two models whose columns share a name, are Iglu
failures of the events that carry them (``{"schemaKey", "message"}`` items); from a clash on,
both models' events fail. A money field that does not fit NUMERIC(18, 2) is a WrongType
against the atomic schema (``money``).

Outcomes:
    ``TransformedRow``    every entity resolved and cast cleanly
    ``IgluErrorRow``      a schema was not found, or values did not fit: every failure of
                          the event is listed (deviation: loader 1.x turned a lone
                          null-in-REQUIRED into a NULL entity; plowline never drops data)
    ``RuntimeErrorRow``   an unexpected error on odd data, with its message
    ``ParsingErrorRow``   from ``transform_line`` only: the TSV line did not parse

Notes:
    ``RegistryUnavailable`` propagates: a failing registry is not the event's fault, so the
    caller retries and does not ack. Column name and compiled caster are cached per
    (schema key, shred property) for the builder's lifetime (build a new builder to pick up
    a schema superseded in place); misses are not cached here (the resolver caches them for
    its TTL), so a schema published later is picked up.
    Speed: ``transform_line`` first tries a fused path (atomic values and entity texts by
    ``decode_valid_line``, in C, entities looked up by their URI text among the plans already
    compiled). Any irregularity — an invalid or unusual value, an unknown or new schema, a
    cast problem, any exception — sends the line down the careful path (``parse`` then
    ``build``), which makes the exact bad row; so a row from the fused path is always the
    careful path's row, byte for byte. An entity field with more than ``MAX_NESTING``
    brackets is parsed by ``event.entities.parse_json``, which refuses one nested too
    deep in a few microseconds whatever its size (it raises: the careful path explains).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson

from plowline_core.badrows import BadRow, IgluErrorRow, RuntimeErrorRow
from plowline_core.badrows.encoding import dumps
from plowline_core.errors import RegistryUnavailable
from plowline_core.event.atomic import decode_valid_line
from plowline_core.event.entities import may_nest_too_deep, parse_json
from plowline_core.event.fields import FIELD_COUNT
from plowline_core.event.json import event_payload
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import decode_fields, parse
from plowline_core.iglu.key import SchemaKey
from plowline_core.iglu.resolver import Resolver, SchemaNotFound
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.legacy import NO_RULES, ColumnRules
from plowline_core.transform.cast import CastError
from plowline_core.transform.money import money_failures
from plowline_core.transform.plan import (
    SCHEMA_VERSION_FIELD,
    EntityPlan,
    compile_plan,
    skip_values,
)
from plowline_core.transform.routing import NOWHERE, MajorRouter, legacy_texts

LOAD_TSTAMP_AUTO = "AUTO"
_TYPE_SETS_CAP = 65536  # distinct combinations of entity types remembered
_IDENTITY_CAP = 65536  # SchemaKey objects remembered by identity

_CONTEXTS = ShredProperty.CONTEXTS
_DERIVED = ShredProperty.DERIVED_CONTEXTS
_UNSTRUCT = ShredProperty.UNSTRUCT_EVENT

# The envelopes the fused path accepts as they are
# (the parser accepts any 1-0-*; others take the careful path).
_CONTEXTS_ENVELOPES = frozenset(
    f"iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-{n}" for n in range(2)
)
_UNSTRUCT_ENVELOPES = frozenset(
    f"iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-{n}" for n in range(2)
)
_loads = orjson.loads


class TransformedRow(NamedTuple):
    """A good event as a BigQuery-JSON row, and the entity types its columns need."""

    event_id: str
    data: dict[str, Any]
    types: frozenset[EntityType]

    def to_json(self) -> bytes:
        """Return the row as compact JSON (the insertAll ``json`` object); never raises.

        Notes:
            Text that is not valid Unicode (a lone surrogate, possible only in a ``str``
            line built in memory) is written as U+FFFD (``badrows.encoding``).
        """
        return dumps(self.data, max_depth=None)


class RowBuilder:
    """Turn enriched events into BigQuery-JSON rows, resolving entity schemas once each."""

    def __init__(
        self,
        resolver: Resolver,
        column_mode: ColumnMode = ColumnMode.FULL,
        *,
        rules: ColumnRules = NO_RULES,
    ) -> None:
        self._resolver = resolver
        self._mode = column_mode
        self._router = MajorRouter(resolver, rules)
        self._plans: dict[tuple[SchemaKey, ShredProperty], EntityPlan] = {}
        self._type_sets: dict[int, frozenset[EntityType]] = {}
        # Hot-path index by key identity: parsed events share SchemaKey objects (parse is
        # cached), and hashing a SchemaKey dataclass costs more than the rest of the lookup.
        self._by_identity: dict[tuple[int, ShredProperty], tuple[SchemaKey, EntityPlan]] = {}
        # The fused path's index of the same plans, by URI text (``key.to_uri()`` is the
        # text SchemaKey.parse accepted, so a URI found here is a valid one).
        self._by_uri: dict[ShredProperty, dict[str, EntityPlan]] = {
            _CONTEXTS: {},
            _DERIVED: {},
            _UNSTRUCT: {},
        }

    @property
    def column_mode(self) -> ColumnMode:
        """The column naming and typing rules in use."""
        return self._mode

    def column_of(self, entity: EntityType) -> str | None:
        """Return the column the rows write ``entity`` to, None before its first row or if none.

        Notes:
            In ``major`` mode that is the model's column, the key's recovery column or its
            legacy column; the type tracker asks, so that it looks for the right column.
        """
        plan = self._plans.get((entity.schema, entity.shred_property))
        return plan.column if plan is not None and plan.column else None

    def transform_line(self, line: str) -> TransformedRow | BadRow:
        """Parse one enriched TSV line and build its row (or its bad row).

        Raises:
            RegistryUnavailable: a registry could not answer; retry later, do not ack.
        """
        valid = decode_valid_line(line)
        if valid is not None:
            atomic, contexts, unstruct, derived = valid
            width = len(atomic)
            try:
                row = self._fused(atomic, contexts, unstruct, derived)
            except Exception:  # any surprise: the careful path decides, and explains
                row = None
            if row is not None:
                return row
            # The atomic values are valid: keep them (the fused path only appended keys)
            # and let the careful path judge the entities.
            for key in list(atomic)[width:]:
                del atomic[key]
            event: EnrichedEvent | BadRow = decode_fields(line.split("\t"), line, atomic=atomic)
        else:
            # What parse(line) gives, without decoding the atomic values a second time.
            values = line.split("\t")
            event = decode_fields(values, line) if len(values) == FIELD_COUNT else parse(line)
        if not isinstance(event, EnrichedEvent):
            return event
        return self.build(event)

    def build(self, event: EnrichedEvent) -> TransformedRow | BadRow:
        """Return the event's row, or the bad row listing every problem of the event.

        Raises:
            RegistryUnavailable: a registry could not answer; retry later, do not ack.
        """
        try:
            return self._build(event)
        except RegistryUnavailable:
            raise
        except Exception as error:  # odd data must become a bad row, never stop the stream
            return RuntimeErrorRow(_describe(error), event_payload(event))

    def _known_plan(
        self, key: SchemaKey, shred: ShredProperty, failures: list[Mapping[str, Any]]
    ) -> EntityPlan | None:
        """Return the plan of ``key`` as ``shred``: by the key object's identity, else resolved."""
        known = self._by_identity.get((id(key), shred))
        if known is not None and known[0] is key:
            return known[1]
        return self._plan(key, shred, failures)

    def _build(self, event: EnrichedEvent) -> TransformedRow | BadRow:
        data = dict(event.atomic)
        data["load_tstamp"] = LOAD_TSTAMP_AUTO
        failures: list[Mapping[str, Any]] = []
        errors: list[CastError] = []
        seen = 0  # bit mask of the plans used: the row's types without hashing EntityTypes
        for shred, entities in ((_CONTEXTS, event.contexts), (_DERIVED, event.derived_contexts)):
            for entity in entities:
                plan = self._known_plan(entity.schema, shred, failures)
                if plan is None or not plan.column:
                    continue
                seen |= plan.bit
                items = data.get(plan.column)
                if items is None:
                    items = data[plan.column] = []
                if entity.data is None:  # loader 1.x drops null items of a REPEATED column
                    continue
                value = plan.caster(entity.data, errors)
                if errors:
                    failures.extend(error.to_failure(plan.uri) for error in errors)
                    errors.clear()
                elif plan.schema_version is None:
                    items.append(value)
                else:
                    items.append({SCHEMA_VERSION_FIELD: plan.schema_version, **value})
        unstruct = event.unstruct_event
        if unstruct is not None:
            plan = self._known_plan(unstruct.schema, _UNSTRUCT, failures)
            if plan is not None and plan.column:
                seen |= plan.bit
                value = plan.caster(unstruct.data, errors)
                if errors:
                    failures.extend(error.to_failure(plan.uri) for error in errors)
                else:
                    data[plan.column] = value
        if self._mode is ColumnMode.MAJOR:
            unfit = money_failures(data)
            if unfit:
                failures[:0] = unfit  # atomic first, as 2.x lists them
        if failures:
            return IgluErrorRow(tuple(failures), event_payload(event))
        types = self._type_sets.get(seen)
        if types is None:
            types = self._types_of(seen)
        return TransformedRow(data["event_id"], data, types)

    def _fused(
        self, data: dict[str, Any], contexts: str, unstruct: str, derived: str
    ) -> TransformedRow | None:
        """Return the row of a line valid in every respect, else None (see the module notes).

        Raises:
            Exception: any (KeyError, TypeError…) where the JSON is not as enrich writes it,
                e.g. a missing key, an unknown schema, an array instead of an object.

        Notes:
            Writes into ``data`` (the line's atomic values) and only ever appends keys.
        """
        if self._mode is ColumnMode.MAJOR and money_failures(data):
            return None  # the careful path makes the bad row
        data["load_tstamp"] = LOAD_TSTAMP_AUTO
        errors: list[CastError] = []
        seen = 0
        if contexts:
            seen = _fused_contexts(contexts, self._by_uri[_CONTEXTS], data, errors)
            if seen < 0:
                return None
        if derived:
            bits = _fused_contexts(derived, self._by_uri[_DERIVED], data, errors)
            if bits < 0:
                return None
            seen |= bits
        if unstruct:
            # Subscripts, not checks: anything irregular raises, and the careful path decides.
            document = parse_json(unstruct) if may_nest_too_deep(unstruct) else _loads(unstruct)
            entity = document["data"]
            if document["schema"] not in _UNSTRUCT_ENVELOPES or type(entity) is not dict:
                return None
            column, caster, _, _, _, bit = self._by_uri[_UNSTRUCT][entity["schema"]]
            value = caster(entity["data"], errors)
            if errors:
                return None
            data[column] = value
            seen |= bit
        types = self._type_sets.get(seen)
        if types is None:
            types = self._types_of(seen)
        return TransformedRow(data["event_id"], data, types)

    def _plan(
        self, key: SchemaKey, shred: ShredProperty, failures: list[Mapping[str, Any]]
    ) -> EntityPlan | None:
        """Return the plan of an entity type, resolving and compiling it on first sight."""
        plan = self._plans.get((key, shred))
        if plan is None:
            if self._mode is ColumnMode.MAJOR:
                plan = self._major_plan(key, shred, failures)
                if plan is None:
                    return None
            else:
                resolution = self._resolver.resolve(key)
                if isinstance(resolution, SchemaNotFound):
                    failures.append(resolution.to_failure())
                    return None
                bit = 1 << len(self._plans)
                plan = compile_plan(key, resolution.schema, shred, self._mode, bit)
            self._plans[(key, shred)] = plan
            if plan.column:
                self._by_uri[shred][plan.uri] = plan
        if len(self._by_identity) >= _IDENTITY_CAP:
            self._by_identity.clear()
        # The entry holds the key itself, so its id cannot be reused while the entry lives.
        self._by_identity[(id(key), shred)] = (key, plan)
        return plan

    def _major_plan(
        self, key: SchemaKey, shred: ShredProperty, failures: list[Mapping[str, Any]]
    ) -> EntityPlan | None:
        """Return the 2.x plan of a key (``routing``): its column, or none, or a failure."""
        route = self._router.route(key, shred, failures)
        for column in self._router.take_clashed():
            self._forget(column)
        if route is None:
            return None
        if route.column == NOWHERE:
            return EntityPlan(NOWHERE, skip_values, EntityType(key, shred), key.to_uri(), None, 0)
        bit = 1 << len(self._plans)
        plan = compile_plan(key, route.schema, shred, route.mode, bit, route.column)
        legacy = route.mode is ColumnMode.FULL  # a 1.x column: 2.x's type names
        return plan._replace(caster=legacy_texts(plan.caster)) if legacy else plan

    def _forget(self, column: str) -> None:
        """Drop the cached plans writing to ``column`` (its recovery columns included)."""
        for pair, plan in list(self._plans.items()):
            if plan.column == column or plan.column.startswith(f"{column}_recovered_"):
                del self._plans[pair]
                self._by_uri[pair[1]].pop(plan.uri, None)
        self._by_identity.clear()

    def _types_of(self, seen: int) -> frozenset[EntityType]:
        types = frozenset(plan.entity_type for plan in self._plans.values() if plan.bit & seen)
        if len(self._type_sets) < _TYPE_SETS_CAP:
            self._type_sets[seen] = types
        return types


def _fused_contexts(
    text: str, plans: dict[str, EntityPlan], data: dict[str, Any], errors: list[CastError]
) -> int:
    """Add the items of a contexts field to ``data``; return the plans' bits, -1 to give up.

    Raises:
        Exception: any (KeyError, TypeError…) where the JSON is not as enrich writes it: the
            subscripts below stand for the checks of a self-describing envelope and entity.
    """
    document = parse_json(text) if may_nest_too_deep(text) else _loads(text)
    entities = document["data"]
    if document["schema"] not in _CONTEXTS_ENVELOPES or type(entities) is not list:
        return -1
    seen = 0
    for entity in entities:
        column, caster, _, _, version, bit = plans[entity["schema"]]
        value = entity["data"]
        seen |= bit
        items = data.get(column)
        if items is None:
            items = data[column] = []
        if value is None:  # loader 1.x drops null items of a REPEATED column
            continue
        value = caster(value, errors)
        if errors:
            return -1
        items.append(value if version is None else {SCHEMA_VERSION_FIELD: version, **value})
    return seen


def _describe(error: Exception) -> str:
    """Return a one-line message naming the exception type."""
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__
