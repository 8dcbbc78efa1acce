"""The demo and chaos app: realistic traffic through the four services on a local stack.

Modules:
    :mod:`.traffic`, :mod:`.malformed`, :mod:`.generate`  enriched events, some malformed
        on purpose (``plowline dev generate``)
    :mod:`.command`        ``plowline demo``; :mod:`.run` the orchestration it and the e2e
        tier share; :mod:`.services`, :mod:`.cluster`, :mod:`.conflict`, :mod:`.progress`,
        :mod:`.report`, :mod:`.monitor` its parts
    :mod:`.chaos`          ``plowline demo --chaos`` (:mod:`.chaos_command`): faults on, services
        SIGKILLed; :mod:`.chaos_tap`, :mod:`.chaos_verdict` and :mod:`.write_modes` its parts
"""
