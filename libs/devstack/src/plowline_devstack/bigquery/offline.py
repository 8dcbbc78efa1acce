"""Offline start: bqemulator without DuckDB's downloadable extensions.

bqemulator 1.4.0 runs ``INSTALL spatial`` at start and refuses to start when DuckDB's
extension repository cannot be reached (no internet, as here and in CI). Nothing
plowline does needs GEOGRAPHY, so the spatial load is skipped: ``ST_*`` functions are
then unavailable. The ``avro`` format extension is turned off the same way
(``BQEMU_ENABLE_FORMAT_EXTENSIONS=false``) so no start ever waits on the network.
"""

from __future__ import annotations

import os

from bqemulator.storage.engine import DuckDBEngine

FORMAT_EXTENSIONS_ENV = "BQEMU_ENABLE_FORMAT_EXTENSIONS"


def _skip_spatial(self: DuckDBEngine) -> None:
    """Leave DuckDB's spatial extension unloaded (GEOGRAPHY unsupported offline)."""


def start_offline() -> None:
    """Make the next emulator start in this process touch no network."""
    os.environ[FORMAT_EXTENSIONS_ENV] = "false"
    DuckDBEngine._load_spatial = _skip_spatial  # type: ignore[method-assign]
