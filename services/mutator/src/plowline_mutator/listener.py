"""Consume the types subscription: one message's types become columns, then the ack.

Notes:
    At least once: a message is acked only after every column it needs exists or can
    never exist as it is. One type never holds back the others of its message: every
    column that can be added is added, and each type that cannot is logged and counted
    (``mutator_errors_total{kind=...}``) on its own. Outcomes per message:

    - malformed payload (not JSON, not a types array): logged and ACKED, since no retry
      can ever make it readable;
    - per type, permanent, ACKED with the rest: schema not found (``unknown_schema``),
      column conflict with the table (``conflict``), an illegal name in the column
      (``illegal_name``), a table at BigQuery's 10,000 leaf fields (``column_limit``),
      BigQuery refusing that column alone (``refused``). Redelivering the same message
      cannot change them; the loader publishes a type again while its column is missing,
      so the column comes once the cause is fixed (schema published, room made);
    - the table itself refused (``PermanentError``: missing, access denied): logged as an
      error and ACKED, for the same reason (no loop of identical failures);
    - registry or BigQuery failing (``TransientError``): logged and NACKED after
      ``retry_delay`` seconds, so Pub/Sub redelivers it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog
from plowline_cloud.pubsub import Delivery
from plowline_core.errors import PermanentError, RegistryUnavailable, TransientError
from plowline_core.messages import MessageError, decode_types

from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import Mutator

_log = structlog.get_logger("plowline.mutator.listener")
SOURCE = "listener"


class TypesListener:
    """Handle types-topic deliveries with a ``Mutator`` (the subscriber's callback)."""

    def __init__(
        self,
        mutator: Mutator,
        metrics: MutatorMetrics,
        *,
        retry_delay: float = 1.0,
        verbose: bool = False,
        wait: Callable[[float], object] | None = None,
    ) -> None:
        self._mutator = mutator
        self._metrics = metrics
        self._retry_delay = retry_delay
        self._verbose = verbose
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait

    def stop(self) -> None:
        """Cut short any pending retry delay (on shutdown)."""
        self._stopping.set()

    def __call__(self, delivery: Delivery) -> None:
        """Handle one delivery: add its columns, then ack; nack on a failure worth retrying."""
        types = decode_types(delivery.data)
        if isinstance(types, MessageError):
            _log.error(
                "malformed types message acked", message_id=delivery.message_id, error=types.message
            )
            self._metrics.failed(SOURCE, "malformed")
            delivery.ack()
            return
        if self._verbose:
            _log.info(
                "types received",
                message_id=delivery.message_id,
                types=[f"{t.shred_property.value} {t.schema.to_uri()}" for t in types],
            )
        started = time.monotonic()
        try:
            result = self._mutator.add_types(types)
        except TransientError as error:
            self._give_back(delivery, error)
            return
        except PermanentError as error:
            _log.error(
                "types message cannot be applied to the table, acked",
                message_id=delivery.message_id,
                error=str(error),
            )
            self._metrics.failed(SOURCE, "permanent")
            delivery.ack()
            return
        self._metrics.record(SOURCE, result, len(types), time.monotonic() - started)
        delivery.ack()

    def _give_back(self, delivery: Delivery, error: TransientError) -> None:
        kind = "registry" if isinstance(error, RegistryUnavailable) else "transient"
        # A registry outage is logged where it starts and ends (LoggedOutages), not per message.
        log = _log.debug if kind == "registry" else _log.warning
        log(
            "types message not handled, nacked for redelivery",
            message_id=delivery.message_id,
            kind=kind,
            error=str(error),
        )
        self._metrics.failed(SOURCE, kind)
        # A short pause keeps an outage from turning into a hot redelivery loop.
        self._wait(self._retry_delay)
        delivery.nack()
