"""Launch gcp-storage-emulator in this process with the preconditions enforced and faults on demand.

Takes gcp-storage-emulator's own arguments, plus ``--faults FILE`` (anywhere on the line):
a fault file whose ``[storage]`` faults the server injects (:mod:`plowline_devstack.faults.storage`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from gcp_storage_emulator.__main__ import main as emulator_main
from plowline_core.errors import ConfigError

from plowline_devstack.faults import storage as storage_faults
from plowline_devstack.faults.plan import load_faults
from plowline_devstack.storage import bind, preconditions


def split_faults(argv: Sequence[str]) -> tuple[Path | None, list[str]]:
    """Return the ``--faults`` file (None: none) and the emulator's own arguments, in order."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--faults", type=Path, default=None)
    known, rest = parser.parse_known_args(list(argv))
    return known.faults, rest


def main(argv: Sequence[str] | None = None) -> None:
    """Run gcp-storage-emulator (same arguments, plus ``--faults FILE``)."""
    path, rest = split_faults(sys.argv[1:] if argv is None else argv)
    try:
        plan = load_faults(path)
    except ConfigError as error:
        print(f"python -m plowline_devstack.storage: {error}", file=sys.stderr)
        raise SystemExit(2) from error
    bind.install()
    preconditions.install()
    storage_faults.install(storage_faults.StorageFaults(plan.for_server("storage"), plan.seed))
    emulator_main(rest)
