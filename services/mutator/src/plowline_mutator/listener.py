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

    With ``alerts`` (2.x's ``monitoring.webhook``, ``plowline_cloud.webhook``), the setup
    errors an operator must fix are alerted as 2.x alerts them: a ``PermanentError`` (the
    table missing, no access, else "columns cannot be added") and a column at BigQuery's
    limit or refused by it ("columns cannot be added"). Each alert is sent once until a
    message goes through with no such error (``Alerts.clear``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog
from plowline_core.errors import PermanentError, RegistryUnavailable, TransientError
from plowline_core.messages import MessageError, decode_types
from plowline_core.ports import Alerts, ReceivedMessage
from plowline_core.webhook import SetupProblem, alert_message, setup_problem

from plowline_mutator.metrics import MutatorMetrics
from plowline_mutator.mutation import MutationResult, Mutator, Rejection

_log = structlog.get_logger("plowline.mutator.listener")
SOURCE = "listener"
#: Rejections that are setup errors: the table cannot take the column as it is.
_NOT_ADDED = (Rejection.COLUMN_LIMIT, Rejection.REFUSED)


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
        alerts: Alerts | None = None,
    ) -> None:
        self._mutator = mutator
        self._alerts = alerts
        self._metrics = metrics
        self._retry_delay = retry_delay
        self._verbose = verbose
        self._stopping = threading.Event()
        self._wait = wait or self._stopping.wait

    def stop(self) -> None:
        """Cut short any pending retry delay (on shutdown)."""
        self._stopping.set()

    def __call__(self, delivery: ReceivedMessage) -> None:
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
            self._alert(setup_problem(str(error)) or SetupProblem.COLUMNS_NOT_ADDED, str(error))
            delivery.ack()
            return
        self._metrics.record(SOURCE, result, len(types), time.monotonic() - started)
        self._alert_rejections(result)
        delivery.ack()

    def _alert_rejections(self, result: MutationResult) -> None:
        """Alert each column the table cannot take; clear the alerts when there is none."""
        if self._alerts is None:
            return
        not_added = [r for r in result.rejected if r.kind in _NOT_ADDED]
        if not not_added:
            self._alerts.clear()
        for rejected in not_added:
            entity = f"{rejected.entity.shred_property.value} {rejected.entity.schema.to_uri()}"
            self._alert(SetupProblem.COLUMNS_NOT_ADDED, f"{entity}: {rejected.reason}")

    def _alert(self, problem: SetupProblem, error: str) -> None:
        if self._alerts is not None:
            self._alerts.alert(alert_message(problem, error))

    def _give_back(self, delivery: ReceivedMessage, error: TransientError) -> None:
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
