"""The type tracker looks for the column the rows use (major mode: recovery, legacy)."""

from __future__ import annotations

from datetime import UTC, datetime

from plowline_core.iglu.key import SchemaKey
from plowline_core.schema.entity import ColumnMode, EntityType, ShredProperty
from plowline_core.schema.field import Field, FieldType, Mode
from plowline_loader.batch.announcements import TypeTracker

KEY = SchemaKey.parse("iglu:com.acme/basket/jsonschema/1-0-1")
ENTITY = EntityType(KEY, ShredProperty.UNSTRUCT_EVENT)
MAIN = Field("unstruct_event_com_acme_basket_1", FieldType.JSON, Mode.NULLABLE)
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_routed_column_missing_is_announced_though_the_model_column_exists() -> None:
    """A key routed to a recovery column the table lacks is missing, main column or not."""
    tracker = TypeTracker(ColumnMode.MAJOR, routes=lambda _: "unstruct_event_x_recovered_1_0_1_ab")
    assert tracker.missing([ENTITY], (MAIN,), NOW) == [ENTITY]


def test_without_routes_the_model_column_counts() -> None:
    """Without routes the tracker looks for the model's column, as before."""
    assert TypeTracker(ColumnMode.MAJOR).missing([ENTITY], (MAIN,), NOW) == []
