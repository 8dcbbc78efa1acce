"""The Pub/Sub adapter: every publish, pull and settle plowline does goes through here.

paths          full topic and subscription paths from Snowplow's short names (no Google import)
publisher      ``PubSubPublisher``: a batch in whole Publish requests, returned once durable
streaming      ``PubSubSubscriber``: a streaming pull with flow control (mutator, repeater,
               dead-letter writer), handing over ``PubSubReceivedMessage``s
subscription   ``Subscription``: unary Pull, ack, modack and nack by ack id (the loader's
               Spark source), with its per-process client cache and retry
pulled         ``PulledMessage``: a pulled message as plain, picklable values (no Google import)

Notes:
    This package imports nothing: each module imports only its own client's package
    (the streaming client costs ~1.5 s, the GAPIC one much less), so a Spark worker that
    unpickles a ``PulledMessage`` loads no client at all. The clients themselves, and the
    gRPC options every channel uses, come from ``plowline_cloud.clients``.
"""
