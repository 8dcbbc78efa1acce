"""The pair of stand-ins a load job needs: a storage emulator and a bqemulator loading from it.

``load_servers`` starts both on their own (``start_alone``), the bqemulator reading its
``gs://`` load sources from the storage emulator, each with ``--faults FILE`` when the
fault plan has a section for it (as ``plowline dev up --faults`` does). It creates the
``snowplow`` dataset and a fresh bucket, and on the way out closes the clients and stops
both servers.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from google.cloud import bigquery, storage
from plowline_cloud.clients import bigquery_client, storage_client
from plowline_devstack.stack import servers
from plowline_devstack.stack.alone import start_alone

DATASET = "snowplow"


class LoadServers(NamedTuple):
    """The clients of a bqemulator and of the storage emulator it reads, and a fresh bucket."""

    bq: bigquery.Client
    gcs: storage.Client
    bucket: str


@contextmanager
def load_servers(
    tmp_path: Path, project: str, faults: Mapping[str, Any] | None = None
) -> Iterator[LoadServers]:
    """Start the storage emulator then the bqemulator (fault plan ``faults``, keyed by server).

    Notes:
        The plan goes to ``tmp_path / "faults.json"``, the servers' logs next to it.
    """
    plan = tmp_path / "faults.json"
    if faults:
        plan.write_text(json.dumps(faults))

    def args(name: str) -> list[str]:
        return ["--faults", str(plan)] if faults and faults.get(name) else []

    with ExitStack() as running:
        gcs_server, gcs_endpoints = start_alone(
            servers.STORAGE, project, tmp_path / "storage.log", extra_args=args(servers.STORAGE)
        )
        running.callback(servers.stop, gcs_server)
        env = servers.environment(servers.BIGQUERY, gcs_endpoints.storage_url)
        bq_server, bq_endpoints = start_alone(
            servers.BIGQUERY,
            project,
            tmp_path / "bigquery.log",
            extra_args=args(servers.BIGQUERY),
            env=env,
        )
        running.callback(servers.stop, bq_server)
        bq = bigquery_client(bq_endpoints.project, bq_endpoints.bigquery_url)
        running.callback(bq.close)
        gcs = storage_client(gcs_endpoints.project, gcs_endpoints.storage_url)
        running.callback(gcs.close)
        bq.create_dataset(DATASET, exists_ok=True, retry=None)  # type: ignore[arg-type]  # never faulted
        bucket = gcs.create_bucket(f"b-{uuid.uuid4().hex[:12]}", retry=None).name
        yield LoadServers(bq, gcs, bucket)
