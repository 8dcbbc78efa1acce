"""``plowline-mutator serve`` as a real process on the local stack: it answers, stops cleanly,
and is no longer alive once its types subscription is gone."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from plowline_cloud.clients import publisher_client, subscriber_client
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_port

EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as reply:
            return int(reply.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def test_serve_exits_zero_after_sigterm(local_stack: LocalStack, tmp_path: Path) -> None:
    """SIGTERM stops serve (API and listener) gracefully with exit code 0, not by the signal."""
    config = json.loads((EXAMPLES / "config.json").read_text())
    config["data"]["projectId"] = local_stack.project
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "plowline-mutator"), "serve",
        "--config", str(config_file), "--resolver", str(EXAMPLES / "resolver.json"),
        "--port", str(port), "--insecure-no-auth",
    ]  # fmt: skip
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        code = _run_until_sigterm(command, {**os.environ, **local_stack.env()}, port, sink, log)

    expected = 0
    assert expected == code


def test_serve_whose_subscription_is_deleted_is_no_longer_alive(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    """Deleting the types subscription under serve ends it with exit code 1 within 60 s (it was 200 for ever)."""
    name = f"types-gone-{uuid.uuid4().hex[:8]}"
    topic = f"projects/{local_stack.project}/topics/{name}"
    subscription = f"projects/{local_stack.project}/subscriptions/{name}"
    target = local_stack.endpoints.pubsub_target
    publisher_client(target).create_topic(name=topic)
    subscriber = subscriber_client(target)
    subscriber.create_subscription(name=subscription, topic=topic)
    config = json.loads((EXAMPLES / "config.json").read_text())
    config["data"].update(projectId=local_stack.project, typesTopic=name, typesSubscription=name)
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "plowline-mutator"), "serve",
        "--config", str(config_file), "--resolver", str(EXAMPLES / "resolver.json"),
        "--port", str(port), "--insecure-no-auth",
    ]  # fmt: skip
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, env={**os.environ, **local_stack.env()}, stdout=subprocess.DEVNULL, stderr=sink
        )
    try:
        _wait_for(lambda: _healthy(port), process, log, "serve did not come up")
        subscriber.delete_subscription(subscription=subscription)
        deleted = time.monotonic()
        code = process.wait(timeout=60)
        took = time.monotonic() - deleted
    finally:
        subscriber.close()
        if process.poll() is None:
            process.kill()
            process.wait()
    expected = (1, True)
    assert expected == (code, took < 60), log.read_text()[-3000:]


def _wait_for(
    check: Callable[[], bool], process: subprocess.Popen[bytes], log: Path, what: str
) -> None:
    deadline = time.monotonic() + 60
    while not check():
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what}:\n{log.read_text()[-2000:]}")
        time.sleep(0.2)


def _run_until_sigterm(
    command: list[str], env: dict[str, str], port: int, sink: IO[bytes], log: Path
) -> int:
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=sink)
    try:
        deadline = time.monotonic() + 60
        while not _healthy(port):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"serve did not come up:\n{log.read_text()[-2000:]}")
            time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        return process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_listen_whose_subscription_is_deleted_exits_1(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    """Deleting the types subscription under listen ends it with exit code 1 within 60 s."""
    name = f"types-gone-{uuid.uuid4().hex[:8]}"
    subscription = f"projects/{local_stack.project}/subscriptions/{name}"
    target = local_stack.endpoints.pubsub_target
    publisher_client(target).create_topic(name=f"projects/{local_stack.project}/topics/{name}")
    subscriber = subscriber_client(target)
    subscriber.create_subscription(
        name=subscription, topic=f"projects/{local_stack.project}/topics/{name}"
    )
    config = json.loads((EXAMPLES / "config.json").read_text())
    config["data"].update(projectId=local_stack.project, typesTopic=name, typesSubscription=name)
    config_file = tmp_path / "config.json"
    config_file.write_text(json.dumps(config))
    command = [
        str(Path(sys.executable).parent / "plowline-mutator"), "listen",
        "--config", str(config_file), "--resolver", str(EXAMPLES / "resolver.json"),
        "--port", str(free_port()),
    ]  # fmt: skip
    log = tmp_path / "listen.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, env={**os.environ, **local_stack.env()}, stdout=sink, stderr=sink
        )
    try:
        _wait_for(lambda: "listening" in log.read_text(), process, log, "listen did not start")
        subscriber.delete_subscription(subscription=subscription)
        code = process.wait(timeout=60)
    finally:
        subscriber.close()
        if process.poll() is None:
            process.kill()
            process.wait()
    expected = (1, True)
    assert expected == (code, "mutator listener stream ended" in log.read_text()), log.read_text()[
        -3000:
    ]
