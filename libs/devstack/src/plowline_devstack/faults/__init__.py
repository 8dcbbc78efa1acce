"""The faults the local stack can inject on demand: the catalogue, the fault file, and each stand-in's.

The stand-ins are kinder than Google: they never redeliver on their own, never drop a
stream, never lose a response. A fault file makes them fail the way the real services
do, so a test (or ``plowline dev up --faults FILE``) can show that plowline loses and
duplicates nothing when they do. Every fault is off unless the file names it, and each
is named after the real behaviour it reproduces (facts and sources: docs/local-stack.md,
"How Google really fails").

Modules:
    :mod:`.catalogue`       every fault: stand-in, name, what the real service does, parameters
    :mod:`.plan`            the fault file (TOML or JSON) read into a :class:`~.plan.FaultPlan`
    :mod:`.draws`           the seeded draws of a stand-in, and the count of faults that struck
    :mod:`.pubsub`          the Pub/Sub faults, as the broker and its streams draw them
    :mod:`.bigquery_rest`   the BigQuery REST faults, first in the interception chain
    :mod:`.bigquery_write`  the Storage Write API faults, on AppendRows and commits
    :mod:`.storage`         the Cloud Storage faults, on object requests

Adding a fault: add a :class:`~.catalogue.FaultSpec` to :data:`~.catalogue.CATALOGUE`
(stand-in, name, what the real service does, parameters), implement it in that stand-in's
module here (it receives ``FaultPlan.for_server(stand_in)``), and add a test that shows it
through the official client. Always-on corrections (request limits, validation) are not
faults: they belong to the stand-in itself, like the BigQuery corrections in
``bigquery/corrections.py``. A sample plan: ``examples/faults-1pct.toml``.

Notes:
    The stand-ins (``pubsub``, ``bigquery``, ``storage``) and this package are the
    emulators: they import neither the stack's lifecycle nor the demo (an import-linter
    contract).
"""
