"""A Snowplow BigQuery Loader 2.x config: ``dev up`` and ``plowline-mutator create`` make 2.x's table.

One minimal 2.x Pub/Sub file (our own, naming the local stack's project: ``v2_files`` in
``support.snowplow``); what 2.x has no key for is provisioned under its derived name, as
``plowline dev up --config`` does. The table either makes must be 2.x's: money NUMERIC,
partitioned on ``load_tstamp``, clustered (``V2_SHAPE``). Every service started, as a
process, from the same file is tested in ``tests/e2e/snowplow/test_snowplow_2x_config.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from plowline_devstack.stack.config import load_stack
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.provisioning import provision
from support.snowplow import V2_SHAPE, v2_shape, v2_table


def test_dev_up_makes_2x_table(
    local_stack: LocalStack, v2_files: tuple[Path, Path, str, int]
) -> None:
    """``dev up --config <2.x>`` provisions 2.x's table: money NUMERIC, partitioned, clustered."""
    config, _, table, _ = v2_files
    stack, _ = load_stack(config)

    provision(stack, local_stack.endpoints)

    assert v2_shape(v2_table(local_stack, table)) == V2_SHAPE


def test_mutator_create_makes_2x_table(
    local_stack: LocalStack, v2_files: tuple[Path, Path, str, int]
) -> None:
    """``plowline-mutator create --config <2.x>`` makes the table 2.x makes."""
    config, _, table, _ = v2_files

    created = subprocess.run(
        [sys.executable, "-m", "plowline_mutator.cli", "create", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )

    assert created.returncode == 0, created.stderr
    assert v2_shape(v2_table(local_stack, table)) == V2_SHAPE
