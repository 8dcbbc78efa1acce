"""The Spark home of a plain run: pyspark's own scripts and jars, without the zipped pyspark.

Spark starts every Python process it needs (the data source's lookup, creation and read
planning, the streaming source runner, the worker daemon and so its workers) with
``$SPARK_HOME/python/lib/pyspark.zip`` first on their ``PYTHONPATH``. pip's pyspark ships
that zip inside the installed package, beside the same modules unzipped: with
``SPARK_HOME`` the package (what pyspark's launcher sets), each of those processes
imported pyspark from the zip, where Python keeps no bytecode, so each compiled every
pyspark module it imported, 0.3-0.5 CPU-s per process, about a third of the CPU before
the first row.

``spark_home_for(package, cache)`` returns a directory holding two links, ``bin`` and
``jars``, to the package's: ``spark-submit`` and the JVM find what they need, and the
Python processes find no zip, so they import the installed pyspark with its compiled
bytecode. The code is the same (the zip is a copy of the package).

Notes:
    The path is stable (named by a digest of the package's path) because the driver JVM's
    class archive records the class path it was dumped with and is refused under another
    (``class_archive``). The directory is built under a temporary name and renamed into
    place, so concurrent starts never see half of one; a directory whose links point
    elsewhere is rebuilt, not trusted. ``None`` means "leave Spark's home alone": the
    package has no zip (the loader's image removes it), or the cache is not writable.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

ZIPPED_PYSPARK = Path("python", "lib", "pyspark.zip")
"""Where Spark looks for its zipped Python code, under a Spark home."""

LINKS = ("bin", "jars")
"""What a Spark home needs for ``spark-submit`` and the driver JVM's class path."""


def spark_home_for(package: Path, cache: Path) -> Path | None:
    """Return a Spark home under ``cache`` for the pyspark ``package``, or None (see notes)."""
    if not (package / ZIPPED_PYSPARK).is_file():
        return None
    digest = hashlib.sha256(str(package.resolve()).encode()).hexdigest()[:16]
    home = cache / f"spark-home-{digest}"
    if _links_to(home, package):
        return home
    try:
        cache.mkdir(parents=True, exist_ok=True)
        return _build(home, package)
    except OSError:
        return None


def _links_to(home: Path, package: Path) -> bool:
    """Say whether ``home`` holds exactly the links to ``package`` and nothing else."""
    try:
        entries = sorted(entry.name for entry in home.iterdir())
        return entries == sorted(LINKS) and all(
            (home / name).is_symlink() and (home / name).readlink() == package / name
            for name in LINKS
        )
    except OSError:
        return False


def _build(home: Path, package: Path) -> Path | None:
    """Build the home under a temporary name and rename it into place (replacing a bad one)."""
    staging = Path(tempfile.mkdtemp(prefix=f".{home.name}.", dir=home.parent))
    try:
        for name in LINKS:
            (staging / name).symlink_to(package / name, target_is_directory=True)
        if home.exists() or home.is_symlink():
            _discard(home)
        try:
            staging.rename(home)
        except OSError:
            if not _links_to(home, package):  # not another start's identical home
                return None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return home


def _discard(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        shutil.rmtree(path)
