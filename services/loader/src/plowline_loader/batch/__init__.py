"""The loader's batch logic: a batch of enriched TSV messages in, every outcome durable.

    processor        ``BatchProcessor``: transform, sort, insert, publish, count
    message          what it reads of a message; the times a message and its row carry
    outcome          ``BatchOutcome`` and its accounting invariant; ``PartlyDelivered``
    sizes            what a row, a bad row and a failed insert may weigh (``Limits``)
    announcements    which entity types to announce on the types topic (``TypeTracker``)
    schema_hold      events held back while a schema is missing (exitOnMissingIgluSchema)
    failed_events    the failed events of a 2.x config, and of compressed records
    event_key        the exactly-once shuffle key (an event id, lower-cased)

Notes:
    Pure over the ports of ``plowline_core.ports``: no Spark, no Google, no environment
    (an import-linter contract holds it). It runs in a Spark task, in ``backfill`` and in
    ``transform`` the same way: what Spark adds lives in ``plowline_loader.spark``.
"""
