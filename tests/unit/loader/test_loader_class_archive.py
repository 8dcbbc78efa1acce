"""The driver JVM's class archive: mapped when it exists, never half-named, only in a plain run."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_core.errors import ConfigError
from plowline_loader.cli import build_parser
from plowline_loader.run_command import settings_from
from plowline_loader.spark.session import (
    SparkSettings,
    archive_option,
    command_spark_settings,
    spark_conf,
)


def _java_options(settings: SparkSettings) -> list[str]:
    return spark_conf(settings).get("spark.driver.extraJavaOptions", "").split()


def test_an_existing_archive_is_mapped_by_the_driver_jvm(tmp_path: Path) -> None:
    """A plain run given an archive that exists starts its JVM with -XX:SharedArchiveFile."""
    archive = tmp_path / "classes.jsa"
    archive.write_bytes(b"archive")

    options = _java_options(command_spark_settings(None, False, class_archive=str(archive)))

    assert f"-XX:SharedArchiveFile={archive}" in options


def test_a_missing_archive_starts_the_jvm_without_one(tmp_path: Path) -> None:
    """An archive not (yet) written adds no option: the JVM starts as before, only slower."""
    archive = tmp_path / "absent.jsa"

    options = _java_options(command_spark_settings(None, False, class_archive=str(archive)))

    expected: list[str] = []
    assert expected == [option for option in options if "SharedArchive" in option]


def test_under_a_launcher_the_archive_sets_no_jvm_option(tmp_path: Path) -> None:
    """Under spark-submit the JVM is started already: the archive adds no driver option."""
    archive = tmp_path / "classes.jsa"
    archive.write_bytes(b"archive")

    conf = spark_conf(command_spark_settings(None, True, class_archive=str(archive)))

    assert "spark.driver.extraJavaOptions" not in conf


def test_dumping_names_the_archive_at_exit(tmp_path: Path) -> None:
    """A session asked to dump its classes starts its JVM with -XX:ArchiveClassesAtExit."""
    target = tmp_path / ".classes.jsa.partial"

    options = _java_options(SparkSettings(dump_class_archive=str(target)))

    assert f"-XX:ArchiveClassesAtExit={target}" in options


@pytest.mark.parametrize(
    "path",
    [
        pytest.param("/opt/my archives/classes.jsa", id="space"),
        pytest.param("/opt/it's.jsa", id="quote"),
    ],
)
def test_a_path_the_jvm_options_would_split_is_a_config_error(path: str) -> None:
    """A path with spaces or quotes is refused with a message saying what to choose instead."""
    with pytest.raises(ConfigError, match="without spaces or quotes"):
        archive_option(path)


def test_the_run_flag_reaches_the_settings(tmp_path: Path) -> None:
    """``run --class-archive PATH`` sets the loader's class_archive setting."""
    config, resolver = tmp_path / "config.json", tmp_path / "resolver.json"
    args = build_parser().parse_args(
        ["run", "--config", str(config), "--resolver", str(resolver), "--class-archive", "/a.jsa"]
    )

    expected = "/a.jsa"
    assert expected == settings_from(args).class_archive


def test_the_class_archive_command_takes_a_path() -> None:
    """``plowline-loader class-archive PATH`` is a command of its own."""
    args = build_parser().parse_args(["class-archive", "/tmp/classes.jsa"])

    assert Path("/tmp/classes.jsa") == args.path
