"""Options of spark.readStream.format("pubsub"): defaults, parsing and refusal of bad values."""

from __future__ import annotations

import pytest
from plowline_core.errors import ConfigError
from plowline_loader.source.pubsub_source import PubSubSourceOptions

SUBSCRIPTION = "projects/p/subscriptions/s"


def test_options_default_to_bounded_partitions() -> None:
    """Only the subscription is required; the budgets default to 2 x 1000 messages of 16 MiB."""
    expected = PubSubSourceOptions(
        subscription=SUBSCRIPTION,
        emulator_host=None,
        num_partitions=2,
        max_messages_per_partition=1000,
        max_bytes_per_partition=16 * 1024 * 1024,
        pull_timeout_s=1.0,
        ack_deadline_s=60,
    )
    assert expected == PubSubSourceOptions.parse({"subscription": SUBSCRIPTION})


def test_options_are_read_by_their_spark_names() -> None:
    """Every option is read from its camelCase Spark name."""
    options = {
        "subscription": SUBSCRIPTION,
        "emulatorHost": "127.0.0.1:8085",
        "numPartitions": "4",
        "maxMessagesPerPartition": "100",
        "maxBytesPerPartition": "1024",
        "pullTimeoutSeconds": "0.5",
        "ackDeadlineSeconds": "30",
    }
    expected = PubSubSourceOptions(SUBSCRIPTION, "127.0.0.1:8085", 4, 100, 1024, 0.5, 30)
    assert expected == PubSubSourceOptions.parse(options)


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="missing-subscription"),
        pytest.param({"subscription": "s"}, id="short-subscription-name"),
        pytest.param({"subscription": SUBSCRIPTION, "numPartitions": "0"}, id="no-partitions"),
        pytest.param({"subscription": SUBSCRIPTION, "numPartitions": "two"}, id="not-a-number"),
        pytest.param(
            {"subscription": SUBSCRIPTION, "ackDeadlineSeconds": "5"}, id="deadline-below-10"
        ),
        pytest.param({"subscription": SUBSCRIPTION, "pullTimeoutSeconds": "0"}, id="zero-timeout"),
    ],
)
def test_bad_options_are_refused(options: dict[str, str]) -> None:
    """A bad option is a ConfigError naming the option, raised before any query starts."""
    with pytest.raises(ConfigError, match="pubsub source"):
        PubSubSourceOptions.parse(options)
