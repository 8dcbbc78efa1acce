"""plowline-loader: enriched events from a Pub/Sub subscription into a BigQuery table, on Spark.

Where the code lives, by what changes together:

    batch/        what happens to a batch of messages: transform, sort, insert, publish,
                  count (``BatchProcessor``). Pure: no Spark, no Google (import-linter).
    spark/        the session and its start-up tuning, tied to the pinned pyspark
                  (``spark.PYSPARK_VERSION``): JVM flags, the rebuilt SPARK_HOME, the py4j
                  converter patch, the preloading worker daemon, the class archive and
                  the workers' heap (GC freezing).
    source/       Pub/Sub as a Spark source: planning, bounded pulls, leases, acks; the one
                  rule that settles a message (``settlement``) and the driver's keeper
                  of the messages that must wait (``holding``).
    partition     what a task does with its partition (``StreamingPartition``);
                  ``compressed_input`` opens its compressed deliveries into chunks;
                  ``record_split``, in exactly-once mode, before the shuffle.
    streaming     the driver loop: the query, one action per micro-batch, retries;
                  ``vigil`` waits on it, ``health`` and ``metrics`` report it.
    archive       ``backfill``'s reading of archived TSV files in tasks.
    *_command     the commands (``run``, ``backfill``, ``transform``, ``class-archive``,
                  registered by ``cli``) over ``settings`` and ``bootstrap`` (the one
                  composition root: clients, adapters, the ``BatchProcessor``).

How a message travels through Spark (``run``), and why:

    1. Driver, Python (``run_command``): builds the session (``spark.session``) and starts
       the query (``streaming.StreamingLoader``): readStream of the ``plowline-load``
       source, ``foreachBatch(BatchWriter)``.
    2. Driver, JVM: each trigger asks the source for an offset. The source's planner runs
       in a Python process the JVM starts (``source.pubsub_source``): a probe pull says
       whether there is anything to read (Pub/Sub has no offsets: an offset is a batch
       counter) and a second one how much, up to one pull; then it cuts ``numPartitions``
       descriptors (``PubSubPartition``: subscription, budgets, a share of the probed
       messages; ``source.pulls.shares``: a probe that came back short is the whole
       batch, shared evenly). Pickle boundary 1: the descriptors,
       and the reader carrying the task function, travel to the executors.
    3. Executor, Python worker (forked by ``spark.worker_daemon``, which preloaded the
       imports): ``source.processing`` reads the partition: it pulls a bounded slice
       (``plowline_cloud.pubsub.subscription``), extends each pull's receipt, and hands the pulled
       messages themselves, lazily, to ``partition.StreamingPartition`` (pickle boundary
       2: the function and its ``WorkerConfig``, unpickled once per task, not in the
       planner processes).
    4. Same task: ``source.acking.AckingPartition`` leases the messages (``source.lease``)
       and calls the processor, which runs ``batch.processor.BatchProcessor`` over chunks
       (``partition.process_in_chunks``; ``compressed_input`` opens compressed batches
       into records): transform, insert into the table, publish bad rows, failed inserts
       and types. Chunks are of ``batch.sizes.CHUNK_MESSAGES`` (2,000) records, or
       ``maxBytesInBatch`` of opened records; in FILE_LOADS one chunk is the whole round
       (one load job per partition per trigger: ``partition.chunking_for``).
    5. Settling, by the one rule (``source.settlement.verdict``) from what each message's
       records became: every record durable, acked in the task; nothing written, nacked
       (delivered again at once, nothing written twice); some records durable and others
       waiting (held for a missing schema, or stopped by a transient error or a publish
       that failed after the insert), parked: the task extends it once more and reports
       it (``PartitionReport.parked``).
    6. The task yields one ``PartitionReport`` (counts, latencies, the error if any, the
       parked messages). Pickle boundary 3: the reports travel back through the JVM as rows.
    7. Driver: ``BatchWriter`` collects the reports (the micro-batch's one action: a
       second would pull other messages), records metrics, hands the parked messages to
       ``source.holding.Holding`` (it keeps them leased, writes only their waiting
       records when they can be written, acks each once whole, and hands back only what
       it cannot keep: nothing-written past its byte bound, everything at a stop), and on
       a transient error backs off and runs the micro-batch again (``streaming``).

Who settles what: the task acks and nacks the messages it read whole; the driver settles
what the tasks park (``holding``) and, in exactly-once mode, the compressed batches split
over tasks (``split_settling``, the same rule without parking: the ledger skips what was
written). Processing (``batch``) never sees an ack id. A retry never replays what an
earlier attempt settled: a task Spark runs again (``TaskContext.attemptNumber``) or a
retried action does not take the probe's share again (``source.pulls.retried_action``),
and a retried exactly-once action skips the ids the first made durable
(``PartitionReport.durable_ids``). Throughput does not depend on one pull: after the first
micro-batch every partition pulls on to its budget (``source.pulls.shares``).

Why this shape: the messages never leave the Python worker that pulled them (no Arrow
round trip through the JVM, no second worker per task), the ack follows the durable
write in the same process, and the driver sees only small reports. Four kinds of process
take part: the driver (Python and its JVM), the source's planner process, and the
executors' Python workers.

Exactly-once mode (``STORAGE_WRITE_API``, stream ``exactly-once``) reads the
``pubsub-records`` source instead (``source.record_source``: ``pubsub`` with each
compressed batch that opens cleanly read as one row per record, ``record_split``): rows go
from the reading worker to the JVM as Arrow, the driver keys the micro-batch by event id
(``streaming.by_event_id``, one shuffle, so every copy of an id meets in one task, be it
a plain line or a batch's record), and the tasks run ``StreamingPartition.from_rows`` in
``mapPartitions``; the sink's ledger then writes each event id once. A task acks its
plain deliveries as above, but not a batch split into records (they are in several
tasks): it reports which of its records are durable or held, and the driver, after the
``collect()``, acks such a delivery once all of its records are durable, nacks it if one
is not, or hands it back for the schema hold's retry if one is held
(``source.settlement.split_verdict``, ``source.split_settling``).
"""
