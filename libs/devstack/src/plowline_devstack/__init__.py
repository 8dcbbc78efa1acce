"""plowline_devstack: the local stack, the demo and the chaos harness, in three parts.

Parts (each a layer: it imports those below it, never those above; import-linter holds it):
    :mod:`.demo`         the demo and chaos app (``plowline demo``, ``plowline dev generate``)
    :mod:`.stack`        the stack's lifecycle (``plowline dev up | status | down | env``)
    the emulators        the stand-ins :mod:`.pubsub`, :mod:`.bigquery`, :mod:`.storage`
                         (each run as ``python -m plowline_devstack.<name>``) and the faults
                         they inject on demand, :mod:`.faults`

Beside them: :mod:`.cli` (the ``plowline`` command and its registry), :mod:`.endpoints`
(where a stack's servers answer: point ``plowline_cloud.clients`` there),
:mod:`.bigquery_retry` (the short retry for calls to the BigQuery stand-in), and
``examples/`` (configs, a resolver and an Iglu registry the stack and the demo use).

Notes:
    The harness starts services (fork, then exec) from a process that talks gRPC (its
    Pub/Sub clients). gRPC core's fork support, on by default, runs handlers in the child
    between fork and exec that can abort it ("Epoll1Poller encountered epoll_wait error:
    Bad file descriptor", grpc/grpc#43055 and #13873): once in a few chaos runs a restarted
    service died with SIGABRT before it ran. The harness never forks without exec, so it
    turns that support off before any gRPC channel exists (a user's own setting wins).
"""

import os

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
