"""Corrections: tables may hold BIGNUMERIC and GEOGRAPHY columns, and rows load beside them.

Real BigQuery: a table may have a BIGNUMERIC column (76 digits, 38 after the point) and a
GEOGRAPHY column (WKT or GeoJSON in insertAll), created with the table or added later by
``tables.patch``; insertAll loads rows into such a table whether or not they fill them.
Analysts add such columns to a Snowplow events table by hand, and plowline must keep
loading the other columns.

bqemulator 1.4.0, as started here:

* ``bignumeric-storage``: BIGNUMERIC maps to DuckDB ``DECIMAL(76, 38)``, beyond DuckDB's
  widest decimal (38 digits), so creating or patching such a table fails with HTTP 500
  (``DECIMAL type width must be between 1 and 38``); its insertAll path builds an Arrow
  ``decimal256`` column DuckDB cannot import. The correction stores BIGNUMERIC as its
  exact decimal text (DuckDB ``VARCHAR``, Arrow string): values keep every digit; SQL
  arithmetic on such a column is text, not BigQuery's (nothing in plowline needs it).
* ``geography-offline``: GEOGRAPHY values are converted with functions of DuckDB's
  ``spatial`` extension, which an offline start cannot load (see :mod:`.offline`), so any
  insertAll into a table with a GEOGRAPHY column fails with HTTP 500
  (``st_geomfromhexwkb`` is not in the catalog), filled or not. DuckDB's core has
  ``GEOMETRY``, ``ST_GeomFromWKB`` and ``ST_AsText``; the correction defines the two
  functions the emulator calls (``ST_GeomFromHEXWKB``, ``ST_GeomFromText``) on top of them,
  so WKT values load and read back. Other ``ST_*`` functions stay unavailable offline.
"""

from __future__ import annotations

import threading
from typing import Any

import bqemulator.api.routes.tabledata
import bqemulator.storage.type_map
import bqemulator.types.geography
import duckdb
from bqemulator.storage.engine import DuckDBEngine

from plowline_devstack.bigquery.interception import Correction

_GEOGRAPHY_MACROS = (
    "CREATE OR REPLACE MACRO st_geomfromhexwkb(h) AS st_geomfromwkb(from_hex(h))",
    "CREATE OR REPLACE MACRO st_geomfromtext(t) AS CAST(t AS GEOMETRY)",
)
_conversions: duckdb.DuckDBPyConnection | None = None
_conversions_lock = threading.Lock()


def store_bignumeric_as_text() -> None:
    """Give BIGNUMERIC a DuckDB column type and an Arrow insert type DuckDB supports."""
    type_map: Any = bqemulator.storage.type_map
    type_map._BQ_TO_DUCKDB["BIGNUMERIC"] = "VARCHAR"
    tabledata: Any = bqemulator.api.routes.tabledata
    shipped = tabledata._bq_type_to_arrow

    def arrow_type(bq_type: str) -> Any:
        # BIGNUMERIC values travel as STRING's Arrow type (text), not decimal256.
        return shipped("STRING" if bq_type.upper() == "BIGNUMERIC" else bq_type)

    tabledata._bq_type_to_arrow = arrow_type


def _define_geography_functions(connection: duckdb.DuckDBPyConnection) -> None:
    for statement in _GEOGRAPHY_MACROS:
        connection.execute(statement)


def _engine_geography(self: DuckDBEngine) -> None:
    """Stand in for ``_load_spatial``: the two GEOGRAPHY conversions, from DuckDB's core."""
    _define_geography_functions(self.connection)


def _conversion_connection() -> duckdb.DuckDBPyConnection:
    """Stand in for the emulator's spatial conversion connection (no extension install)."""
    global _conversions  # one connection per emulator process, as the emulator keeps it
    with _conversions_lock:
        if _conversions is None:
            _conversions = duckdb.connect(":memory:")
            _define_geography_functions(_conversions)
        return _conversions


def geography_from_core() -> None:
    """Serve GEOGRAPHY conversions from DuckDB's core instead of the spatial extension."""
    DuckDBEngine._load_spatial = _engine_geography  # type: ignore[method-assign]
    geography: Any = bqemulator.types.geography
    geography._ensure_conv_conn = _conversion_connection


BIGNUMERIC_STORAGE = Correction(
    name="bignumeric-storage",
    summary="tables with BIGNUMERIC columns can be created, patched and written",
    patch=store_bignumeric_as_text,
)
GEOGRAPHY_OFFLINE = Correction(
    name="geography-offline",
    summary="rows load into tables with GEOGRAPHY columns without the spatial extension",
    patch=geography_from_core,
)
