"""The 131 fields of an enriched event in TSV order, and the tables loaders 1.x and 2.x make.

Source: Snowplow's analytics SDK field table (``tests/data/conformance/enriched_fields.tsv``).
Fields 53 ``contexts``, 59 ``unstruct_event`` and 123 ``derived_contexts`` hold
self-describing JSON and become entity columns; the other 128 are the atomic columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from plowline_core.schema.field import Field, FieldType, Mode


class Kind(StrEnum):
    """How a TSV value is decoded."""

    STRING = "STRING"
    UUID = "UUID"
    TIMESTAMP = "TIMESTAMP"
    INT = "INT"
    DOUBLE = "DOUBLE"
    BOOLEAN = "BOOLEAN"
    CONTEXTS = "CONTEXTS"
    UNSTRUCT_EVENT = "UNSTRUCT_EVENT"


@dataclass(frozen=True, slots=True)
class EnrichedField:
    """One TSV position: 1-based index, name, how to decode it, whether empty is an error."""

    index: int
    name: str
    kind: Kind
    required: bool = False
    max_length: int | None = None

    @property
    def is_entity(self) -> bool:
        """True for the three self-describing JSON fields."""
        return self.kind in (Kind.CONTEXTS, Kind.UNSTRUCT_EVENT)


ENRICHED_FIELDS: tuple[EnrichedField, ...] = (
    EnrichedField(1, "app_id", Kind.STRING, required=False, max_length=255),
    EnrichedField(2, "platform", Kind.STRING, required=False, max_length=255),
    EnrichedField(3, "etl_tstamp", Kind.TIMESTAMP, required=False, max_length=None),
    EnrichedField(4, "collector_tstamp", Kind.TIMESTAMP, required=True, max_length=None),
    EnrichedField(5, "dvce_created_tstamp", Kind.TIMESTAMP, required=False, max_length=None),
    EnrichedField(6, "event", Kind.STRING, required=False, max_length=128),
    EnrichedField(7, "event_id", Kind.UUID, required=True, max_length=36),
    EnrichedField(8, "txn_id", Kind.INT, required=False, max_length=None),
    EnrichedField(9, "name_tracker", Kind.STRING, required=False, max_length=128),
    EnrichedField(10, "v_tracker", Kind.STRING, required=False, max_length=100),
    EnrichedField(11, "v_collector", Kind.STRING, required=True, max_length=100),
    EnrichedField(12, "v_etl", Kind.STRING, required=True, max_length=100),
    EnrichedField(13, "user_id", Kind.STRING, required=False, max_length=255),
    EnrichedField(14, "user_ipaddress", Kind.STRING, required=False, max_length=128),
    EnrichedField(15, "user_fingerprint", Kind.STRING, required=False, max_length=128),
    EnrichedField(16, "domain_userid", Kind.STRING, required=False, max_length=128),
    EnrichedField(17, "domain_sessionidx", Kind.INT, required=False, max_length=None),
    EnrichedField(18, "network_userid", Kind.STRING, required=False, max_length=128),
    EnrichedField(19, "geo_country", Kind.STRING, required=False, max_length=2),
    EnrichedField(20, "geo_region", Kind.STRING, required=False, max_length=3),
    EnrichedField(21, "geo_city", Kind.STRING, required=False, max_length=75),
    EnrichedField(22, "geo_zipcode", Kind.STRING, required=False, max_length=15),
    EnrichedField(23, "geo_latitude", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(24, "geo_longitude", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(25, "geo_region_name", Kind.STRING, required=False, max_length=100),
    EnrichedField(26, "ip_isp", Kind.STRING, required=False, max_length=100),
    EnrichedField(27, "ip_organization", Kind.STRING, required=False, max_length=128),
    EnrichedField(28, "ip_domain", Kind.STRING, required=False, max_length=128),
    EnrichedField(29, "ip_netspeed", Kind.STRING, required=False, max_length=100),
    EnrichedField(30, "page_url", Kind.STRING, required=False, max_length=4096),
    EnrichedField(31, "page_title", Kind.STRING, required=False, max_length=2000),
    EnrichedField(32, "page_referrer", Kind.STRING, required=False, max_length=4096),
    EnrichedField(33, "page_urlscheme", Kind.STRING, required=False, max_length=16),
    EnrichedField(34, "page_urlhost", Kind.STRING, required=False, max_length=255),
    EnrichedField(35, "page_urlport", Kind.INT, required=False, max_length=None),
    EnrichedField(36, "page_urlpath", Kind.STRING, required=False, max_length=3000),
    EnrichedField(37, "page_urlquery", Kind.STRING, required=False, max_length=6000),
    EnrichedField(38, "page_urlfragment", Kind.STRING, required=False, max_length=3000),
    EnrichedField(39, "refr_urlscheme", Kind.STRING, required=False, max_length=16),
    EnrichedField(40, "refr_urlhost", Kind.STRING, required=False, max_length=255),
    EnrichedField(41, "refr_urlport", Kind.INT, required=False, max_length=None),
    EnrichedField(42, "refr_urlpath", Kind.STRING, required=False, max_length=6000),
    EnrichedField(43, "refr_urlquery", Kind.STRING, required=False, max_length=6000),
    EnrichedField(44, "refr_urlfragment", Kind.STRING, required=False, max_length=3000),
    EnrichedField(45, "refr_medium", Kind.STRING, required=False, max_length=25),
    EnrichedField(46, "refr_source", Kind.STRING, required=False, max_length=50),
    EnrichedField(47, "refr_term", Kind.STRING, required=False, max_length=255),
    EnrichedField(48, "mkt_medium", Kind.STRING, required=False, max_length=255),
    EnrichedField(49, "mkt_source", Kind.STRING, required=False, max_length=255),
    EnrichedField(50, "mkt_term", Kind.STRING, required=False, max_length=255),
    EnrichedField(51, "mkt_content", Kind.STRING, required=False, max_length=500),
    EnrichedField(52, "mkt_campaign", Kind.STRING, required=False, max_length=255),
    EnrichedField(53, "contexts", Kind.CONTEXTS, required=False, max_length=None),
    EnrichedField(54, "se_category", Kind.STRING, required=False, max_length=1000),
    EnrichedField(55, "se_action", Kind.STRING, required=False, max_length=1000),
    EnrichedField(56, "se_label", Kind.STRING, required=False, max_length=4096),
    EnrichedField(57, "se_property", Kind.STRING, required=False, max_length=1000),
    EnrichedField(58, "se_value", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(59, "unstruct_event", Kind.UNSTRUCT_EVENT, required=False, max_length=None),
    EnrichedField(60, "tr_orderid", Kind.STRING, required=False, max_length=255),
    EnrichedField(61, "tr_affiliation", Kind.STRING, required=False, max_length=255),
    EnrichedField(62, "tr_total", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(63, "tr_tax", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(64, "tr_shipping", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(65, "tr_city", Kind.STRING, required=False, max_length=255),
    EnrichedField(66, "tr_state", Kind.STRING, required=False, max_length=255),
    EnrichedField(67, "tr_country", Kind.STRING, required=False, max_length=255),
    EnrichedField(68, "ti_orderid", Kind.STRING, required=False, max_length=255),
    EnrichedField(69, "ti_sku", Kind.STRING, required=False, max_length=255),
    EnrichedField(70, "ti_name", Kind.STRING, required=False, max_length=255),
    EnrichedField(71, "ti_category", Kind.STRING, required=False, max_length=255),
    EnrichedField(72, "ti_price", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(73, "ti_quantity", Kind.INT, required=False, max_length=None),
    EnrichedField(74, "pp_xoffset_min", Kind.INT, required=False, max_length=None),
    EnrichedField(75, "pp_xoffset_max", Kind.INT, required=False, max_length=None),
    EnrichedField(76, "pp_yoffset_min", Kind.INT, required=False, max_length=None),
    EnrichedField(77, "pp_yoffset_max", Kind.INT, required=False, max_length=None),
    EnrichedField(78, "useragent", Kind.STRING, required=False, max_length=1000),
    EnrichedField(79, "br_name", Kind.STRING, required=False, max_length=50),
    EnrichedField(80, "br_family", Kind.STRING, required=False, max_length=50),
    EnrichedField(81, "br_version", Kind.STRING, required=False, max_length=50),
    EnrichedField(82, "br_type", Kind.STRING, required=False, max_length=50),
    EnrichedField(83, "br_renderengine", Kind.STRING, required=False, max_length=50),
    EnrichedField(84, "br_lang", Kind.STRING, required=False, max_length=255),
    EnrichedField(85, "br_features_pdf", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(86, "br_features_flash", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(87, "br_features_java", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(88, "br_features_director", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(89, "br_features_quicktime", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(90, "br_features_realplayer", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(91, "br_features_windowsmedia", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(92, "br_features_gears", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(93, "br_features_silverlight", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(94, "br_cookies", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(95, "br_colordepth", Kind.STRING, required=False, max_length=12),
    EnrichedField(96, "br_viewwidth", Kind.INT, required=False, max_length=None),
    EnrichedField(97, "br_viewheight", Kind.INT, required=False, max_length=None),
    EnrichedField(98, "os_name", Kind.STRING, required=False, max_length=50),
    EnrichedField(99, "os_family", Kind.STRING, required=False, max_length=50),
    EnrichedField(100, "os_manufacturer", Kind.STRING, required=False, max_length=50),
    EnrichedField(101, "os_timezone", Kind.STRING, required=False, max_length=255),
    EnrichedField(102, "dvce_type", Kind.STRING, required=False, max_length=50),
    EnrichedField(103, "dvce_ismobile", Kind.BOOLEAN, required=False, max_length=None),
    EnrichedField(104, "dvce_screenwidth", Kind.INT, required=False, max_length=None),
    EnrichedField(105, "dvce_screenheight", Kind.INT, required=False, max_length=None),
    EnrichedField(106, "doc_charset", Kind.STRING, required=False, max_length=128),
    EnrichedField(107, "doc_width", Kind.INT, required=False, max_length=None),
    EnrichedField(108, "doc_height", Kind.INT, required=False, max_length=None),
    EnrichedField(109, "tr_currency", Kind.STRING, required=False, max_length=3),
    EnrichedField(110, "tr_total_base", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(111, "tr_tax_base", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(112, "tr_shipping_base", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(113, "ti_currency", Kind.STRING, required=False, max_length=3),
    EnrichedField(114, "ti_price_base", Kind.DOUBLE, required=False, max_length=None),
    EnrichedField(115, "base_currency", Kind.STRING, required=False, max_length=3),
    EnrichedField(116, "geo_timezone", Kind.STRING, required=False, max_length=64),
    EnrichedField(117, "mkt_clickid", Kind.STRING, required=False, max_length=128),
    EnrichedField(118, "mkt_network", Kind.STRING, required=False, max_length=64),
    EnrichedField(119, "etl_tags", Kind.STRING, required=False, max_length=500),
    EnrichedField(120, "dvce_sent_tstamp", Kind.TIMESTAMP, required=False, max_length=None),
    EnrichedField(121, "refr_domain_userid", Kind.STRING, required=False, max_length=128),
    EnrichedField(122, "refr_dvce_tstamp", Kind.TIMESTAMP, required=False, max_length=None),
    EnrichedField(123, "derived_contexts", Kind.CONTEXTS, required=False, max_length=None),
    EnrichedField(124, "domain_sessionid", Kind.STRING, required=False, max_length=128),
    EnrichedField(125, "derived_tstamp", Kind.TIMESTAMP, required=False, max_length=None),
    EnrichedField(126, "event_vendor", Kind.STRING, required=False, max_length=1000),
    EnrichedField(127, "event_name", Kind.STRING, required=False, max_length=1000),
    EnrichedField(128, "event_format", Kind.STRING, required=False, max_length=128),
    EnrichedField(129, "event_version", Kind.STRING, required=False, max_length=128),
    EnrichedField(130, "event_fingerprint", Kind.STRING, required=False, max_length=128),
    EnrichedField(131, "true_tstamp", Kind.TIMESTAMP, required=False, max_length=None),
)
"""All 131 fields in TSV order."""

FIELD_COUNT = len(ENRICHED_FIELDS)

ENTITY_POSITIONS: tuple[int, ...] = tuple(
    field.index - 1 for field in ENRICHED_FIELDS if field.is_entity
)
"""The 0-based TSV positions of the self-describing JSON fields, in TSV order."""
CONTEXTS_AT, UNSTRUCT_EVENT_AT, DERIVED_CONTEXTS_AT = (
    next(field.index - 1 for field in ENRICHED_FIELDS if field.name == name)
    for name in ("contexts", "unstruct_event", "derived_contexts")
)

_BIGQUERY_TYPES = {
    Kind.STRING: FieldType.STRING,
    Kind.UUID: FieldType.STRING,
    Kind.TIMESTAMP: FieldType.TIMESTAMP,
    Kind.INT: FieldType.INTEGER,
    Kind.DOUBLE: FieldType.FLOAT,
    Kind.BOOLEAN: FieldType.BOOLEAN,
}

LOAD_TSTAMP = Field("load_tstamp", FieldType.TIMESTAMP, Mode.NULLABLE)
"""Filled by BigQuery at insert time (rows carry ``"AUTO"``)."""

ATOMIC_COLUMNS: tuple[Field, ...] = tuple(
    Field(f.name, _BIGQUERY_TYPES[f.kind], Mode.REQUIRED if f.required else Mode.NULLABLE)
    for f in ENRICHED_FIELDS
    if not f.is_entity
) + (LOAD_TSTAMP,)
"""The events table's atomic columns (v1 types), in TSV order, then ``load_tstamp``."""

MONEY_FIELDS = frozenset(
    {
        "tr_total",
        "tr_tax",
        "tr_shipping",
        "ti_price",
        "tr_total_base",
        "tr_tax_base",
        "tr_shipping_base",
        "ti_price_base",
    }
)
"""The monetary atomic fields: FLOAT in the 1.x table, NUMERIC (18 digits, scale 2) in 2.x's."""

V2_ATOMIC_COLUMNS: tuple[Field, ...] = tuple(
    Field(f.name, FieldType.NUMERIC, f.mode) if f.name in MONEY_FIELDS else f
    for f in ATOMIC_COLUMNS[:-1]
) + (Field(LOAD_TSTAMP.name, FieldType.TIMESTAMP, Mode.REQUIRED),)
"""The atomic columns of the table loader 2.x creates: money NUMERIC, ``load_tstamp`` REQUIRED."""

V2_PARTITION_COLUMN = "load_tstamp"
"""2.x's table is DAY-partitioned on this column."""

V2_CLUSTER_BY: tuple[str, ...] = ("event_name",)
"""2.x's table is clustered by these columns."""
