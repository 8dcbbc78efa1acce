"""Fixtures of the devstack fidelity tests: a second bqemulator served as shipped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_RETRY
from plowline_cloud.clients import bigquery_client
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone
from plowline_devstack.stack.lifecycle import LocalStack

RETRY = DEFAULT_RETRY.with_deadline(2.0)


@pytest.fixture(scope="session")
def uncorrected(
    local_stack: LocalStack, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[bigquery.Client]:
    """A client of bqemulator without any correction (offline start only)."""
    log = tmp_path_factory.mktemp("uncorrected") / "bigquery.log"
    server, endpoints = start_alone(
        servers.BIGQUERY, local_stack.project, log, extra_args=["--no-corrections"]
    )
    try:
        client = bigquery_client(endpoints.project, endpoints.bigquery_url)
        client.create_dataset(local_stack.dataset, exists_ok=True, retry=RETRY, timeout=10)
        yield client
        client.close()
    finally:
        servers.stop(server)


@pytest.fixture(scope="session")
def corrected(local_stack: LocalStack) -> Iterator[bigquery.Client]:
    """A client of the local stack's corrected bqemulator."""
    client = bigquery_client(local_stack.endpoints.project, local_stack.endpoints.bigquery_url)
    yield client
    client.close()
