"""Fixtures of the devstack fidelity tests: a second bqemulator served as shipped."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.clients import bigquery_client
from plowline_devstack.endpoints import Endpoints
from plowline_devstack.stack import probes, servers
from plowline_devstack.stack.lifecycle import LocalStack

RETRY = DEFAULT_RETRY.with_deadline(2.0)


@pytest.fixture(scope="session")
def uncorrected(
    local_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[bigquery.Client]:
    """A client of bqemulator without any correction (offline start only)."""
    ports = dict(zip(("port", "grpc_port"), servers.free_ports(2), strict=True))
    argv = [
        *servers.command(servers.BIGQUERY, "127.0.0.1", ports, local_stack.project, None),
        "--no-corrections",
    ]
    log = tmp_path_factory.mktemp("uncorrected") / "bigquery.log"
    server = servers.launch(argv, servers.BIGQUERY, ports, log, daemon=False)
    endpoints = Endpoints(local_stack.project, 0, ports["port"], ports["grpc_port"], 0)
    try:
        _wait(server, endpoints)
        client = bigquery_client(endpoints.project, endpoints.bigquery_url)
        client.create_dataset(local_stack.dataset, exists_ok=True, retry=RETRY, timeout=10)
        yield client
        client.close()
    finally:
        servers.stop(server)


def _wait(server: servers.ServerProcess, endpoints: Endpoints) -> None:
    for _ in range(300):
        if not servers.is_alive(server):
            pytest.fail(
                f"uncorrected bqemulator exited:\n{servers.log_tail(server.log)}", pytrace=False
            )
        if probes.answers(servers.BIGQUERY, endpoints):
            return
        time.sleep(0.1)
    pytest.fail(
        f"uncorrected bqemulator did not answer:\n{servers.log_tail(server.log)}", pytrace=False
    )


@pytest.fixture(scope="session")
def corrected(local_stack: LocalStack) -> Iterator[bigquery.Client]:
    """A client of the local stack's corrected bqemulator."""
    client = bigquery_client(local_stack.endpoints.project, local_stack.endpoints.bigquery_url)
    yield client
    client.close()
