"""Who sets the master: spark-submit's settings stand under spark-submit; a plain run is local[*]."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.spark_cluster import python_driver, spark_home, submit_environment
from support.configs import empty_registry, write_json
from support.timing import wait_for

DRIVER = Path(__file__).resolve().parents[3] / "deploy" / "docker" / "loader" / "driver.py"
_SESSION = re.compile(r"spark session .*")


def _session_line(
    command: list[str], log: Path, *, submitted: bool, search_path: str | None = None
) -> tuple[str, int]:
    """Run the loader until it has started; return its ``spark session`` log line and exit code.

    ``search_path``: start it as from a shell with that PATH and no ``PYSPARK_*`` variables.
    """
    env = submit_environment({**os.environ, "PLOWLINE_LOADER_LOG_JSON": "false"})
    env.pop("PLOWLINE_LOADER_MASTER", None)
    if search_path is not None:
        env["PATH"] = search_path
        env.pop("PYSPARK_PYTHON")
        env.pop("PYSPARK_DRIVER_PYTHON")
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        wait_for(
            lambda: (
                "loader started" in log.read_text(errors="replace") or process.poll() is not None
            ),
            180,
            every_s=0.5,
        )
        target = python_driver(process.pid, DRIVER) if submitted else process.pid
        with contextlib.suppress(ProcessLookupError):  # it exited already: its code tells
            os.kill(target or process.pid, signal.SIGTERM)
        code = process.wait(90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
    found = _SESSION.search(log.read_text(errors="replace"))
    return (found.group(0) if found else log.read_text()[-3000:]), code


def _resolver(root: Path) -> Path:
    """Write a resolver config with one empty embedded repository; return its path."""
    return write_json(root / "resolver-embedded.json", empty_registry(root))


def test_spark_submit_settings_are_not_overridden(
    local_stack: LocalStack, config_files: tuple[Path, Path], tmp_path: Path
) -> None:
    """Under spark-submit --master local[2] the session keeps that master and driver host."""
    config, resolver = config_files[0], _resolver(tmp_path)
    command = [
        str(spark_home() / "bin" / "spark-submit"), "--master", "local[2]",
        "--conf", "spark.driver.host=localhost", "--conf", "spark.driver.bindAddress=127.0.0.1",
        str(DRIVER), "run", "--config", str(config), "--resolver", str(resolver), "--port", "0",
    ]  # fmt: skip
    line, code = _session_line(command, tmp_path / "submitted.log", submitted=True)

    expected = (True, True, 0)
    assert expected == ("master=local[2]" in line, "driver_host=localhost" in line, code), line


def test_plain_run_defaults_to_local_mode_on_loopback(
    local_stack: LocalStack, config_files: tuple[Path, Path], tmp_path: Path
) -> None:
    """A plain `plowline-loader run` without --master runs local[*] with its driver on 127.0.0.1."""
    config, resolver = config_files[0], _resolver(tmp_path)
    command = [
        sys.executable, str(DRIVER), "run", "--config", str(config), "--resolver", str(resolver),
        "--port", "0",
    ]  # fmt: skip
    line, code = _session_line(command, tmp_path / "plain.log", submitted=False)

    expected = (True, True, 0)
    assert expected == ("master=local[*]" in line, "driver_host=127.0.0.1" in line, code), line


def test_plain_run_starts_without_its_python_on_the_path(
    local_stack: LocalStack, config_files: tuple[Path, Path], tmp_path: Path
) -> None:
    """A loader started by its interpreter's path, with another python3 first on the PATH,
    still starts its Pub/Sub source (Spark's data-source processes run the loader's Python)."""
    config, resolver = config_files[0], _resolver(tmp_path)
    elsewhere = tmp_path / "bin"
    elsewhere.mkdir()
    (elsewhere / "python3").write_text("#!/bin/sh\necho 'not the loader's Python' >&2\nexit 1\n")
    (elsewhere / "python3").chmod(0o755)
    command = [
        sys.executable, str(DRIVER), "run", "--config", str(config), "--resolver", str(resolver),
        "--port", "0",
    ]  # fmt: skip
    _, code = _session_line(
        command,
        tmp_path / "bare-path.log",
        submitted=False,
        search_path=f"{elsewhere}:/usr/bin:/bin",
    )
    log = (tmp_path / "bare-path.log").read_text(errors="replace")

    expected = (True, 0)
    assert expected == ("loader started" in log, code), log[-3000:]
