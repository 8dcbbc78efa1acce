"""The catalogue: every fault a stand-in can reproduce, with its parameters and their ranges.

:func:`describe` prints it (``plowline dev faults``); :mod:`.plan` checks a fault file
against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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
        "slow-load-job",
        "a load job runs for a while: jobs.insert and then jobs.get answer it RUNNING, for "
        "minutes under load, before it is DONE; BigQuery may read the source objects at any "
        "time until then, and the rows appear only when it is DONE",
        {
            "rate": _rate("load jobs that run slowly"),
            "seconds": Param(
                30.0,
                0.1,
                3600.0,
                "how long such a job stays RUNNING, seconds (it reads "
                "its sources and commits its rows at the end)",
            ),
        },
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


def describe() -> str:
    """Return the catalogue as text: one paragraph per fault with its parameters."""
    lines = []
    for spec in CATALOGUE:
        params = ", ".join(
            f"{key} (default {p.default:g}; {p.meaning})" for key, p in spec.params.items()
        )
        lines.append(f"{spec.stand_in}.{spec.name}: {spec.reproduces}. Parameters: {params}.")
    return "\n".join(lines)
