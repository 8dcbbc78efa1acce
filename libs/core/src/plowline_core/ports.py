"""The seams between the pure core and the outside world, in our own words.

Adapters in ``plowline_cloud`` satisfy these structurally (``BigQueryRowSink``,
``PubSubPublisher``…); ``plowline_core.testing`` has in-memory fakes (``InMemoryRowSink``…).
Every method may raise ``TransientError`` (retry, do not ack) or ``PermanentError``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.schema.field import Field

if TYPE_CHECKING:  # both import this module
    from plowline_core.iglu.outage import RegistryOutage
    from plowline_core.iglu.resolver import Resolution


class Clock(Protocol):
    """Tells the time; injected so that the core never reads it."""

    def now(self) -> datetime:
        """Return the current UTC time (timezone-aware)."""
        ...


class Registry(Protocol):
    """One Iglu repository (embedded directory, Iglu Server over HTTP, in-memory)."""

    @property
    def name(self) -> str:
        """The repository's name from the resolver config."""
        ...

    def lookup(self, key: SchemaKey) -> Mapping[str, Any] | None:
        """Return the JSON Schema, or None when the repository does not have it (404).

        Raises:
            RegistryUnavailable: the repository could not answer (timeout, 5xx, bad JSON).
        """
        ...


@runtime_checkable
class ListingRegistry(Protocol):
    """A repository that can list the versions of a model (embedded; Iglu Server over HTTP)."""

    def list_versions(
        self, vendor: str, name: str, format: str, model: int
    ) -> Sequence[SchemaVer] | None:
        """Return the model's versions it holds, or None when it cannot list (static HTTP).

        Raises:
            RegistryUnavailable: the repository could not answer.
        """
        ...


class SchemaResolver(Protocol):
    """Iglu schemas one key at a time (``plowline_core.iglu.resolver.Resolver``)."""

    def resolve(self, key: SchemaKey) -> Resolution:
        """Return the schema or SchemaNotFound; raise RegistryUnavailable on a failing repo."""
        ...


@runtime_checkable
class VersionResolver(SchemaResolver, Protocol):
    """A resolver that also lists a model's versions (``plowline_core.iglu.resolver.Resolver``)."""

    def versions_up_to(self, key: SchemaKey) -> tuple[SchemaVer, ...]:
        """Return the versions of the key's model up to the key, ascending."""
        ...


class OutageListener(Protocol):
    """Told when a repository's outage starts and ends (a service logs both)."""

    def outage_started(self, outage: RegistryOutage) -> None:
        """A repository has just failed, after answering (or since the start)."""
        ...

    def outage_ended(self, outage: RegistryOutage, now: datetime) -> None:
        """A repository answered again after ``outage``."""
        ...


class TableSchemaStore(Protocol):
    """The events table's schema."""

    def fields(self) -> tuple[Field, ...]:
        """Return the table's top-level fields (may be cached)."""
        ...

    def refresh(self) -> tuple[Field, ...]:
        """Read the schema from the backend now and return it."""
        ...

    def add_fields(self, fields: Sequence[Field]) -> tuple[Field, ...]:
        """Widen the table with the given top-level fields in one change; return what was added.

        Fields that already exist (by name) are skipped; never narrows or retypes.
        """
        ...


@dataclass(frozen=True, slots=True)
class Row:
    """One BigQuery-JSON row to insert; ``insert_id`` is the event id."""

    insert_id: str
    data: Mapping[str, Any]


class InsertReason(StrEnum):
    """Why the table did not take a row (a closed catalogue; BigQuery's reasons mapped)."""

    UNKNOWN_FIELD = "unknown_field"  # a field the table lacks: wait for the mutator
    INVALID = "invalid"  # BigQuery rejected the value (wrong type, missing REQUIRED…)
    TOO_LARGE = "too_large"  # over BigQuery's row or request size
    STOPPED = "stopped"  # not attempted because another row of the request failed


@dataclass(frozen=True, slots=True)
class InsertFailure:
    """A row the table rejected, with BigQuery's words for why."""

    row: Row
    reason: InsertReason
    message: str
    location: str | None = None


class RowSink(Protocol):
    """Where good rows go (BigQuery insertAll in production)."""

    def insert(self, rows: Sequence[Row]) -> list[InsertFailure]:
        """Insert rows; return the ones rejected (an empty list when all landed)."""
        ...


class HandOverLog(Protocol):
    """Where the loader records the event ids it handed to the repeater (exactly-once mode)."""

    def hand_over(self, insert_ids: Sequence[str]) -> None:
        """Record, durably, that these ids are the repeater's to write from now on."""
        ...


class Publisher(Protocol):
    """A topic to publish to."""

    def publish(self, messages: Sequence[bytes]) -> list[str]:
        """Publish and wait until every message is durable; return their message ids."""
        ...


class ReceivedMessage(Protocol):
    """A message received from a subscription, settled by its consumer once its outcome is durable.

    Notes:
        The id and the publish time are Pub/Sub's, the same on every redelivery: the
        repeater's backoff counts from the publish time, the dead-letter writer names its
        objects by the id.
    """

    @property
    def data(self) -> bytes:
        """The message payload."""
        ...

    @property
    def message_id(self) -> str:
        """The id Pub/Sub gave the message when it was published."""
        ...

    @property
    def publish_time(self) -> datetime:
        """When Pub/Sub accepted the message (timezone-aware UTC)."""
        ...

    def ack(self) -> None:
        """Settle: never deliver again."""
        ...

    def nack(self) -> None:
        """Give back for redelivery now."""
        ...


class Alerts(Protocol):
    """Where setup errors go, for people (``plowline_cloud.webhook.WebhookSender``)."""

    def alert(self, message: str) -> bool:
        """Send ``message`` once until ``clear``."""
        ...

    def clear(self) -> None:
        """Let the alerts already sent be sent again."""
        ...


class BlobStore(Protocol):
    """A bucket (with an optional path prefix)."""

    def put(self, name: str, data: bytes, content_type: str = "application/x-ndjson") -> None:
        """Write a new private object; raise ObjectExists if the name already exists."""
        ...

    # Above list(): below it, ``list`` in an annotation names that method.
    def folders(self, prefix: str = "") -> list[str]:
        """Return the folders right under a prefix, sorted: ``a/b/c`` is in ``a/b/`` under ``a/``.

        Notes:
            A folder is a name up to the first ``/`` after ``prefix``, that ``/`` included
            (a delimiter listing): one call, however many objects the folders hold.
        """
        ...

    def list(self, prefix: str = "") -> list[str]:
        """Return object names under a prefix, sorted."""
        ...

    def get(self, name: str) -> bytes:
        """Return an object's content."""
        ...

    def move(self, source: str, destination: str) -> None:
        """Move an object (copy, then delete the source)."""
        ...
