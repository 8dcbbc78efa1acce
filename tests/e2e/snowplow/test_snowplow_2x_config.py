"""A Snowplow BigQuery Loader 2.x config starts every plowline service, as a process, on the local stack.

One minimal 2.x Pub/Sub file (our own, naming the local stack's project: ``v2_files`` in
``support.snowplow``), passed as 2.x's command line passes it (``--config … --iglu-config
…``, no subcommand). What 2.x has no key for (types, failed inserts, the dead-letter
writer's subscription and bucket) is provisioned under its derived name, as ``plowline dev
up --config`` does; the loader creates 2.x's table. The one-shot commands on the same file
(``dev up``, ``plowline-mutator create``) are tested in
``tests/integration/snowplow/test_snowplow_2x_config.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from plowline_devstack.stack.config import load_stack
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.provisioning import provision
from plowline_devstack.stack.servers import free_port
from support.snowplow import V2_SHAPE, v2_shape, v2_table
from support.stack import answers
from support.timing import wait_until


def test_the_loader_starts_and_creates_2x_table(
    local_stack: LocalStack,
    v2_files: tuple[Path, Path, str, int],
    start_service: Callable[..., Any],
) -> None:
    """2.x's own command line: the loader serves on healthProbe.port and made 2.x's table."""
    clean = 0  # the exit code of a command that did its job
    config, resolver, table, port = v2_files
    loader = start_service(
        "plowline_loader.cli", "--config", str(config), "--iglu-config", str(resolver)
    )

    ready = wait_until(lambda: answers(port, "/readyz") or loader.process.poll(), 180)

    assert (ready, loader.process.poll()) == (True, None), loader.tail()
    assert v2_shape(v2_table(local_stack, table)) == V2_SHAPE, loader.tail()
    assert clean == loader.stop(), loader.tail()


@pytest.mark.parametrize(
    ("module", "arguments", "variable"),
    [
        pytest.param(
            "plowline_mutator.cli", ["listen"], "PLOWLINE_MUTATOR_PORT", id="mutator-listen"
        ),
        pytest.param("plowline_repeater.cli", [], "PLOWLINE_REPEATER_PORT", id="repeater"),
        pytest.param("plowline_deadletter.cli", [], "PLOWLINE_DEADLETTER_PORT", id="deadletter"),
    ],
)
def test_every_other_service_starts_from_the_2x_config(
    local_stack: LocalStack,
    v2_files: tuple[Path, Path, str, int],
    start_service: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    module: str,
    arguments: list[str],
    variable: str,
) -> None:
    """Mutator, repeater and dead-letter writer run on the same file, each on its own port."""
    clean = 0  # the exit code of a command that did its job
    config, resolver, _, _ = v2_files
    provision(load_stack(config)[0], local_stack.endpoints)  # the mutator's table
    port = free_port()
    monkeypatch.setenv(variable, str(port))
    service = start_service(
        module, *arguments, "--config", str(config), "--iglu-config", str(resolver)
    )

    def up() -> Any:
        return answers(port, "/readyz") or service.process.poll()

    started = wait_until(up, 60)

    assert (started, service.process.poll()) == (True, None), service.tail()
    assert clean == service.stop(), service.tail()
