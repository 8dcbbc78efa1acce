"""A task Spark runs again by itself does not replay its partition's share of the driver's probe.

Issue 37, finding 3: ``retried_action`` read only the driver's per-action tag, so a task
Spark re-ran on its own (a lost executor, ``spark.task.maxFailures``) yielded the share
again under ack ids its first attempt had acked: in the Write API's default stream and
file loads, a second row for each. The loader's session is ``local[2]`` (no task
retries), so the reproduction runs in a driver of its own, ``local[1,2]``: one task that
fails after its rows were durable and acked, and a second attempt that Spark runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conftest import Channel

_RETRIED_TASK = """
import json, sys
from pathlib import Path
from pyspark import TaskContext
from plowline_cloud.pubsub.subscription import Subscription
from plowline_loader.source.pulls import PubSubPartition, pull_bounded
from plowline_loader.spark.session import SparkSettings, build_spark_session

subscription, endpoint, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
probe = tuple(Subscription(subscription, endpoint).pull(10, 5.0))
partition = PubSubPartition(
    index=0, subscription=subscription, emulator_host=endpoint, max_messages=1000,
    max_bytes=1 << 20, pull_timeout_s=0.5, ack_deadline_s=30, prefetched=probe,
)

def run(descriptors):
    attempt = TaskContext.get().attemptNumber()
    read = []
    for descriptor in descriptors:
        for pulled in pull_bounded(descriptor):
            Subscription(subscription, endpoint).ack([m.ack_id for m in pulled])  # durable
            read.extend(m.message_id for m in pulled)
    (out / f"attempt-{attempt}.json").write_text(json.dumps(read))
    if attempt == 0:
        raise RuntimeError("the task fails after its rows were durable and acked")
    return []

spark = build_spark_session(SparkSettings(master="local[1,2]", app_name="task-retry"))
spark.sparkContext.parallelize([partition], 1).mapPartitions(run).collect()
spark.stop()
print(json.dumps([m.message_id for m in probe]))
"""


def test_a_task_spark_retries_does_not_replay_the_probes_share(
    channel: Channel, tmp_path: Path
) -> None:
    """30 messages, a probe of 10 dealt to the one task; its first attempt reads all 30, acks
    them and fails; Spark's second attempt reads nothing (it replayed the 10 before)."""
    published = channel.publish(30)
    command = [sys.executable, "-c", _RETRIED_TASK, channel.subscription, channel.endpoint]
    done = subprocess.run(
        [*command, str(tmp_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]

    probe = json.loads(done.stdout.splitlines()[-1])
    attempts = {
        path.stem: json.loads(path.read_text()) for path in sorted(tmp_path.glob("attempt-*"))
    }
    expected = (True, sorted(published), [], 0)
    actual = (
        bool(probe),
        sorted(attempts.get("attempt-0", [])),
        attempts.get("attempt-1"),
        channel.outstanding(),
    )
    assert expected == actual
