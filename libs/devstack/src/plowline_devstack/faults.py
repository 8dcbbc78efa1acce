"""The catalogue of faults the local stack can inject on demand, and the file that turns them on.

The stand-ins are kinder than Google: they never redeliver on their own, never drop a
stream, never lose a response. A fault file makes them fail the way the real services
do, so a test (or ``plowline dev up --faults FILE``) can show that plowline loses and
duplicates nothing when they do. Every fault is off unless the file names it, and each
is named after the real behaviour it reproduces (facts and sources: docs/local-stack.md,
"How Google really fails").

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

BigQuery REST faults apply to insertAll, tables.get/patch/update and jobs.insert/get,
jobs.query, jobs.getQueryResults (:mod:`plowline_devstack.bigquery.faults`); the Write
API faults to AppendRows (:mod:`plowline_devstack.bigquery.write_faults`); the Cloud
Storage faults to object requests (:mod:`plowline_devstack.storage.faults`). A sample
plan: ``examples/faults-1pct.toml``.

Adding a fault: add a :class:`FaultSpec` to :data:`CATALOGUE` (stand-in, name, what the
real service does, parameters), implement it in that stand-in (it receives
``FaultPlan.for_server(stand_in)``), and add a test that shows it through the official
client. Always-on corrections (request limits, validation) are not faults: they belong
to the stand-in itself, like the BigQuery corrections in ``bigquery/corrections.py``.

Notes:
    Parsing is strict: an unknown stand-in, fault or parameter, or a value out of range,
    is a ConfigError that lists what is known, so a typo never silently turns a fault off.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import tomllib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plowline_core.errors import ConfigError

Params = Mapping[str, float]


@dataclass(frozen=True, slots=True)
class Param:
    """One numeric parameter of a fault: its default and its allowed range (inclusive)."""

    default: float
    low: float = 0.0
    high: float = 1.0
    meaning: str = ""


def _rate(of_what: str) -> Param:
    return Param(0.0, 0.0, 1.0, f"share of {of_what}, 0 to 1")


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """One real failure a stand-in can reproduce."""

    stand_in: str
    name: str
    reproduces: str
    params: Mapping[str, Param] = field(default_factory=dict)


CATALOGUE: tuple[FaultSpec, ...] = (
    FaultSpec(
        "pubsub",
        "late-ack-redelivery",
        'an ack that reaches Pub/Sub after the ack deadline "may succeed, but the message may be '
        'redelivered": the Acknowledge call answers OK and the message comes back',
        {"rate": _rate("acks that arrive too late")},
    ),
    FaultSpec(
        "pubsub",
        "duplicate-delivery",
        "at-least-once delivery: a message is delivered a second time under another ack id, "
        "although the first delivery was acked in time",
        {"rate": _rate("deliveries sent twice")},
    ),
    FaultSpec(
        "pubsub",
        "out-of-order-delivery",
        "without ordering keys Pub/Sub keeps no order: a message is delivered after messages "
        "published later",
        {"rate": _rate("messages held back")},
    ),
    FaultSpec(
        "pubsub",
        "streaming-pull-unavailable",
        "the service closes a StreamingPull stream with UNAVAILABLE at any time; the client "
        "must reopen it (messages leased on it stay leased and can still be acked)",
        {
            "rate": _rate("responses replaced by UNAVAILABLE"),
            "after_seconds": Param(
                0.0, 0.0, 86400.0, "seconds after which every stream ends, 0 = never"
            ),
        },
    ),
    FaultSpec(
        "pubsub",
        "acknowledge-unavailable",
        "an Acknowledge or ModifyAckDeadline call is answered UNAVAILABLE and not applied: the "
        "ack (or nack, or lease extension) is lost unless the client retries, and the message "
        "is delivered again when its deadline passes; the official clients retry UNAVAILABLE "
        "(streaming pull for 60 s, then it shuts down)",
        {
            "rate": _rate("Acknowledge/ModifyAckDeadline calls answered UNAVAILABLE"),
            "seconds": Param(
                0.0,
                0.0,
                3600.0,
                "after one strikes, every such call is refused for this long (an outage), "
                "0 = only that call",
            ),
        },
    ),
    FaultSpec(
        "pubsub",
        "pull-unavailable",
        "a unary Pull is answered UNAVAILABLE and leases nothing (the messages stay "
        "available to the next pull); the official clients retry it with back-off when "
        "asked to (the default retry of Pull covers UNAVAILABLE)",
        {
            "rate": _rate("Pull calls answered UNAVAILABLE"),
            "seconds": Param(
                0.0,
                0.0,
                3600.0,
                "after one strikes, every Pull is refused for this long (an outage), "
                "0 = only that call",
            ),
        },
    ),
    FaultSpec(
        "pubsub",
        "modify-ack-deadline-unavailable",
        "a ModifyAckDeadline call alone is answered UNAVAILABLE and not applied, while "
        "Acknowledge goes through: a lease extension is lost (the message is delivered "
        "again when its old deadline passes) or a nack is not done (it comes back only "
        "then)",
        {
            "rate": _rate("ModifyAckDeadline calls answered UNAVAILABLE"),
            "seconds": Param(
                0.0,
                0.0,
                3600.0,
                "after one strikes, every ModifyAckDeadline is refused for this long "
                "(an outage), 0 = only that call",
            ),
        },
    ),
    FaultSpec(
        "bigquery",
        "backend-error",
        'BigQuery answers a REST call with 500 or 503 backendError ("retry with back-off"), '
        "nothing applied",
        {"rate": _rate("REST calls answered 500/503 backendError")},
    ),
    FaultSpec(
        "bigquery",
        "rate-limit-exceeded",
        'BigQuery refuses a REST call with 403 rateLimitExceeded or 429 ("Exceeded rate '
        'limits"), nothing applied; clients retry with back-off',
        {"rate": _rate("REST calls refused with 403/429 rateLimitExceeded")},
    ),
    FaultSpec(
        "bigquery",
        "timeout",
        "a REST call hangs past the client's timeout (then fails with 503, nothing applied)",
        {
            "rate": _rate("REST calls that hang"),
            "seconds": Param(60.0, 0.1, 3600.0, "how long a hanging call hangs, seconds"),
        },
    ),
    FaultSpec(
        "bigquery",
        "response-lost-after-write",
        "insertAll, tables.patch/update or jobs.insert is applied, then the answer is lost "
        "(503 backendError): a retry repeats a write that already happened",
        {"rate": _rate("applied writes whose answer is lost")},
    ),
    FaultSpec(
        "bigquery",
        "append-stream-broken-after-apply",
        "Storage Write API: an AppendRows request is applied, then the stream fails with "
        "UNAVAILABLE before its response; a blind re-send without offsets appends twice",
        {"rate": _rate("applied appends whose stream breaks before the response")},
    ),
    FaultSpec(
        "bigquery",
        "append-row-errors-then-internal",
        "Storage Write API: an AppendRows request is refused with row errors (its first row "
        "bad, nothing appended) and the next request on the same stream, in the same "
        "exchange or the resend of the other rows, is answered with an in-band INTERNAL "
        "error (nothing appended): the refused row must still be reported",
        {"rate": _rate("appends answered with row errors, then INTERNAL")},
    ),
    FaultSpec(
        "bigquery",
        "commit-invalid-stream-state",
        "Storage Write API: BatchCommitWriteStreams answers INVALID_STREAM_STATE for its "
        "streams (nothing committed) and every later commit of those streams answers the "
        "same: a PENDING stream that can never be committed",
        {
            "rate": _rate("commits refused"),
            "after": Param(0.0, 0.0, 1e6, "commits answered normally before any is refused"),
            "times": Param(0.0, 0.0, 1e6, "commits refused at most (0 = no limit)"),
        },
    ),
    FaultSpec(
        "bigquery",
        "schema-propagation-delay",
        'Storage Write API: new columns reach it "in order of minutes" after tables.patch/'
        'update; meanwhile AppendRows naming them is refused with INVALID_ARGUMENT "Input '
        'schema has more fields than BigQuery schema"',
        {"seconds": Param(60.0, 0.0, 3600.0, "seconds a widened schema takes to reach appends")},
    ),
    FaultSpec(
        "storage",
        "service-unavailable",
        "Cloud Storage answers an object request (upload, download, get, list, delete) with "
        "503, nothing done; clients retry idempotent calls",
        {"rate": _rate("object requests answered 503")},
    ),
    FaultSpec(
        "storage",
        "delete-forbidden",
        "an object delete is answered 403 and nothing deleted: a bucket retention policy "
        '("subject to bucket\'s retention policy") or a service account without '
        "storage.objects.delete; not retried",
        {"rate": _rate("object deletes answered 403")},
    ),
    FaultSpec(
        "storage",
        "response-lost-after-write",
        "an object upload is stored, then the answer is lost (503): a retry with "
        "ifGenerationMatch=0 gets 412, one without writes again",
        {"rate": _rate("stored uploads whose answer is lost")},
    ),
)
"""Every fault, by stand-in and name."""

STAND_INS = ("pubsub", "bigquery", "storage")


STRUCK_MARK = "plowline-fault-struck"
"""The line a stand-in writes to stderr each time a fault strikes (see ``struck_faults``)."""


def struck_faults(logs: Path) -> Counter[str]:
    """Count the faults that struck, per ``<stand-in>.<fault>``, from a stack's server logs.

    Notes:
        ``logs`` is the stack's ``logs/`` folder, one ``<server>.log`` per stand-in; a fault
        whose outage refuses further calls counts once, when it strikes.
    """
    struck: Counter[str] = Counter()
    for log in sorted(logs.glob("*.log")):
        with log.open("rb") as lines:
            for line in lines:
                if line.startswith(STRUCK_MARK.encode()):
                    name = line[len(STRUCK_MARK) + 1 :].decode(errors="replace").strip()
                    struck[f"{log.stem}.{name}"] += 1
    return struck


class FaultDraws:
    """The seeded draws of one stand-in's faults: each fault its own generator and rate.

    Notes:
        Thread-safe (a stand-in serves several threads); the same seed and the same sequence
        of calls strike the same calls. A fault the plan leaves out never strikes.
    """

    def __init__(self, plan: Mapping[str, Params] | None = None, seed: int = 0) -> None:
        plan = plan or {}
        self.plan = dict(plan)
        self.names = tuple(sorted(plan))
        self._rates = {name: float(params.get("rate", 0.0)) for name, params in plan.items()}
        self._draws = {name: random.Random(f"{seed}:{name}") for name in plan}
        self._lock = threading.Lock()

    def draw(self, name: str) -> bool:
        """Return True when fault ``name`` strikes this call (and say so on stderr).

        Notes:
            A strike writes ``STRUCK_MARK name`` to stderr, which the stack sends to the
            stand-in's log: ``struck_faults`` counts them (the chaos report's figures).
        """
        rate = self._rates.get(name, 0.0)
        if rate <= 0.0:
            return False
        with self._lock:
            struck = self._draws[name].random() < rate
        if struck:
            sys.stderr.write(f"{STRUCK_MARK} {name}\n")
            sys.stderr.flush()
        return struck

    def coin(self, name: str) -> bool:
        """Return a fair coin from fault ``name``'s generator (which of two real answers)."""
        with self._lock:
            return self._draws[name].random() < 0.5


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


def describe() -> str:
    """Return the catalogue as text: one paragraph per fault with its parameters."""
    lines = []
    for spec in CATALOGUE:
        params = ", ".join(
            f"{key} (default {p.default:g}; {p.meaning})" for key, p in spec.params.items()
        )
        lines.append(f"{spec.stand_in}.{spec.name}: {spec.reproduces}. Parameters: {params}.")
    return "\n".join(lines)
