"""The Google Cloud roles a service needs, declared next to the code that uses them.

Each service's composition root (``bootstrap.py``) builds the Google clients, so it also
declares ``GRANTS``: one :class:`Grant` per role on one resource. ``deploy/GKE.md`` grants
exactly these to the service's Google service account, and a test reads both and compares
them, so a new client call that needs a new permission cannot ship without its grant.

Notes:
    Roles are the narrowest predefined role holding the permissions the calls need, on the
    resource (subscription, topic, dataset, bucket), never on the project:

    * ``roles/pubsub.subscriber`` on a subscription: pull, ack, modify ack deadlines.
    * ``roles/pubsub.publisher`` on a topic: publish.
    * ``roles/bigquery.dataEditor`` on the dataset: ``tables.get``, ``tables.update``
      (the mutator), ``tables.updateData`` (insertAll, the Storage Write API),
      ``tables.create`` (the exactly-once ledger table).
    * ``roles/storage.objectCreator`` on a bucket: ``storage.objects.create`` only; enough
      for ``GcsBlobStore.put``, which never reads before writing.
    * ``roles/storage.objectViewer`` on a bucket: ``storage.objects.list`` and ``.get``;
      the dead-letter writer reads back its recent objects at start (``--dedupLookback``).
    * ``roles/storage.objectAdmin`` on a bucket: Spark's checkpoint lists, reads,
      overwrites and deletes its own files.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ResourceKind(Enum):
    """The kinds of Google resource a role is granted on."""

    SUBSCRIPTION = "subscription"
    TOPIC = "topic"
    DATASET = "dataset"
    BUCKET = "bucket"


@dataclass(frozen=True, slots=True)
class Grant:
    """One predefined role on one resource, named by where its name is configured.

    ``source`` is a field of Snowplow's ``bigquery_config`` (``input``, ``typesTopic``,
    ``datasetId``…) or a command-line flag of the service (``--deadEndBucket``).
    """

    role: str
    kind: ResourceKind
    source: str
