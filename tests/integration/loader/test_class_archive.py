"""``plowline-loader class-archive``: a whole archive that the next driver JVM maps, or none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_MAPPED = """
import sys
from plowline_loader.spark.session import SparkSettings, build_spark_session, spark_conf
settings = SparkSettings(app_name="archive-check", class_archive=sys.argv[1])
options = spark_conf(settings)["spark.driver.extraJavaOptions"] + " -Xshare:on"
spark = build_spark_session(
    SparkSettings(app_name="archive-check", extra_conf={"spark.driver.extraJavaOptions": options})
)
print(spark.range(3).count())
spark.stop()
"""


def test_the_archive_written_is_whole_and_mapped_by_the_next_jvm(tmp_path: Path) -> None:
    """The command leaves the archive (no partial file) and a driver JVM started with it and
    -Xshare:on (which refuses to start on an archive it cannot map) runs a job."""
    archive = tmp_path / "classes.jsa"
    command = [sys.executable, "-m", "plowline_loader.cli", "class-archive", str(archive)]
    written = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    mapped = subprocess.run(
        [sys.executable, "-c", _MAPPED, str(archive)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    expected = (0, [archive.name], 0, "3")
    actual = (
        written.returncode,
        sorted(path.name for path in tmp_path.iterdir()),
        mapped.returncode,
        mapped.stdout.strip(),
    )
    assert expected == actual, written.stderr[-2000:] + mapped.stderr[-2000:]
