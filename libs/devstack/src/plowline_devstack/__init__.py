"""plowline_devstack: the local stack, the demo and the chaos harness.

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
