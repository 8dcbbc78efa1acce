"""The fault file: which faults of the catalogue one run turns on, with their parameters.

The file is TOML (``*.toml``) or JSON (any other suffix): an optional ``seed`` and one
table per stand-in (``pubsub``, ``bigquery``, ``storage``) holding one entry per fault,
each with its parameters; a parameter left out takes its default::

    seed = 7                                  # every fault draws from its own seeded generator

    [pubsub.late-ack-redelivery]              # an ack "may succeed, but the message may be redelivered"
    rate = 0.01                               # share of acks that arrive too late to count

    [pubsub.duplicate-delivery]               # at-least-once: a message delivered twice
    rate = 0.01                               # share of deliveries that are sent again

    [pubsub.out-of-order-delivery]            # no ordering without ordering keys
    rate = 0.05                               # share of messages held back behind later ones

    [pubsub.streaming-pull-unavailable]       # the service closes a StreamingPull with UNAVAILABLE
    rate = 0.001                              # share of responses replaced by the error
    after_seconds = 30                        # and/or close every stream this long after it opened (0 = never)

    [pubsub.acknowledge-unavailable]          # Acknowledge/ModifyAckDeadline answers UNAVAILABLE
    rate = 0.01                               # share of those calls refused, nothing applied
    seconds = 0                               # after one, every such call fails this long (an outage)

    [pubsub.pull-unavailable]                 # a unary Pull answers UNAVAILABLE, nothing leased
    rate = 0.01                               # share of Pull calls refused
    seconds = 0                               # after one, every Pull fails this long (an outage)

    [pubsub.modify-ack-deadline-unavailable]  # ModifyAckDeadline alone answers UNAVAILABLE
    rate = 0.01                               # share of those calls refused, nothing applied
    seconds = 0                               # after one, every such call fails this long (an outage)

    [bigquery.backend-error]                  # 500/503 backendError on REST calls
    rate = 0.01

    [bigquery.response-lost-after-write]      # insertAll / tables.patch / jobs.insert applied, answer lost
    rate = 0.01

    [bigquery.schema-propagation-delay]       # new columns reach the Write API late
    seconds = 30

    [storage.service-unavailable]             # 503 on object requests
    rate = 0.01

The same in JSON: ``{"seed": 7, "pubsub": {"duplicate-delivery": {"rate": 0.01}}}``.

Notes:
    Parsing is strict: an unknown stand-in, fault or parameter, or a value out of range,
    is a ConfigError that lists what is known, so a typo never silently turns a fault off.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plowline_core.errors import ConfigError

from plowline_devstack.faults.catalogue import CATALOGUE, STAND_INS, FaultSpec, Params


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """The faults one run turns on: per stand-in, fault name → parameters (defaults filled in)."""

    seed: int = 0
    faults: Mapping[str, Mapping[str, Params]] = field(default_factory=dict)
    source: Path | None = None

    def for_server(self, stand_in: str) -> Mapping[str, Params]:
        """Return the faults of one stand-in (empty: none on)."""
        return self.faults.get(stand_in, {})

    def to_json(self) -> dict[str, Any]:
        """Return the plan in the fault file's JSON form (``parse_faults`` reads it back)."""
        out: dict[str, Any] = {"seed": self.seed}
        for stand_in, on in self.faults.items():
            out[stand_in] = {name: dict(params) for name, params in on.items()}
        return out

    def names(self) -> list[str]:
        """Return ``stand-in.fault`` for every fault on, for logs and ``dev up``."""
        return [f"{s}.{name}" for s, on in sorted(self.faults.items()) for name in sorted(on)]


NO_FAULTS = FaultPlan()


def _spec(stand_in: str, name: str) -> FaultSpec:
    for spec in CATALOGUE:
        if (spec.stand_in, spec.name) == (stand_in, name):
            return spec
    known = [s.name for s in CATALOGUE if s.stand_in == stand_in] or ["none yet"]
    raise ConfigError(f"unknown {stand_in} fault {name!r}; known: {', '.join(known)}")


def _params(spec: FaultSpec, raw: Any) -> dict[str, float]:
    where = f"{spec.stand_in}.{spec.name}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"fault {where} must be a table of parameters, got {raw!r}")
    unknown = set(raw) - set(spec.params)
    if unknown:
        raise ConfigError(
            f"fault {where}: unknown parameters {sorted(unknown)}; known: {sorted(spec.params)}"
        )
    values: dict[str, float] = {}
    for key, param in spec.params.items():
        value = raw.get(key, param.default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"fault {where}: {key} must be a number, got {value!r}")
        if not param.low <= value <= param.high:
            raise ConfigError(
                f"fault {where}: {key} = {value} is outside {param.low:g}..{param.high:g}"
            )
        values[key] = float(value)
    return values


def parse_faults(data: Any, source: Path | None = None) -> FaultPlan:
    """Validate the fault file's content (already decoded) and return the plan."""
    if not isinstance(data, Mapping):
        raise ConfigError("a fault file holds one object: seed and one table per stand-in")
    unknown = set(data) - {"seed", *STAND_INS}
    if unknown:
        raise ConfigError(
            f"unknown keys in the fault file: {sorted(unknown)}; known: seed, {', '.join(STAND_INS)}"
        )
    seed = data.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    faults: dict[str, dict[str, Params]] = {}
    for stand_in in STAND_INS:
        section = data.get(stand_in, {})
        if not isinstance(section, Mapping):
            raise ConfigError(f"{stand_in} must be a table of faults, got {section!r}")
        for name, raw in section.items():
            faults.setdefault(stand_in, {})[name] = _params(_spec(stand_in, name), raw)
    return FaultPlan(seed, faults, source)


def load_faults(path: Path | None) -> FaultPlan:
    """Read a fault file (TOML by suffix, else JSON); None means no faults."""
    if path is None:
        return NO_FAULTS
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read fault file {path}: {exc}") from exc
    return parse_faults(data, path.resolve())
