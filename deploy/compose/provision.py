"""Provision the docker compose stack, whose stand-ins each live in their own container.

``plowline dev up`` provisions the servers it starts on one loopback host; under compose
Pub/Sub, BigQuery and Cloud Storage are three hosts, so this calls the same provisioning
functions with one ``Endpoints`` per host. Run inside the devstack image::

    python provision.py --config provisioning.json --pubsub pubsub:8085 \
        --bigquery bigquery:9050 --storage storage:9023

Notes:
    Idempotent, like ``plowline dev up``: what exists is left as it is.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from plowline_core.errors import PlowlineError
from plowline_devstack.endpoints import Endpoints
from plowline_devstack.stack.provisioning import (
    StackConfig,
    load_config,
    provision_bigquery,
    provision_pubsub,
    provision_storage,
)


def _host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host, int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="provision.py", description="Create the topics, dataset, table and buckets."
    )
    parser.add_argument("--config", type=Path, required=True, help="provisioning file (JSON)")
    parser.add_argument("--pubsub", type=_host_port, required=True, metavar="HOST:PORT")
    parser.add_argument("--bigquery", type=_host_port, required=True, metavar="HOST:PORT")
    parser.add_argument("--storage", type=_host_port, required=True, metavar="HOST:PORT")
    return parser


def _at(config: StackConfig, address: tuple[str, int], role: str) -> Endpoints:
    """Return endpoints where only ``role``'s port is meaningful."""
    host, port = address
    ports = {"pubsub_port": 0, "bigquery_port": 0, "bigquery_grpc_port": 0, "storage_port": 0}
    ports[f"{role}_port"] = port
    return Endpoints(project=config.project, host=host, **ports)


def main(argv: Sequence[str] | None = None) -> int:
    """Provision every resource of the config; return the exit status."""
    args = _parser().parse_args(argv)
    try:
        config = load_config(args.config)
        provision_pubsub(config, _at(config, args.pubsub, "pubsub"))
        provision_bigquery(config, _at(config, args.bigquery, "bigquery"))
        provision_storage(config, _at(config, args.storage, "storage"))
    except PlowlineError as error:
        print(f"provisioning failed: {error}", file=sys.stderr)
        return 1
    print(
        f"provisioned project {config.project}: {len(config.topics)} topics, "
        f"{len(config.subscriptions)} subscriptions, {config.dataset}.{config.table}, "
        f"{len(config.buckets)} buckets"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
