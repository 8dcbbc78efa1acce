"""``plowline-loader class-archive PATH``: write the driver JVM's class archive for fast starts.

Runs a short local Spark session shaped like the loader's start (about 20-40 s), dumps the
classes its JVM loaded to PATH, and exits. Point ``run`` or ``backfill`` at it with
``--class-archive PATH`` (``PLOWLINE_LOADER_CLASS_ARCHIVE``): their JVM then maps the
classes instead of loading them, about half the JVM's start-up CPU (``class_archive.py``).
Write it again after changing the JDK or pyspark: the JVM ignores an archive made by
another (and says so in a warning).

Exit codes: 0 written, 1 the JVM wrote no archive, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from plowline_cloud.chassis import EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE
from plowline_core.errors import ConfigError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``class-archive`` subcommand."""
    parser = subparsers.add_parser(
        "class-archive",
        help="write the driver JVM's class archive (faster starts with --class-archive)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("path", type=Path, metavar="PATH", help="where to write the archive")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Write the archive; return the exit code."""
    from plowline_loader.spark.class_archive import write_class_archive  # Spark: slow import

    try:
        size = write_class_archive(args.path.absolute())
    except ConfigError as error:
        _say(str(error))
        return EXIT_USAGE
    except RuntimeError as error:
        _say(f"{error}; see the JVM's warnings above")
        return EXIT_UNAVAILABLE
    _say(
        f"wrote {args.path} ({size / 2**20:.0f} MiB); start the loader with --class-archive {args.path}"
    )
    return EXIT_OK


def _say(message: str) -> None:
    print(f"plowline-loader class-archive: {message}", file=sys.stderr, flush=True)
