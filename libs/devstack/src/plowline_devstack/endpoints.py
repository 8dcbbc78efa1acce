"""Where the local stand-ins listen, and the environment a service needs to reach them.

Notes:
    ``PUBSUB_EMULATOR_HOST`` has no scheme, the BigQuery and Storage hosts need one.
    ``BIGQUERY_EMULATOR_GRPC_HOST`` is plowline's own name (the Storage Write/Read
    clients have no emulator variable; adapters build an insecure channel to it).
"""

from __future__ import annotations

from dataclasses import dataclass

ENV_NAMES = (
    "PUBSUB_EMULATOR_HOST",
    "BIGQUERY_EMULATOR_HOST",
    "BIGQUERY_EMULATOR_GRPC_HOST",
    "STORAGE_EMULATOR_HOST",
    "GOOGLE_CLOUD_PROJECT",
)
"""Every variable :meth:`Endpoints.env` sets."""


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Loopback ports of the three stand-ins and the project they serve."""

    project: str
    pubsub_port: int
    bigquery_port: int
    bigquery_grpc_port: int
    storage_port: int
    host: str = "127.0.0.1"

    @property
    def pubsub_target(self) -> str:
        """``host:port`` of the Pub/Sub emulator (gRPC)."""
        return f"{self.host}:{self.pubsub_port}"

    @property
    def bigquery_url(self) -> str:
        """Base URL of the BigQuery REST API."""
        return f"http://{self.host}:{self.bigquery_port}"

    @property
    def bigquery_grpc_target(self) -> str:
        """``host:port`` of the BigQuery Storage (Write/Read) gRPC API."""
        return f"{self.host}:{self.bigquery_grpc_port}"

    @property
    def storage_url(self) -> str:
        """Base URL of the Cloud Storage JSON API."""
        return f"http://{self.host}:{self.storage_port}"

    def env(self) -> dict[str, str]:
        """Return the environment variables that point the Google clients here."""
        return {
            "PUBSUB_EMULATOR_HOST": self.pubsub_target,
            "BIGQUERY_EMULATOR_HOST": self.bigquery_url,
            "BIGQUERY_EMULATOR_GRPC_HOST": self.bigquery_grpc_target,
            "STORAGE_EMULATOR_HOST": self.storage_url,
            "GOOGLE_CLOUD_PROJECT": self.project,
        }

    def exports(self) -> str:
        """Return ``export NAME=value`` lines for a POSIX shell."""
        return "\n".join(f"export {name}={value}" for name, value in self.env().items())
