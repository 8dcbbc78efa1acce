"""What plowline needs and a 2.x config has no key for, derived from the config.

2.x is one app; plowline is four services joined by Pub/Sub and Cloud Storage. For a 2.x
config they meet at these names (``P``: the input subscription's project, ``G``:
``output.good.project``, ``D.T``: the table):

=========================== ===================================== =========================
name                        default                               override (env / flag)
=========================== ===================================== =========================
types topic                 ``projects/P/topics/plowline-D-T-types``  ``PLOWLINE_V2_TYPES_TOPIC``
types subscription          ``projects/P/subscriptions/plowline-D-T-types``  ``…_TYPES_SUBSCRIPTION``
failed-inserts topic        ``projects/P/topics/plowline-D-T-failed-inserts``  ``…_FAILED_INSERTS_TOPIC``
repeater's subscription     ``projects/P/subscriptions/plowline-D-T-failed-inserts``  ``…_FAILED_INSERTS_SUBSCRIPTION``
dead-end bucket             ``gs://G-plowline-dead-end``          ``…_DEAD_END_BUCKET``
bad-rows subscription       ``projects/P/subscriptions/plowline-D-T-bad-rows``  ``…_BAD_ROWS_SUBSCRIPTION``
bad-rows bucket             ``gs://G-plowline-bad-rows``          ``…_BAD_ROWS_BUCKET``
=========================== ===================================== =========================

In ``D`` and ``T`` every character but ``a-z`` and ``0-9`` becomes ``-`` (lower case), and
a stem over 200 characters is cut and ends in 8 hex digits of its SHA-256, so that every
name is a valid Pub/Sub name (at most 255 characters) whatever BigQuery allowed.
The services' own flags override these too (``plowline-loader --types-topic``,
``plowline-mutator --types-subscription``, ``plowline-repeater --failedInsertsSub
--deadEndBucket``, ``plowline-deadletter --badRowsSub --bucket``).

Notes:
    Pure: the caller reads the environment and hands the overrides in.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

from plowline_core.errors import ConfigError
from plowline_core.v2_config import V2Config

OVERRIDE_PREFIX = "PLOWLINE_V2_"
_STEM_MAX = 200  # Pub/Sub names take 255 characters; the longest suffix is 16
_NOT_NAME = re.compile(r"[^a-z0-9]")


@dataclass(frozen=True, slots=True)
class V2Names:
    """The Pub/Sub and Cloud Storage names the four services share for a 2.x config."""

    types_topic: str
    types_subscription: str
    failed_inserts_topic: str
    failed_inserts_subscription: str
    dead_end_bucket: str
    bad_rows_subscription: str
    bad_rows_bucket: str

    @classmethod
    def derive(cls, config: V2Config, overrides: Mapping[str, str | None] | None = None) -> V2Names:
        """Return the defaults of ``config`` with ``overrides`` (field name → value) applied.

        Raises:
            ConfigError: an override names no field, or a bucket that is not ``gs://…``.
        """
        known = {field.name for field in fields(cls)}
        overrides = overrides or {}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ConfigError(f"unknown 2.x name overrides {unknown}; known: {sorted(known)}")
        project = config.pubsub_project
        stem = _stem(config.dataset, config.table)
        defaults = cls(
            types_topic=f"projects/{project}/topics/{stem}-types",
            types_subscription=f"projects/{project}/subscriptions/{stem}-types",
            failed_inserts_topic=f"projects/{project}/topics/{stem}-failed-inserts",
            failed_inserts_subscription=f"projects/{project}/subscriptions/{stem}-failed-inserts",
            dead_end_bucket=f"gs://{config.project}-plowline-dead-end",
            bad_rows_subscription=f"projects/{project}/subscriptions/{stem}-bad-rows",
            bad_rows_bucket=f"gs://{config.project}-plowline-bad-rows",
        )
        given = {name: value for name, value in overrides.items() if value}
        for name in ("dead_end_bucket", "bad_rows_bucket"):
            value = given.get(name)
            if value is not None and (not value.startswith("gs://") or len(value) <= 5):
                variable = OVERRIDE_PREFIX + name.upper()
                raise ConfigError(f"{variable}: {value!r} must look like gs://bucket[/prefix]")
        values = {
            field.name: given.get(field.name, getattr(defaults, field.name))
            for field in fields(cls)
        }
        return cls(**values)


def _stem(dataset: str, table: str) -> str:
    stem = _NOT_NAME.sub("-", f"plowline-{dataset}-{table}".lower())
    if len(stem) <= _STEM_MAX:
        return stem
    digest = hashlib.sha256(stem.encode()).hexdigest()[:8]
    return f"{stem[: _STEM_MAX - 9]}-{digest}"
