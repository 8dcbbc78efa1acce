"""Full Pub/Sub resource paths from the short names Snowplow's configs use.

Notes:
    Light on purpose (no Google import): the loader's configuration code, which must
    start fast, needs these too.
"""

from __future__ import annotations


def subscription_path(project: str, name: str) -> str:
    """Return a full subscription path; a short name (Snowplow's configs) lives in ``project``."""
    return name if name.startswith("projects/") else f"projects/{project}/subscriptions/{name}"


def topic_path(project: str, name: str) -> str:
    """Return a full topic path; a short name (Snowplow's configs) lives in ``project``."""
    return name if name.startswith("projects/") else f"projects/{project}/topics/{name}"
