"""Who owns the master and the driver's addresses: the code in a plain run, the launcher otherwise."""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest
from plowline_core.errors import ConfigError
from plowline_loader.spark import PYSPARK_VERSION
from plowline_loader.spark.session import (
    command_spark_settings,
    launched_by_spark_submit,
    spark_conf,
)

_LAUNCHER_KEYS = (
    "spark.master",
    "spark.driver.host",
    "spark.driver.bindAddress",
    "spark.driver.memory",
    "spark.driver.extraJavaOptions",
    "spark.pyspark.python",
    "spark.pyspark.driver.python",
)


def test_plain_run_defaults_to_local_on_loopback() -> None:
    """Without a launcher and without --master the session is local[*] bound to 127.0.0.1."""
    conf = spark_conf(command_spark_settings(None, launcher=False))

    expected = ("local[*]", "127.0.0.1", "127.0.0.1")
    actual = (conf["spark.master"], conf["spark.driver.host"], conf["spark.driver.bindAddress"])
    assert expected == actual


def test_plain_run_takes_the_master_flag() -> None:
    """Without a launcher --master is the session's master."""
    conf = spark_conf(command_spark_settings("spark://10.0.0.5:7077", launcher=False))

    assert conf["spark.master"] == "spark://10.0.0.5:7077"


def test_under_a_launcher_no_deployment_key_is_set() -> None:
    """Under spark-submit the code sets no master, address, driver JVM or Python key."""
    conf = spark_conf(command_spark_settings(None, launcher=True))

    expected: list[str] = []
    assert expected == [key for key in _LAUNCHER_KEYS if key in conf]


def test_under_a_launcher_the_app_tuning_stays() -> None:
    """Under spark-submit the loader's own tuning (shuffle partitions, UI off) is still set."""
    conf = spark_conf(command_spark_settings(None, launcher=True))

    expected = ("2", "false")
    assert expected == (conf["spark.sql.shuffle.partitions"], conf["spark.ui.enabled"])


def test_master_flag_under_a_launcher_is_a_config_error() -> None:
    """--master under spark-submit is refused with a message saying to pass it to spark-submit."""
    with pytest.raises(ConfigError, match="spark-submit --master"):
        command_spark_settings("local[2]", launcher=True)


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        pytest.param({"PYSPARK_GATEWAY_PORT": "40111"}, True, id="spark-submit"),
        pytest.param({}, False, id="plain"),
    ],
)
def test_launcher_is_recognised_by_the_gateway_it_hands_over(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], expected: bool
) -> None:
    """A driver started by spark-submit is recognised by PYSPARK_GATEWAY_PORT, as PySpark does."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert expected == launched_by_spark_submit()


def test_the_spark_tuning_is_held_to_the_installed_pyspark() -> None:
    """The pyspark the start-up tuning was written against is the one installed and pinned."""
    pin = Path(__file__).resolve().parents[3] / "services/loader/pyproject.toml"

    assert (PYSPARK_VERSION, f"pyspark[sql]=={PYSPARK_VERSION}") == (
        pyspark.__version__,
        next(part for part in pin.read_text().split('"') if part.startswith("pyspark")),
    )
