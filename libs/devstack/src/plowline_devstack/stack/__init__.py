"""The local stack's lifecycle: the three stand-ins started, provisioned, watched and stopped.

Modules:
    :mod:`.servers`        the stand-ins as child processes: command lines, launch, stop
    :mod:`.probes`         readiness: does a stand-in answer its official client?
    :mod:`.config`         what the stack holds (topics, dataset, table, buckets), from a file
    :mod:`.provisioning`   creating what the config describes, with the official clients
    :mod:`.lifecycle`      ``start_stack``, and ``up`` / ``down`` / ``read_state`` for the CLI
    :mod:`.spark_cluster`  a Spark standalone cluster beside the stack (``--workers N``)
    :mod:`.commands`       ``plowline dev up | status | down | env | faults``

Notes:
    The stack imports the stand-ins (:mod:`plowline_devstack.pubsub`, ``.bigquery``,
    ``.storage``) and their faults (:mod:`plowline_devstack.faults`), never the demo
    (an import-linter contract).
"""
