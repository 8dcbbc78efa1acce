"""What ``plowline-repeater`` commands exit with, and the guard that turns errors into it.

Exit codes: 0 done (or stopped cleanly by SIGTERM), 1 a dependency failed (retry later),
2 usage or configuration error.

Notes:
    Its own module because both the ``run`` entry (:mod:`.cli`) and ``replay``
    (:mod:`.replay_command`) need it, and neither may import the other back.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from plowline_core.errors import ConfigError, PlowlineError

EXIT_OK = 0
EXIT_UNAVAILABLE = 1
EXIT_USAGE = 2


def guarded(prog: str, command: Callable[[], int]) -> int:
    """Run a command, turning plowline errors into a message on stderr and an exit code."""
    try:
        return command()
    except ConfigError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except PlowlineError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        return EXIT_UNAVAILABLE
