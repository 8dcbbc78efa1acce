"""Integration fixtures: the local stack (Pub/Sub, BigQuery, Cloud Storage stand-ins) once per session.

``local_stack`` starts the three servers on free loopback ports in a temporary directory,
provisions the default config (project ``plowline-local``, dataset ``snowplow``, table
``events``, topics ``enriched``/``types``/``bad-rows``/``failed-inserts`` and their
subscriptions, buckets ``plowline-dead-end``/``plowline-bad-rows``), points the Google
clients at it through the environment for the whole session, and stops it at the end.
It yields a :class:`plowline_devstack.stack.LocalStack`: ``.endpoints`` (ports, URLs),
``.env()``, ``.project``, ``.dataset``, ``.table``, ``.table_ref``, ``.config.topics``,
``.config.subscriptions``, ``.config.buckets``, ``.topic_path(name)``,
``.subscription_path(name)``.

Nothing is skipped: a server that does not start fails the session with its log tail.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from plowline_devstack.provisioning import StackConfig
from plowline_devstack.stack import LocalStack, StackStartError, start_stack


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """The local stack, started once per session, provisioned with the default config."""
    data_dir = tmp_path_factory.mktemp("local-stack")
    try:
        stack = start_stack(data_dir, StackConfig())
    except StackStartError as exc:
        pytest.fail(f"the local stack did not start:\n{exc}", pytrace=False)
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in stack.env().items():
                patch.setenv(name, value)
            yield stack
    finally:
        stack.stop()
