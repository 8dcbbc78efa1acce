"""Consume a subscription by streaming pull: ``PubSubSubscriber`` and the messages it hands over.

Notes:
    At least once: nothing is acked automatically; every ``PubSubReceivedMessage`` is
    acked, nacked or left to expire by its consumer. The official client extends the
    lease of streamed messages while they are outstanding (up to ``max_lease_seconds``).
    Pulling on demand (unary Pull, the loader's executors) is ``subscription``'s.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import google.cloud.pubsub_v1 as pubsub_v1  # type: ignore[import-untyped]  # no py.typed
from google.api_core import exceptions as gexc
from google.cloud.pubsub_v1.subscriber.futures import StreamingPullFuture  # type: ignore[import-untyped]
from google.cloud.pubsub_v1.subscriber.message import Message  # type: ignore[import-untyped]
from google.cloud.pubsub_v1.subscriber.scheduler import ThreadScheduler  # type: ignore[import-untyped]

from plowline_cloud.errors import translated
from plowline_cloud.liveness import ProgressWatch


@dataclass(frozen=True, slots=True)
class PubSubReceivedMessage:
    """One streamed message and the means to settle it (satisfies ``ReceivedMessage``).

    Notes:
        Settles through callbacks into the official client (ack, nack, extend its lease);
        ``pulled.PulledMessage`` is the plain, picklable kind settled by ack id instead.
    """

    data: bytes
    attributes: Mapping[str, str]
    message_id: str
    publish_time: datetime
    delivery_attempt: int | None
    ack_id: str
    on_ack: Callable[[], None] = field(repr=False, compare=False)
    on_nack: Callable[[], None] = field(repr=False, compare=False)
    on_extend: Callable[[int], None] = field(repr=False, compare=False)

    def ack(self) -> None:
        """Acknowledge: the outcome is durable, never deliver again."""
        self.on_ack()

    def nack(self) -> None:
        """Give the message back for redelivery now."""
        self.on_nack()

    def extend(self, seconds: int) -> None:
        """Ask for ``seconds`` more before the message is redelivered (10 to 600)."""
        self.on_extend(seconds)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


class _Held:
    """The streamed deliveries not yet settled: feeds the ``ProgressWatch`` and the age gauge.

    Notes:
        Each delivery counts once: its first ack is progress, its first nack a give-back;
        a callback that raises before settling gives its message back (the client nacks it).
    """

    def __init__(self, watch: ProgressWatch | None) -> None:
        self._watch = watch
        self._lock = threading.Lock()
        self._published: dict[int, datetime] = {}
        self._next = 0

    def track(
        self, delivery: PubSubReceivedMessage
    ) -> tuple[PubSubReceivedMessage, Callable[[], None]]:
        """Return the delivery wrapped to report its settling, and a give-back for failures."""
        with self._lock:
            key, self._next = self._next, self._next + 1
            self._published[key] = delivery.publish_time
        if self._watch is not None:
            self._watch.took()

        def settle(progress: bool) -> None:
            with self._lock:
                if self._published.pop(key, None) is None:
                    return
            if self._watch is not None:
                (self._watch.progressed if progress else self._watch.gave_back)()

        def ack() -> None:
            delivery.on_ack()
            settle(True)

        def nack() -> None:
            delivery.on_nack()
            settle(False)

        tracked = PubSubReceivedMessage(
            delivery.data,
            delivery.attributes,
            delivery.message_id,
            delivery.publish_time,
            delivery.delivery_attempt,
            delivery.ack_id,
            on_ack=ack,
            on_nack=nack,
            on_extend=delivery.on_extend,
        )
        return tracked, lambda: settle(False)

    def oldest_age_s(self) -> float:
        """Return the age of the oldest held message since its publish (0 when none)."""
        with self._lock:
            oldest = min(self._published.values(), default=None)
        if oldest is None:
            return 0.0
        return max(0.0, (datetime.now(UTC) - oldest).total_seconds())


def _from_streamed(message: Message) -> PubSubReceivedMessage:
    return PubSubReceivedMessage(
        data=bytes(message.data),
        attributes=dict(message.attributes),
        message_id=str(message.message_id),
        publish_time=_utc(message.publish_time),
        delivery_attempt=message.delivery_attempt,
        ack_id=str(message.ack_id),
        on_ack=message.ack,
        on_nack=message.nack,
        on_extend=message.modify_ack_deadline,
    )


class PubSubSubscriber:
    """Consume one subscription by streaming pull, with flow control.

    Notes:
        ``max_messages`` / ``max_bytes`` bound what is held in memory (outstanding,
        un-settled messages); ``callback_threads`` bounds concurrent callbacks.
        A callback that raises gets its message nacked by the client (redelivered).
    """

    def __init__(
        self,
        client: pubsub_v1.SubscriberClient,
        subscription_path: str,
        *,
        max_messages: int = 1000,
        max_bytes: int = 100 * 1024 * 1024,
        max_lease_seconds: int = 3600,
        callback_threads: int = 4,
        timeout: float = 30.0,
        watch: ProgressWatch | None = None,
    ) -> None:
        self._client = client
        self._subscription = subscription_path
        self._flow = pubsub_v1.types.FlowControl(
            max_messages=max_messages,
            max_bytes=max_bytes,
            max_lease_duration=max_lease_seconds,
        )
        self._threads = callback_threads
        self._timeout = timeout
        self._future: StreamingPullFuture | None = None
        self._lock = threading.Lock()
        self._held = _Held(watch)

    @property
    def subscription_path(self) -> str:
        """The full subscription path (``projects/P/subscriptions/S``)."""
        return self._subscription

    @property
    def running(self) -> bool:
        """Say whether a streaming pull is open."""
        future = self._future
        return future is not None and not future.done()

    def ended(self) -> str | None:
        """Return why the streaming pull ended for good, or None while it runs (or was never opened).

        Notes:
            The official client reopens a stream that breaks on a retryable error by
            itself; its future completes only on a non-retryable one (subscription
            deleted, PermissionDenied, a credential refresh error) or on ``stop``.
        """
        future = self._future
        if future is None or not future.done():
            return None
        error = None if future.cancelled() else future.exception(timeout=0)
        reason = f"{type(error).__name__}: {error}" if error is not None else "closed"
        return f"streaming pull from {self._subscription} ended ({reason})"

    def start(self, callback: Callable[[PubSubReceivedMessage], None]) -> None:
        """Open a streaming pull that calls ``callback`` for each message on worker threads."""
        with self._lock:
            if self.running:
                raise RuntimeError(f"subscriber on {self._subscription} is already started")
            scheduler = ThreadScheduler(
                executor=_executor(self._threads, self._subscription),
            )

            def on_message(message: Message) -> None:
                delivery, give_back = self._held.track(_from_streamed(message))
                try:
                    callback(delivery)
                except BaseException:
                    give_back()
                    raise

            with translated(f"subscribe to {self._subscription}"):
                self._future = self._client.subscribe(
                    self._subscription,
                    on_message,
                    flow_control=self._flow,
                    scheduler=scheduler,
                    await_callbacks_on_shutdown=True,
                )

    def oldest_held_age_s(self) -> float:
        """Return how long ago the oldest streamed, unsettled message was published (0: none).

        Notes:
            The subscription's backlog as this consumer sees it: when the backlog grows,
            the messages delivered are older.
        """
        return self._held.oldest_age_s()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the stream ends; raise the mapped error if it failed."""
        future = self._future
        if future is None:
            return
        with translated(f"streaming pull from {self._subscription}"):
            _result(future, timeout)

    def stop(self, timeout: float | None = None) -> None:
        """Stop pulling, wait for in-flight callbacks, then close the stream.

        Notes:
            Messages received but not yet handed to a callback are nacked by the client.
            The SubscriberClient itself stays open: its owner closes it.
        """
        with self._lock:
            future, self._future = self._future, None
        if future is None:
            return
        future.cancel()
        try:
            with translated(f"stop streaming pull from {self._subscription}"):
                _result(future, timeout)
        except gexc.Cancelled:  # pragma: no cover - cancellation is the expected end
            pass


def _executor(threads: int, subscription: str) -> ThreadPoolExecutor:
    name = subscription.rsplit("/", 1)[-1]
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"pubsub-{name}")


def _result(future: Future[Any], timeout: float | None) -> None:
    future.result(timeout=timeout)
