"""Snowplow's documented command lines (0.x and 1.x) start each plowline service, as a process.

Each test passes the arguments exactly as Snowplow's setup guides write them (base64 configs,
no subcommand, Beam options for the Dataflow loader, 0.x and 1.x repeater flags), changing
only the program name; ports come from the ``PLOWLINE_*_PORT`` variables, since Snowplow's
lines have no port flag. The configs are ``support.snowplow``'s; the one-shot mutator
commands (``create``, ``add-column``) on the same arguments are tested in
``tests/integration/snowplow/test_snowplow_command_lines.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_port
from support.snowplow import RESOLVER_B64, V0_CONFIG, V1_CONFIG
from support.stack import answers
from support.timing import wait_until


@pytest.fixture
def port(monkeypatch: pytest.MonkeyPatch) -> int:
    """A free port, given to every service through its ``PLOWLINE_*_PORT`` variable."""
    chosen = free_port()
    for service in ("LOADER", "REPEATER", "DEADLETTER"):
        monkeypatch.setenv(f"PLOWLINE_{service}_PORT", str(chosen))
    return chosen


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(
            [
                f"--config={V0_CONFIG}",
                f"--resolver={RESOLVER_B64}",
                "--runner=DataflowRunner",
                "--project=plowline-local",
                "--region=europe-west2",
                "--gcpTempLocation=gs://plowline-dead-end/tmp",
                '--labels={"team":"data"}',
                "--maxNumWorkers",
                "2",
                "--streaming",
            ],
            id="0.x-dataflow-loader",
        ),
        pytest.param(
            [f"--config={V1_CONFIG}", f"--resolver={RESOLVER_B64}"], id="1.x-streamloader"
        ),
    ],
)
def test_the_loader_starts_from_snowplows_arguments(
    local_stack: LocalStack,
    start_service: Callable[..., Any],
    port: int,
    arguments: list[str],
) -> None:
    """No subcommand, base64 configs, Beam options: the loader becomes ready, naming what it ignored."""
    clean = 0  # the exit code of a command that did its job
    loader = start_service("plowline_loader.cli", *arguments)

    ready = wait_until(lambda: answers(port, "/readyz") or loader.process.poll(), 120)

    running = (True, None)
    assert running == (ready, loader.process.poll()), loader.tail()
    beam = any(argument.startswith("--runner") for argument in arguments)
    warned = ("options ignored" in loader.tail(), "--maxNumWorkers" in loader.tail())
    assert (beam, beam) == warned, loader.tail()
    assert clean == loader.stop(), loader.tail()


@pytest.mark.parametrize(
    "config", [pytest.param(V0_CONFIG, id="0.x-json"), pytest.param(V1_CONFIG, id="1.x-hocon")]
)
def test_mutator_listen_takes_snowplows_arguments(
    local_stack: LocalStack,
    start_service: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    config: str,
) -> None:
    """``listen --config … --resolver … --verbose`` opens the types subscription and stops on SIGTERM."""
    clean = 0  # the exit code of a command that did its job
    monkeypatch.setenv("PLOWLINE_MUTATOR_PORT", str(free_port()))  # listen's probes
    mutator = start_service(
        "plowline_mutator.cli", "listen", f"--config={config}", f"--resolver={RESOLVER_B64}",
        "--verbose",
    )  # fmt: skip

    listening = wait_until(lambda: "listening" in mutator.tail() or mutator.process.poll(), 30)

    running = (True, None)
    assert running == (listening, mutator.process.poll()), mutator.tail()
    assert clean == mutator.stop(), mutator.tail()


@pytest.mark.parametrize(
    ("arguments", "bucket"),
    [
        pytest.param(
            [
                f"--config={V0_CONFIG}",
                f"--resolver={RESOLVER_B64}",
                "--failedInsertsSub=failed-inserts-repeater",
                "--deadEndBucket=gs://plowline-dead-end/snowplow-0x",
                "--desperatesBufferSize=20",
                "--desperatesWindow=20",
                "--backoffPeriod=900",
            ],
            "gs://plowline-dead-end/snowplow-0x",
            id="0.x",
        ),
        pytest.param(
            [
                f"--config={V1_CONFIG}",
                f"--resolver={RESOLVER_B64}",
                "--bufferSize=20",
                "--timeout=20",
                "--backoffPeriod=900",
                "--verbose",
            ],
            "gs://plowline-dead-end/snowplow-1x",
            id="1.x",
        ),
    ],
)
def test_the_repeater_starts_from_snowplows_arguments(
    local_stack: LocalStack,
    start_service: Callable[..., Any],
    port: int,
    arguments: list[str],
    bucket: str,
) -> None:
    """0.x flags, or 1.x flags with subscription and bucket from the HOCON: the repeater is ready."""
    clean = 0  # the exit code of a command that did its job
    repeater = start_service("plowline_repeater.cli", *arguments)

    ready = wait_until(lambda: answers(port, "/readyz") or repeater.process.poll(), 30)

    running = (True, None)
    assert running == (ready, repeater.process.poll()), repeater.tail()
    expected = (True, True)
    named = ("failed-inserts-repeater" in repeater.tail(), bucket in repeater.tail())
    assert expected == named, repeater.tail()
    assert clean == repeater.stop(), repeater.tail()


def test_the_dead_letter_writer_runs_without_a_subcommand_on_a_1x_config(
    local_stack: LocalStack,
    start_service: Callable[..., Any],
    port: int,
) -> None:
    """``plowline-deadletter --config=<base64 HOCON> --resolver=…`` runs and becomes ready."""
    clean = 0  # the exit code of a command that did its job
    writer = start_service(
        "plowline_deadletter.cli", f"--config={V1_CONFIG}", f"--resolver={RESOLVER_B64}",
        "--badRowsSub=bad-rows-deadletter", "--bucket=gs://plowline-bad-rows/snowplow-1x",
    )  # fmt: skip

    ready = wait_until(lambda: answers(port, "/readyz") or writer.process.poll(), 30)

    running = (True, None)
    assert running == (ready, writer.process.poll()), writer.tail()
    assert clean == writer.stop(), writer.tail()
