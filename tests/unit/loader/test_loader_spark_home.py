"""The Spark home of a plain run: pyspark's bin and jars, no zipped pyspark, one stable path."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_loader.spark.spark_home import ZIPPED_PYSPARK, spark_home_for


def _package(root: Path, zipped: bool = True) -> Path:
    """Lay out a pyspark package: bin, jars and (unless not ``zipped``) python/lib/pyspark.zip."""
    package = root / "site-packages" / "pyspark"
    for name in ("bin", "jars", "python/lib"):
        (package / name).mkdir(parents=True)
    (package / "jars" / "spark-core.jar").write_bytes(b"jar")
    if zipped:
        (package / ZIPPED_PYSPARK).write_bytes(b"zip")
    return package


def _contents(home: Path) -> dict[str, Path]:
    return {entry.name: entry.readlink() for entry in home.iterdir()}


def test_the_home_links_bin_and_jars_and_holds_no_zipped_pyspark(tmp_path: Path) -> None:
    """The home has exactly two links, to the package's bin and jars: the jars are reachable,
    the zipped pyspark is not."""
    package = _package(tmp_path)

    home = spark_home_for(package, tmp_path / "cache")

    assert home is not None
    expected = ({"bin": package / "bin", "jars": package / "jars"}, True, False)
    actual = (
        _contents(home),
        (home / "jars" / "spark-core.jar").is_file(),
        (home / ZIPPED_PYSPARK).exists(),
    )
    assert expected == actual


def test_the_home_is_the_same_path_on_every_start(tmp_path: Path) -> None:
    """A second start finds the same home (the class archive is tied to the class path)."""
    package = _package(tmp_path)

    first = spark_home_for(package, tmp_path / "cache")
    second = spark_home_for(package, tmp_path / "cache")

    assert first is not None
    expected = (first, ["spark-home-" + first.name.removeprefix("spark-home-")])
    assert expected == (second, [p.name for p in (tmp_path / "cache").iterdir()])


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param("retarget", id="a-link-pointing-elsewhere"),
        pytest.param("extra", id="an-extra-entry"),
        pytest.param("file", id="a-file-in-its-place"),
    ],
)
def test_a_home_that_is_not_exactly_the_links_is_rebuilt(tmp_path: Path, tamper: str) -> None:
    """A home whose contents are not exactly the two links to this package is not trusted: it
    is rebuilt at the same path."""
    package = _package(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = spark_home_for(package, tmp_path / "cache")
    assert home is not None
    if tamper == "retarget":
        (home / "bin").unlink()
        (home / "bin").symlink_to(elsewhere)
    elif tamper == "extra":
        (home / "python").mkdir()
    else:
        for link in home.iterdir():
            link.unlink()
        home.rmdir()
        home.write_text("not a home")

    rebuilt = spark_home_for(package, tmp_path / "cache")

    expected = (home, {"bin": package / "bin", "jars": package / "jars"})
    assert rebuilt is not None
    assert expected == (rebuilt, _contents(rebuilt))


def test_a_package_without_the_zip_keeps_its_own_home(tmp_path: Path) -> None:
    """Without a zipped pyspark (as in the loader's image) there is nothing to avoid: None."""
    package = _package(tmp_path, zipped=False)

    assert spark_home_for(package, tmp_path / "cache") is None


def test_an_unwritable_cache_leaves_spark_home_alone(tmp_path: Path) -> None:
    """A cache that cannot be created (a file in the way) gives None, not an error."""
    package = _package(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")

    assert spark_home_for(package, blocker / "plowline") is None
