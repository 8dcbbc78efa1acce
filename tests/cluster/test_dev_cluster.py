"""``plowline dev up --workers N`` and ``plowline demo --workers 2`` as a user runs them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from plowline_devstack.endpoints import ENV_NAMES
from plowline_devstack.stack import spark_cluster
from plowline_devstack.stack.spark_cluster import read_cluster

PLOWLINE = Path(sys.executable).parent / "plowline"


def _plowline(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    return subprocess.run(
        [str(PLOWLINE), *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def _answers(master_url: str) -> bool:
    host, port = master_url.removeprefix("spark://").split(":")
    with socket.socket() as sock:
        return sock.connect_ex((host, int(port))) == 0


def test_dev_up_with_workers_starts_a_cluster_that_dev_down_stops(tmp_path: Path) -> None:
    """`dev up --workers 2` exports a master that answers with two workers; `dev down` stops all."""
    data_dir = tmp_path / ".plowline"
    up = _plowline("dev", "up", "--workers", "2", "--data-dir", str(data_dir), timeout=180)
    cluster = read_cluster(data_dir / "spark")
    try:
        exported = [line for line in up.stdout.splitlines() if "PLOWLINE_SPARK_MASTER" in line]
        running = (
            up.returncode,
            cluster is not None and cluster.alive(),
            len(cluster.worker_pids) if cluster else 0,
            cluster is not None and _answers(cluster.master_url),
            exported == [f"export PLOWLINE_SPARK_MASTER={cluster.master_url}"] if cluster else [],
        )
    finally:
        down = _plowline("dev", "down", "--data-dir", str(data_dir), timeout=120)

    expected = ((0, True, 2, True, True), 0, False)
    assert expected == (running, down.returncode, cluster is not None and cluster.alive()), (
        up.stderr
    )


def test_demo_on_two_workers_says_where_the_loader_ran(tmp_path: Path) -> None:
    """`demo --workers 2` passes, names the master and both executors' events, neither over 60%.

    Before the share rule one executor took them all (``0=2020, 1=0``).
    """
    demo = _plowline(
        "demo", "--workers", "2", "--events", "600", "--never-fitting", "0",
        "--data-dir", str(tmp_path / "demo"), timeout=600,
    )  # fmt: skip
    lines = demo.stdout.splitlines()
    where = [line for line in lines if line.startswith("loader ran on Spark cluster spark://")]
    split = [line.strip() for line in lines if "events per executor:" in line]
    executors = dict(pair.split("=") for pair in split[0].split(": ", 1)[1].split(", "))

    events = {name: float(count) for name, count in executors.items()}

    expected = (0, True, ["0", "1"], True, True)
    actual = (
        demo.returncode,
        len(where) == 1 and where[0].endswith("with 2 executors"),
        sorted(executors),
        any(line.startswith("PASS") for line in lines),
        max(events.values()) <= 0.6 * sum(events.values()),
    )
    assert expected == actual, demo.stdout + demo.stderr


def test_a_cluster_whose_chosen_master_port_was_taken_starts_on_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The master binds another port when its own was taken; the URL and the worker follow it."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        monkeypatch.setattr(spark_cluster, "_free_port", lambda: port)
        (tmp_path / "master.log").write_text(f"Starting Spark master at spark://127.0.0.1:{port}\n")
        cluster = spark_cluster.start_cluster(
            tmp_path, spark_cluster.ClusterSpec(workers=1), daemon=False, timeout=120
        )
        try:
            started = (
                cluster.master_url != f"spark://127.0.0.1:{port}",
                _answers(cluster.master_url),
            )
        finally:
            cluster.stop()
    assert started == (True, True)
