"""Resolve schema keys to JSON Schemas over an ordered set of Iglu registries.

``Resolver.resolve(key)`` returns a ``ResolvedSchema``, or a ``SchemaNotFound`` value when
every repository answered "not found"; it raises ``RegistryUnavailable`` when none had the
schema and at least one could not answer (the caller retries later and does not ack).

One key that keeps failing is not an outage (a made-up key must not stall the loader): when the lookups of a key have
failed ``give_up_after`` times in a row, over at least ``GIVE_UP_AFTER_S`` seconds of the
injected clock, and every repository that failed it answers
another key (the last key it answered for is asked again, once, at that moment), the key
is given up: ``SchemaNotFound`` whose lookup history holds each failing repository as a
``RepoFailure`` with its last error (Iglu's ``ResolutionError``; the loader makes it a
``loader_iglu_error`` bad row, which the repeater can replay). A registry that answers
400, or an HTML page with 200, for one key would otherwise hold that key's events, and
the partitions they are in, for ever. A repository that fails every key, or that has
answered no other key yet, is an outage: the key is held, as before. A given-up key is
remembered for at most ``GIVEN_UP_TTL`` seconds (less if ``cache_ttl`` is shorter), then
looked up again.

Notes:
    Lookup order (Iglu client's ``prioritize``): repositories whose vendor prefix matches the
    key's vendor first, then embedded before HTTP, then lowest ``priority``, then config order.
    Iglu Central is never added implicitly. Hits and misses are cached for ``cache_ttl``
    seconds of the injected clock (None: forever), at most ``cache_size`` keys, least recently
    used evicted first (0 disables the cache). Failures are never cached: they go to the
    ``OutageLedger`` (``outages``), which ends a repository's outage at its next answer. Safe to share between
    threads: the worst a race can do is look the same key up twice.

    Versions of a model (``versions_up_to``, for 2.x's minor-version merging): asked as 2.x's
    Iglu client asks. An embedded repository lists its directory; an Iglu Server lists
    ``GET {uri}/schemas/{vendor}/{name}/{format}/{model}``. A static registry (files behind a
    web server) cannot list: it can only say whether one exact version exists. When no
    repository can list, the versions are found by looking them up in SchemaVer order
    (``M-0-0``, ``M-0-1``… until one is missing, then the next revision), which finds every
    version of a registry that follows SchemaVer (no gaps) and misses those after a gap.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from plowline_core.errors import ConfigError, RegistryUnavailable
from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef, ResolverConfig
from plowline_core.iglu.key import SchemaKey, SchemaVer
from plowline_core.iglu.outage import OutageLedger, RegistryOutage
from plowline_core.ports import Clock, ListingRegistry, Registry

NOT_FOUND = "NotFound"
REPO_FAILURE = "RepoFailure"
GIVE_UP_AFTER = 5
"""Failed lookups in a row after which a key that only it fails is given up."""
GIVE_UP_AFTER_S = 300.0
"""Seconds since a key's first failure in a row before it can be given up."""
GIVEN_UP_TTL = 60.0
"""Seconds a given-up key is remembered before it is looked up again."""
_MESSAGE_MAX = 256  # loader_iglu_error's lookupHistory message maxLength
_FAILING_CAP = 4096  # keys whose failures are counted at once
#: Look-ups at most when probing a model's versions one by one (a registry that cannot list).
MAX_PROBES = 1000


@dataclass(frozen=True, slots=True)
class ResolvedSchema:
    """A JSON Schema and the repository it came from; do not mutate ``schema``."""

    key: SchemaKey
    schema: Mapping[str, Any]
    repository: str


@dataclass(frozen=True, slots=True)
class LookupAttempt:
    """What one repository answered for one key (Iglu's ``LookupHistory`` entry)."""

    repository: str
    attempts: int
    last_attempt: datetime
    error: str = NOT_FOUND
    message: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the ``lookupHistory`` item of ``loader_iglu_error``."""
        error: dict[str, Any] = {"error": self.error}
        if self.message is not None:
            error["message"] = self.message[:_MESSAGE_MAX]
        return {
            "repository": self.repository,
            "errors": [error],
            "attempts": self.attempts,
            "lastAttempt": _iso(self.last_attempt),
        }


@dataclass(frozen=True, slots=True)
class SchemaNotFound:
    """No repository has the schema; every repository said so."""

    key: SchemaKey
    lookup_history: tuple[LookupAttempt, ...]

    def to_failure(self) -> dict[str, Any]:
        """Return the ``loader_iglu_error/2-0-0`` failure item (a ResolutionError)."""
        return {
            "schemaKey": self.key.to_uri(),
            "error": {
                "error": "ResolutionError",
                "lookupHistory": [attempt.to_json() for attempt in self.lookup_history],
            },
        }


Resolution = ResolvedSchema | SchemaNotFound


class Resolver:
    """Resolve keys over registries in Iglu order, with a TTL + LRU cache of hits and misses."""

    def __init__(
        self,
        repositories: Sequence[tuple[RepositoryRef, Registry]],
        clock: Clock,
        cache_size: int = 500,
        cache_ttl: float | None = None,
        outages: OutageLedger | None = None,
        give_up_after: int = GIVE_UP_AFTER,
    ) -> None:
        if not repositories:
            raise ConfigError("an Iglu resolver needs at least one repository")
        if cache_size < 0 or (cache_ttl is not None and cache_ttl < 0):
            raise ConfigError(f"cache_size ({cache_size}) and cache_ttl ({cache_ttl}) must be >= 0")
        self._repositories = tuple(repositories)
        self._clock = clock
        self._cache_size = cache_size
        self._ttl = None if cache_ttl is None else timedelta(seconds=cache_ttl)
        # key -> (resolution, expiry or None); insertion order is recency order.
        self._cache: OrderedDict[SchemaKey, tuple[Resolution, datetime | None]] = OrderedDict()
        # (vendor, name, format, model) -> (listed versions, expiry): listings, same TTL.
        self._listings: dict[
            tuple[str, str, str, int], tuple[frozenset[SchemaVer], datetime | None]
        ] = {}
        self.outages = outages or OutageLedger()
        self._give_up_after = max(give_up_after, 1)
        # key -> (failed lookups in a row, when the first of them failed)
        self._failing: dict[SchemaKey, tuple[int, datetime]] = {}
        self._witness: dict[str, SchemaKey] = {}  # repository -> last key it answered for

    @classmethod
    def from_config(
        cls,
        config: ResolverConfig,
        registries: Mapping[str, Registry],
        clock: Clock,
        outages: OutageLedger | None = None,
    ) -> Resolver:
        """Pair each configured repository with the registry of the same name."""
        missing = [ref.name for ref in config.repositories if ref.name not in registries]
        if missing:
            raise ConfigError(f"no registry built for repositories {missing}")
        pairs = [(ref, registries[ref.name]) for ref in config.repositories]
        return cls(pairs, clock, config.cache_size, config.cache_ttl, outages)

    def resolve(self, key: SchemaKey) -> Resolution:
        """Return the schema or a SchemaNotFound; raise RegistryUnavailable if any repo failed."""
        entry = self._cache.get(key)
        if entry is not None:
            expiry = entry[1]
            if expiry is None or self._clock.now() < expiry:
                # Inline try/except, not contextlib.suppress: this is the per-entity hot path.
                try:  # noqa: SIM105
                    self._cache.move_to_end(key)
                except KeyError:  # evicted by another thread since the get: still a hit
                    pass
                return entry[0]
        return self._lookup(key)

    def versions_up_to(self, key: SchemaKey) -> tuple[SchemaVer, ...]:
        """Return the versions of ``key``'s model up to ``key.version``, ascending.

        Notes:
            The union of what the repositories that can list answer (cached as schemas are,
            and listed again for a version the cached listing lacks); by look-ups in SchemaVer
            order when none can (see the module notes). ``key.version`` itself is included
            only when it resolves.

        Raises:
            RegistryUnavailable: a repository could not answer.
        """
        listed = self._listed(key)
        if listed is None:
            return self._probe(key)
        versions = {v for v in listed if v < key.version}
        if isinstance(self.resolve(key), ResolvedSchema):
            versions.add(key.version)
        return tuple(sorted(versions))

    def _listed(self, key: SchemaKey) -> frozenset[SchemaVer] | None:
        """Return the union of the listing repositories' answers, None when none can list.

        Notes:
            Cached for ``cache_ttl`` like a schema, and listed again when the key is a
            version the cached listing does not hold (a version published since).
        """
        model = (key.vendor, key.name, key.format, key.version.model)
        cached = self._listings.get(model)
        now = self._clock.now()
        fresh = cached is not None and (cached[1] is None or now < cached[1])
        if cached is not None and fresh and key.version in cached[0]:
            return cached[0]
        listed: set[SchemaVer] = set()
        listing = False
        for _, registry in self._ordered(key):
            if isinstance(registry, ListingRegistry):
                found = registry.list_versions(*model)
                if found is not None:
                    listing = True
                    listed.update(v for v in found if v.model == key.version.model)
        if not listing:
            return None
        versions = frozenset(listed)
        if self._cache_size > 0:
            self._listings[model] = (versions, None if self._ttl is None else now + self._ttl)
        return versions

    def _probe(self, key: SchemaKey) -> tuple[SchemaVer, ...]:
        target = key.version
        found: list[SchemaVer] = []
        probes = 0
        for revision in range(target.revision + 1):
            addition = 0
            while probes < MAX_PROBES:
                version = SchemaVer(target.model, revision, addition)
                if version > target:
                    break
                probes += 1
                probe = SchemaKey(key.vendor, key.name, key.format, version)
                if isinstance(self.resolve(probe), SchemaNotFound):
                    if revision == target.revision and addition < target.addition:
                        addition = target.addition  # the key itself, past the gap
                        continue
                    break
                found.append(version)
                if version == target:
                    break
                addition += 1
        return tuple(found)

    def _lookup(self, key: SchemaKey) -> Resolution:
        history: list[LookupAttempt] = []
        failed: list[tuple[RepositoryRef, Registry, RegistryUnavailable]] = []
        outages: list[RegistryOutage] = []
        for ref, registry in self._ordered(key):
            now = self._clock.now()
            try:
                schema = registry.lookup(key)
            except RegistryUnavailable as error:
                failed.append((ref, registry, error))
                outages.append(self.outages.failed(ref.name, str(error), self._clock.now()))
                continue
            self._answered(ref.name, key, now)
            if schema is not None:
                self._failing.pop(key, None)
                return self._remember(key, ResolvedSchema(key, schema, ref.name), now)
            history.append(LookupAttempt(ref.name, 1, now))
        if failed:
            return self._failed(key, history, failed, tuple(outages))
        self._failing.pop(key, None)
        return self._remember(key, SchemaNotFound(key, tuple(history)), self._clock.now())

    def _failed(
        self,
        key: SchemaKey,
        history: list[LookupAttempt],
        failed: list[tuple[RepositoryRef, Registry, RegistryUnavailable]],
        outages: tuple[RegistryOutage, ...],
    ) -> Resolution:
        """Raise RegistryUnavailable, or give the key up (see the module docstring)."""
        now = self._clock.now()
        count, since = self._failing.get(key, (0, now))
        count += 1
        if (
            count < self._give_up_after
            or (now - since).total_seconds() < GIVE_UP_AFTER_S
            or not all(
                self._answers_another(ref.name, registry, key) for ref, registry, _ in failed
            )
        ):
            if key not in self._failing and len(self._failing) >= _FAILING_CAP:
                self._failing.clear()
            self._failing[key] = (count, since)
            failures = "; ".join(f"{ref.name}: {error}" for ref, _, error in failed)
            raise RegistryUnavailable(f"cannot resolve {key.to_uri()}: {failures}", outages)
        self._failing.pop(key, None)
        history += [
            LookupAttempt(ref.name, count, now, REPO_FAILURE, str(error))
            for ref, _, error in failed
        ]
        given_up = SchemaNotFound(key, tuple(history))
        ttl = GIVEN_UP_TTL if self._ttl is None else min(GIVEN_UP_TTL, self._ttl.total_seconds())
        return self._remember(key, given_up, now, timedelta(seconds=ttl))

    def _answers_another(self, repository: str, registry: Registry, key: SchemaKey) -> bool:
        """Ask ``registry`` again for the last other key it answered for: does it answer?"""
        witness = self._witness.get(repository)
        if witness is None or witness == key:
            return False
        try:
            registry.lookup(witness)
        except RegistryUnavailable:
            return False
        self.outages.answered(repository, self._clock.now())
        return True

    def _answered(self, repository: str, key: SchemaKey, now: datetime) -> None:
        self.outages.answered(repository, now)
        if self._witness.get(repository) is not key:
            self._witness[repository] = key

    def _ordered(self, key: SchemaKey) -> list[tuple[RepositoryRef, Registry]]:
        def rank(pair: tuple[RepositoryRef, Registry]) -> tuple[bool, int, float]:
            ref = pair[0]
            embedded = isinstance(ref.connection, EmbeddedConnection)
            return (not ref.matches_vendor(key.vendor), 0 if embedded else 1, ref.priority)

        return sorted(self._repositories, key=rank)

    def _remember(
        self, key: SchemaKey, resolution: Resolution, now: datetime, ttl: timedelta | None = None
    ) -> Resolution:
        if self._cache_size == 0:
            return resolution
        ttl = ttl or self._ttl
        expiry = None if ttl is None else now + ttl
        self._cache[key] = (resolution, expiry)
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            try:
                self._cache.popitem(last=False)
            except KeyError:  # emptied by another thread
                break
        return resolution


def _iso(moment: datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"
