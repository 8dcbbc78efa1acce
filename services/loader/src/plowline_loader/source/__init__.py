"""Pub/Sub as a Spark Structured Streaming source, and acking a task's deliveries once durable.

pubsub_source   the ``pubsub`` data source (driver-side offsets, executor-side pulls)
pulls           a partition's descriptor and its bounded pulls (both sources)
processing      the source whose ``read()`` runs the loader's partition function
lease           extending the ack deadline of a task's deliveries while it works
acking          ``AckingPartition``: lease, process, then ack or nack
record_source   ``pubsub-records``: exactly-once mode's source, compressed batches opened
                into records before the shuffle
split_settling  the driver's ack of a split batch once all of its records are durable

A subscription's pull, ack, nack and modack calls and the pulled message itself are the
Pub/Sub adapter's (``plowline_cloud.pubsub.subscription``, ``plowline_cloud.pubsub.pulled``).
"""
