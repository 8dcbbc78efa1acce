"""The loader submitted to a Spark standalone cluster: exact accounting, executors, kills, backfill.

Every test submits ``deploy/docker/loader/driver.py`` with ``spark-submit --master
spark://…`` (see conftest): the driver is its own process, the two executors are JVMs of
their own with their own Python workers, so anything that only works in one JVM fails here.
Bad lines have eight tab fields (see ``conftest.bad_line``).
"""

from __future__ import annotations

import gzip
import re
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from plowline_cloud.clients import publisher_client
from plowline_core.testing.tsv import enriched_line
from support.timing import wait_for, wait_until

if TYPE_CHECKING:
    from conftest import ClusterRig, Submitted

# Sized to what the tests prove (accounting across JVMs, kills), not volume: the benches
# measure volume. 2,000 lines are still several micro-batches of several partitions.
EVENTS = 2_000
BAD_EVERY = 50  # 40 bad lines among 2,000
DRAIN_S = 420.0
_BUCKET = "plowline-bad-rows"  # a bucket the default provisioning creates
_MODES = [
    pytest.param({"mode": "STREAMING_INSERTS", "retry": False}, (), id="streaming-inserts"),
    pytest.param({"mode": "STORAGE_WRITE_API", "stream": "default"}, (), id="write-api-default"),
    pytest.param(
        {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}, (), id="write-api-exactly-once"
    ),
    pytest.param(
        {"mode": "FILE_LOADS", "frequency": 100},
        ("--staging-bucket", _BUCKET, "--trigger-interval", "1"),
        id="file-loads",
    ),
]
_EXACTLY_ONCE = {"mode": "STORAGE_WRITE_API", "stream": "exactly-once"}
# Kills and faults, not volume: 500 lines to warm the executors, then 1,500 more at 100 a
# second, so the kill (about 2 s into them) lands while tasks read a steady stream (long-lived ones round after
# round, their first round, with the probe's share, acked already). No gap of 0.5 s: a
# long-lived task ends when the subscription is idle that long.
WARM_EVENTS, PACED_EVENTS, PACED_RATE = 500, 1_500, 100
_RUNNING = re.compile(r"Running task \S+ in stage \S+ \(TID (\d+)\)")
_FINISHED = re.compile(r"Finished task \S+ in stage \S+ \(TID (\d+)\)")
IN_FLIGHT_S = 2.0
"""How long before the kill a line may have been published and still be written twice in a
mode that absorbs no copy: the killed task's round in flight, written and not yet acked."""
_KILL_MODES = [
    pytest.param(_EXACTLY_ONCE, (), 0.0, id="write-api-exactly-once"),
    # No ledger and no insertId: a message written twice is a second row (issue 37, finding 3).
    pytest.param(
        {"mode": "STORAGE_WRITE_API", "stream": "default"}, (), IN_FLIGHT_S, id="write-api-default"
    ),
    pytest.param(
        {"mode": "FILE_LOADS", "frequency": 100},
        ("--staging-bucket", _BUCKET, "--trigger-interval", "1"),
        IN_FLIGHT_S,
        id="file-loads",
    ),
]


def _landed(
    rig: ClusterRig, good: list[str], bad: list[str], loader: Submitted
) -> Callable[[], bool]:
    """Return a check: every good row and bad row is there, or the driver exited (give up)."""

    def check() -> bool:
        if loader.process.poll() is not None:
            return True
        return rig.counts()[0] >= len(good) and len(set(rig.bad_rows_for(bad))) >= len(bad)

    return check


@pytest.mark.parametrize(("load", "flags"), _MODES)
def test_every_line_is_accounted_for_exactly_once(
    make_rig: Callable[[dict[str, Any]], ClusterRig],
    load: dict[str, Any],
    flags: tuple[str, ...],
) -> None:
    """2,000 lines on the cluster in this mode: each good event one row, each bad line one bad row."""
    rig = make_rig(load)
    good, bad = rig.stream(EVENTS, BAD_EVERY)
    loader = rig.submit("run", *flags)

    drained = wait_for(_landed(rig, good, bad, loader), DRAIN_S, every_s=1.0)
    code = loader.stop()

    expected = (True, 0, (len(good), len(good)), sorted(bad), [])
    actual = (
        drained,
        code,
        rig.counts(),
        sorted(rig.bad_rows_for(bad)),
        rig.drain("failed-inserts"),
    )
    assert expected == actual, loader.tail()


def test_source_partitions_are_read_on_both_executors(
    make_rig: Callable[[dict[str, Any]], ClusterRig],
) -> None:
    """The driver's per-executor metrics show both executors reading and loading the stream."""
    rig = make_rig({"mode": "STREAMING_INSERTS", "retry": False})
    good, bad = rig.stream(EVENTS, BAD_EVERY)
    # A quarter of the backlog a partition per micro-batch: one executor's task cannot take the
    # whole backlog before the other's starts (the default, 10,000 a partition, could).
    loader = rig.submit("run", "--max-messages", str(EVENTS // 4))

    drained = wait_for(_landed(rig, good, bad, loader), DRAIN_S, every_s=1.0)
    per_executor = loader.executor_events()
    loader.stop()

    busy = sorted(name for name, events in per_executor.items() if events > 0)
    expected = (True, 2, EVENTS)
    actual = (drained, len(busy), int(sum(per_executor.values())))
    assert expected == actual, f"{per_executor}\n{loader.tail()}"
    assert "driver" not in busy, per_executor


def _paced(rig: ClusterRig, sent: dict[str, float]) -> tuple[list[str], list[str]]:
    """Publish ``PACED_EVENTS`` lines at ``PACED_RATE`` a second (as ``stream``); return ids.

    ``sent`` gets each line's event id and when (``time.monotonic``) it was published.
    """
    publisher = publisher_client(rig.stack.endpoints.pubsub_target)
    good: list[str] = []
    bad: list[str] = []
    futures = []
    for n in range(PACED_EVENTS):
        event_id = str(uuid.uuid4())
        sent[event_id] = time.monotonic()
        is_bad = n % BAD_EVERY == BAD_EVERY - 1
        (bad if is_bad else good).append(event_id)
        line = rig.bad_line(event_id) if is_bad else enriched_line(event_id=event_id)
        futures.append(publisher.publish(rig.input_topic, line.encode()))
        time.sleep(1 / PACED_RATE)  # real time on purpose: a stream, not a backlog
    for future in futures:
        future.result(timeout=60)
    return good, bad


def _busy_executor(rig: ClusterRig, timeout: float) -> int | None:
    """Return the pid of an executor running a task now; None when none did within ``timeout``.

    Notes:
        A standalone worker runs each executor in its own directory, which holds its log:
        a task it logged as running and not yet as finished is running.
    """

    def running_a_task() -> int | None:
        for pid in rig.cluster.executor_pids():
            try:
                log = (Path(f"/proc/{pid}/cwd") / "stderr").read_text(errors="replace")
            except OSError:  # it just ended
                continue
            if set(_RUNNING.findall(log)) - set(_FINISHED.findall(log)):
                return pid
        return None

    return wait_until(running_a_task, timeout, every_s=0.02)


@pytest.mark.parametrize(("load", "flags", "in_flight_s"), _KILL_MODES)
def test_executor_killed_mid_stream_loses_nothing_and_duplicates_nothing(
    make_rig: Callable[[dict[str, Any]], ClusterRig],
    load: dict[str, Any],
    flags: tuple[str, ...],
    in_flight_s: float,
) -> None:
    """An executor JVM and its Python workers SIGKILLed mid-stream: no loss, and no copy of
    anything acked before the kill.

    Spark runs the killed executor's task again (attempt 1): before issue 37's finding 3,
    that attempt replayed its partition's share of the driver's probe, acked already by
    the first attempt, and the modes that absorb no copy (default stream, file loads)
    wrote it twice (seen: a line published 2.8 s before the kill). What those modes still
    write twice is the killed task's round in flight, written and not yet acked (seen: 3
    to 5 lines published 25 to 80 ms before the kill): Pub/Sub delivers it again and
    nothing there can tell, as in Google's default stream (at least once). Exactly-once
    mode writes nothing twice.
    """
    rig = make_rig(load)
    good, bad = rig.stream(WARM_EVENTS, BAD_EVERY)
    loader = rig.submit("run", *flags)
    warm = wait_for(lambda: rig.counts()[0] >= len(good), DRAIN_S, every_s=0.5)
    sent: dict[str, float] = {}
    with ThreadPoolExecutor(1) as pool:
        publishing = pool.submit(_paced, rig, sent)
        started = wait_for(lambda: rig.counts()[0] >= len(good) + PACED_RATE * 2, 60, every_s=0.25)
        executors = rig.cluster.executor_pids()
        busy = _busy_executor(rig, 30.0)
        killed = rig.cluster.kill_executor(busy) if busy else []
        killed_at = time.monotonic()
        mid_stream = not publishing.done()
        more_good, more_bad = publishing.result()
    good, bad = good + more_good, bad + more_bad

    drained = wait_for(_landed(rig, good, bad, loader), DRAIN_S, every_s=1.0)
    replaced = wait_for(lambda: len(rig.cluster.executor_pids()) == 2, 60, every_s=1.0)
    code = loader.stop()
    copies = [
        event_id
        for event_id in rig.duplicated()
        if not 0 <= killed_at - sent.get(event_id, 0.0) <= in_flight_s
    ]

    expected = (True, True, 2, True, True, True, True, 0, len(good), [], set(bad))
    actual = (
        warm,
        started,
        len(executors),
        len(killed) > 1,  # the JVM and at least its Python daemon
        mid_stream,  # lines were still being published when the executor died
        "ExecutorLostFailure" in loader.log.read_text(),  # it died in a task: Spark ran it again
        drained and replaced,
        code,
        rig.counts()[1],  # distinct event ids: every good event
        copies,  # event ids written twice, but for the round in flight at the kill
        set(rig.bad_rows_for(bad)),
    )
    assert expected == actual, loader.tail()


def test_driver_killed_and_resubmitted_with_its_checkpoint_gives_the_same_result(
    make_rig: Callable[[dict[str, Any]], ClusterRig],
) -> None:
    """The driver SIGKILLed mid-stream and resubmitted on the same checkpoint: no loss, no dupes."""
    rig = make_rig(_EXACTLY_ONCE)
    good, bad = rig.stream(EVENTS, BAD_EVERY)
    # Small micro-batches (a partition's share at most 100 lines), so the backlog takes many
    # and the kill lands between the first rows and the last.
    first = rig.submit("run", "--max-messages", "100")
    started = wait_for(lambda: rig.counts()[0] > 0, DRAIN_S, every_s=0.25)
    first.kill()
    mid_stream = rig.counts()[0] < len(good)
    second = rig.submit("run", "--max-messages", "100")

    drained = wait_for(_landed(rig, good, bad, second), DRAIN_S, every_s=1.0)
    code = second.stop()

    expected = (True, True, True, 0, (len(good), len(good)), set(bad))
    actual = (started, mid_stream, drained, code, rig.counts(), set(rig.bad_rows_for(bad)))
    assert expected == actual, second.tail()


def test_backfill_of_a_gzipped_archive_runs_as_a_batch_job_on_the_cluster(
    make_rig: Callable[[dict[str, Any]], ClusterRig], tmp_path: Path
) -> None:
    """Four gzipped TSV files backfilled on the cluster: every good line a row, every bad one a bad row."""
    rig = make_rig({"mode": "STREAMING_INSERTS", "retry": False})
    archive = tmp_path / "archive"
    archive.mkdir()
    good: list[str] = []
    bad: list[str] = []
    for part in range(4):
        lines = []
        for n in range(500):
            event_id = f"{part:08x}-0000-4000-8000-{n:012x}"
            (bad if n % BAD_EVERY == 0 else good).append(event_id)
            lines.append(
                rig.bad_line(event_id) if n % BAD_EVERY == 0 else enriched_line(event_id=event_id)
            )
        (archive / f"part-{part}.tsv.gz").write_bytes(gzip.compress("\n".join(lines).encode()))

    job = rig.submit("backfill", str(archive))
    code = job.process.wait(300)
    wait_for(lambda: len(set(rig.bad_rows_for(bad))) >= len(bad), 60, every_s=1.0)

    expected = (0, (len(good), len(good)), sorted(bad))
    actual = (code, rig.counts(), sorted(rig.bad_rows_for(bad)))
    assert expected == actual, job.tail()
    assert "master=spark://" in job.tail(), job.tail()
