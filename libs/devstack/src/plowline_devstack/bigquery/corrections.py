"""The catalogue of BigQuery fidelity corrections and how they are installed.

Each correction restores one behaviour of real BigQuery that bqemulator 1.4.0 gets
wrong on a path plowline depends on; its module docstring states both behaviours:

* ``table-etag-precondition`` (:mod:`.table_etag`): a table update with a stale
  ``If-Match`` etag fails with 412, so concurrent schema writers cannot lose a column.
* ``table-schema-rules`` (:mod:`.schema_rules`): tables.patch/update refuse (400) a
  dropped, retyped or narrowed field and a new REQUIRED one: a schema only widens.
* ``table-schema-limits`` (:mod:`.schema_limits`): tables.insert/patch/update refuse
  (400) an empty or over-300-character name and more than 10,000 leaf fields.
* ``table-patch-storage`` (:mod:`.table_patch`): tables.patch/update schema changes reach
  DuckDB storage, so the next insertAll works.
* ``alter-ddl-catalog`` (:mod:`.alter_ddl`): ``ALTER TABLE … ADD COLUMN`` query jobs
  show in the catalog (tables.get).
* ``insert-auto-timestamp`` (:mod:`.insert_auto_timestamp`): ``"AUTO"`` in a TIMESTAMP
  column stores the insert time (Snowplow's ``load_tstamp``).
* ``insert-limits`` (:mod:`.insert_limits`): insertAll refuses a body over 10 MB (413)
  and more than 50,000 rows (400 ``invalid``).
* ``insert-validation`` (:mod:`.insert_validation`): insertAll rejects unknown fields,
  missing REQUIRED fields and wrong-typed values per row (``invalid`` / ``stopped``).
* ``insert-id-dedup`` (:mod:`.insert_dedup`): a row re-sent with an ``insertId`` the
  table stored within the window (60 s) is not stored again, BigQuery's best effort.
* ``nested-name-quoting`` (:mod:`.nested_names`): RECORD sub-fields named like SQL
  keywords (``inner``, ``order``) no longer break table creation.
* Storage Write API and load jobs (:mod:`.write_streams`, :mod:`.load_sources`): see there.
* ``insert-keeps-widening`` (:mod:`.insert_widening`): an insertAll running while the
  table is widened no longer writes the table's old schema back over the new one.
* ``write-api-serving`` (:mod:`.write_serving`): a Write API client killed or frozen
  mid-append stalls no other client: AppendRows and the unary calls run on a worker
  pool, never on the event loop nor for a connection's life; dead peers are pinged out.
* ``write-snapshots`` (:mod:`.write_snapshots`): a write no longer copies the whole table
  (bqemulator's time-travel snapshot), so insert cost does not grow with the table.
* ``bignumeric-storage`` and ``geography-offline`` (:mod:`.column_types`): tables may hold
  BIGNUMERIC and GEOGRAPHY columns (created, patched in, written), as analysts add them.
* ``job-id-taken`` (:mod:`.job_ids`): jobs.insert with a job id already used answers 409
  ``duplicate`` instead of running the job again (a retried load job loaded twice).
* ``column-options`` (:mod:`.column_options`): maxLength, precision, scale and the other
  column options survive create, patch and get, so a test sees whether a patch kept them.

Faults are not corrections: a correction is always on, a fault only when a fault plan
names it (``--faults FILE``). The BigQuery faults (``backend-error``,
``rate-limit-exceeded``, ``timeout``, ``response-lost-after-write`` on REST;
``append-stream-broken-after-apply``, ``schema-propagation-delay``,
``append-row-errors-then-internal``, ``commit-invalid-stream-state`` on the Write API) live
in :mod:`plowline_devstack.faults.bigquery_rest` and :mod:`plowline_devstack.faults.bigquery_write`; the launcher puts the REST ones first in the
chain, before every correction, and installs the Write API ones on top of
:mod:`.write_streams`.

Installation wraps the emulator's FastAPI app in :class:`.interception.CorrectedApp`
when the emulator builds it (corrections owning the same route chain, in this order); a correction can be left out by name (for tests that prove
each defect exists without it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import bqemulator.server

from plowline_devstack.bigquery.alter_ddl import ALTER_DDL_CATALOG
from plowline_devstack.bigquery.column_options import COLUMN_OPTIONS
from plowline_devstack.bigquery.column_types import BIGNUMERIC_STORAGE, GEOGRAPHY_OFFLINE
from plowline_devstack.bigquery.insert_auto_timestamp import INSERT_AUTO_TIMESTAMP
from plowline_devstack.bigquery.insert_dedup import INSERT_ID_DEDUP
from plowline_devstack.bigquery.insert_limits import INSERT_LIMITS
from plowline_devstack.bigquery.insert_validation import INSERT_VALIDATION
from plowline_devstack.bigquery.insert_widening import INSERT_WIDENING
from plowline_devstack.bigquery.interception import CorrectedApp, Correction
from plowline_devstack.bigquery.job_ids import JOB_ID_TAKEN
from plowline_devstack.bigquery.load_sources import GCS_LOAD_SOURCES
from plowline_devstack.bigquery.nested_names import NESTED_NAME_QUOTING
from plowline_devstack.bigquery.schema_limits import TABLE_SCHEMA_LIMITS
from plowline_devstack.bigquery.schema_rules import TABLE_SCHEMA_RULES
from plowline_devstack.bigquery.table_etag import TABLE_ETAG_PRECONDITION
from plowline_devstack.bigquery.table_patch import TABLE_PATCH_STORAGE
from plowline_devstack.bigquery.write_serving import WRITE_API_SERVING
from plowline_devstack.bigquery.write_snapshots import WRITE_SNAPSHOTS
from plowline_devstack.bigquery.write_streams import WRITE_API_CORRECTIONS

CORRECTIONS: tuple[Correction, ...] = (
    JOB_ID_TAKEN,
    TABLE_ETAG_PRECONDITION,
    TABLE_SCHEMA_RULES,
    TABLE_SCHEMA_LIMITS,
    TABLE_PATCH_STORAGE,
    ALTER_DDL_CATALOG,
    INSERT_LIMITS,
    INSERT_WIDENING,
    INSERT_AUTO_TIMESTAMP,
    INSERT_VALIDATION,
    INSERT_ID_DEDUP,
    NESTED_NAME_QUOTING,
    *WRITE_API_CORRECTIONS,
    WRITE_API_SERVING,
    GCS_LOAD_SOURCES,
    WRITE_SNAPSHOTS,
    BIGNUMERIC_STORAGE,
    GEOGRAPHY_OFFLINE,
    COLUMN_OPTIONS,
)
"""Every correction, in the order routes are matched."""

CORRECTION_NAMES: tuple[str, ...] = tuple(c.name for c in CORRECTIONS)


def select(disabled: Iterable[str]) -> tuple[Correction, ...]:
    """Return the corrections not named in ``disabled``; unknown names are an error."""
    off = set(disabled)
    unknown = off - set(CORRECTION_NAMES)
    if unknown:
        raise ValueError(f"unknown corrections: {sorted(unknown)}; known: {list(CORRECTION_NAMES)}")
    return tuple(c for c in CORRECTIONS if c.name not in off)


def install(corrections: tuple[Correction, ...]) -> None:
    """Apply the patch corrections and serve the REST app through the route corrections."""
    for correction in corrections:
        if correction.patch is not None:
            correction.patch()
    build: Callable[[Any], Any] = bqemulator.server.create_app  # type: ignore[attr-defined]  # the seam: imported, not re-exported

    def create_corrected_app(context: Any) -> Any:
        return CorrectedApp(build(context), context, corrections)

    bqemulator.server.create_app = create_corrected_app  # type: ignore[attr-defined]  # see above
