"""plowline's Pub/Sub emulator: a gRPC server the unmodified google-cloud-pubsub client talks to.

Run it with ``python -m plowline_devstack.pubsub --host 127.0.0.1 --port 8085 [--data-dir DIR]
[--faults FILE]``
and point clients at it with ``PUBSUB_EMULATOR_HOST=127.0.0.1:8085`` (no scheme), or in-process::

    emulator = PubSubEmulator("127.0.0.1", 0)   # port 0 picks a free port
    port = emulator.start()
    wait_until_ready("127.0.0.1", port, timeout=10)
    ...
    emulator.stop()

Implemented (``google.pubsub.v1``):

- Publisher: CreateTopic, GetTopic, ListTopics (paged), DeleteTopic (subscriptions stay,
  attached to ``_deleted-topic_``), Publish (one id per message, ``publish_time`` stamped,
  attributes and ordering_key kept), ListTopicSubscriptions (paged).
- Subscriber: CreateSubscription (ack deadline default 10 s, range 10-600; dead-letter
  policy with forwarding after ``max_delivery_attempts``), GetSubscription,
  ListSubscriptions (paged), DeleteSubscription, Pull (``max_messages``,
  ``return_immediately``; a blocking Pull waits up to 10 s), Acknowledge,
  ModifyAckDeadline (0 = nack, redelivered at once), StreamingPull (request stream read
  on its own thread; acks/modacks on the stream honoured; ``max_outstanding_messages`` /
  ``max_outstanding_bytes`` honoured; ``subscription_properties`` on every response).
- Ack deadlines with redelivery of expired leases; expired or already-acked ack ids
  ignored, malformed ones refused with INVALID_ARGUMENT (as Pub/Sub does).
  Delivery attempts are always counted, reported in ``delivery_attempt`` only when the
  subscription has a dead-letter policy (as the real service does).
- Only messages published after a subscription exists reach it.
- Publish limits as the real service has them, always on (:mod:`.limits`): at most 1,000
  messages and 10 MB (10,485,760 bytes) per request, else INVALID_ARGUMENT.
- Faults on demand, off by default (:mod:`plowline_devstack.faults.pubsub`; file format and catalogue in
  :mod:`plowline_devstack.faults`): late-ack-redelivery, duplicate-delivery,
  out-of-order-delivery, streaming-pull-unavailable, acknowledge-unavailable,
  pull-unavailable, modify-ack-deadline-unavailable.
- Errors as the real service words them: ALREADY_EXISTS, NOT_FOUND
  (``Resource not found (resource=<id>).``), INVALID_ARGUMENT for malformed names,
  deadlines and empty messages.
- Storage in memory, or with ``data_dir`` in SQLite (WAL, write-behind, one transaction per
  burst): topics, subscriptions and unacked messages survive a restart; acked messages are
  deleted. Leases and delivery counts are not persisted: after a restart every unacked
  message is immediately deliverable again.

Not implemented: message ordering guarantees (``enable_message_ordering`` is stored and
reported but delivery is plain FIFO with redeliveries first), filters, exactly-once
delivery, push / BigQuery / Cloud Storage subscriptions (these answer UNIMPLEMENTED at
creation), retain_acked_messages, snapshots and Seek, schemas, UpdateTopic /
UpdateSubscription, DetachSubscription, message retention expiry, IAM.
"""

from __future__ import annotations

from plowline_devstack.pubsub.server import PubSubEmulator, started_with_faults, wait_until_ready

__all__ = ["PubSubEmulator", "started_with_faults", "wait_until_ready"]
