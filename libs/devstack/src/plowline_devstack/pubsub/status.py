"""The one exception the emulator raises to end an RPC with a gRPC status."""

from __future__ import annotations

import grpc


class StatusError(Exception):
    """End the current RPC with ``code`` and ``message``, as the real service would."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
