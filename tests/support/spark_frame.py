"""A stand-in for what ``streaming.BatchWriter`` touches of a micro-batch's DataFrame besides its action.

The writer tags each run of the action with its attempt (a Spark local property the
tasks read: ``source.pulls.retried_action``); a fake frame that only has ``collect``
inherits ``AttemptTags`` to be its own session and context and keep the tags it got.
"""

from __future__ import annotations


class AttemptTags:
    """``frame.sparkSession.sparkContext.setLocalProperty``, kept in ``tags``."""

    def __init__(self) -> None:
        self.tags: list[tuple[str, str]] = []

    @property
    def sparkSession(self) -> AttemptTags:
        """Return the frame itself, standing in for its session."""
        return self

    @property
    def sparkContext(self) -> AttemptTags:
        """Return the frame itself, standing in for its context."""
        return self

    def setLocalProperty(self, key: str, value: str) -> None:
        """Keep a local property the action would carry to its tasks."""
        self.tags.append((key, value))
