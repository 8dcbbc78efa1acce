"""Integration fixtures: the local stack (Pub/Sub, BigQuery, Cloud Storage stand-ins) once per session.

``local_stack`` (defined in the root conftest, shared with the e2e and cluster tiers) starts the three servers on free loopback ports in a temporary directory,
provisions the default config (project ``plowline-local``, dataset ``snowplow``, table
``events``, topics ``enriched``/``types``/``bad-rows``/``failed-inserts`` and their
subscriptions, buckets ``plowline-dead-end``/``plowline-bad-rows``), points the Google
clients at it through the environment for the whole session, and stops it at the end.
It yields a :class:`plowline_devstack.stack.lifecycle.LocalStack`: ``.endpoints`` (ports, URLs),
``.env()``, ``.project``, ``.dataset``, ``.table``, ``.table_ref``, ``.config.topics``,
``.config.subscriptions``, ``.config.buckets``, ``.topic_path(name)``,
``.subscription_path(name)``.

Nothing is skipped: a server that does not start fails the session with its log tail.

``config_files``, ``start_service``, ``start_module_service`` and ``eventually`` live in
``support.services``, ``spawn_loader`` and ``mode_rig`` in ``support.loader_rigs`` (plugins
the root conftest registers): the e2e tier, which runs our services as processes, uses them
too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def google_pubsub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Google's own Pub/Sub emulator for the session, as ``host:port`` (the second opinion).

    Skipped, with how to install it, where it is absent; under CI it must be there (the
    machines have it), so there it fails instead.
    """
    from plowline_devstack.pubsub.google import HOW_TO_GET, GooglePubSubEmulator, find_launcher
    from plowline_devstack.stack.servers import free_port as any_free_port

    launcher = find_launcher()
    if launcher is None:
        if os.environ.get("CI"):
            pytest.fail(HOW_TO_GET)
        pytest.skip(HOW_TO_GET)
    log = tmp_path_factory.mktemp("google-pubsub") / "emulator.log"
    emulator = GooglePubSubEmulator(launcher, "127.0.0.1", any_free_port(), log)
    yield emulator.start()
    emulator.stop()
