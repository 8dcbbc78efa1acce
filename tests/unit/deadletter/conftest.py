"""Fakes for the dead-letter writer's unit tests."""

from __future__ import annotations

import pytest
from plowline_cloud.metrics import MetricsRegistry
from plowline_deadletter.metrics import DeadLetterMetrics


@pytest.fixture
def metrics() -> DeadLetterMetrics:
    """Metrics in a private registry."""
    return DeadLetterMetrics.create(MetricsRegistry("deadletter-test"))
