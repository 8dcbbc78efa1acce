"""Realistic web traffic as enriched TSV lines: page views, link clicks and checkouts.

:class:`Traffic` draws visitors (a browser, a place, a session) and what they do from a
seeded :class:`random.Random`, and assembles the 131 fields in the order of
``plowline_core.event.fields.ENRICHED_FIELDS``. Every line it returns is valid against the
example Iglu registry (``examples/iglu``), so the loader turns it into a table row.

Events:
    ``page_view``         ``contexts``: web_page 1-0-0; ``derived_contexts``: ua_parser_context
    ``link_click``        ``unstruct_event``: link_click 1-0-0 or 1-0-1, same contexts
    ``checkout_started``  ``unstruct_event``: com.acme/checkout_started 1-0-0 (custom)
    ``legacy_order``      ``unstruct_event``: com.acme/legacy_order 1-0-0 (custom; never in the
                          random mix: only ``generate(never_fitting=…)`` asks for it, see
                          ``demo/conflict.py`` for the column it never fits)

Notes:
    Deterministic: the same seed and start time give the same lines, byte for byte.
    Timestamps follow enrich's rules: ``dvce_created`` ≤ ``dvce_sent`` on the device clock
    (skewed), ``collector`` < ``etl``, ``derived = collector - (dvce_sent - dvce_created)``.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from plowline_core.event.fields import ENRICHED_FIELDS

CONTEXTS_SCHEMA = "iglu:com.snowplowanalytics.snowplow/contexts/jsonschema/1-0-0"
UNSTRUCT_SCHEMA = "iglu:com.snowplowanalytics.snowplow/unstruct_event/jsonschema/1-0-0"
WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
UA_PARSER = "iglu:com.snowplowanalytics.snowplow/ua_parser_context/jsonschema/1-0-0"
LINK_CLICK = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-{}"
CHECKOUT_STARTED = "iglu:com.acme/checkout_started/jsonschema/1-0-0"
LEGACY_ORDER = "iglu:com.acme/legacy_order/jsonschema/1-0-0"
NEVER_FITTING_KINDS = ("legacy_order",)
"""Valid events whose column an operator made by hand with a type they do not fit."""

_NAMES = tuple(field.name for field in ENRICHED_FIELDS)
_HOST = "shop.acme.example"
_APP_ID = "acme-shop"
# (event, weight): mostly page views, as on a real site.
_EVENT_MIX = (("page_view", 70), ("link_click", 22), ("checkout_started", 8))

# (country, region, city, zipcode, latitude, longitude, region name, time zone)
_PLACES = (
    ("FR", "IDF", "Paris", "75011", 48.8589, 2.3800, "Ile-de-France", "Europe/Paris"),
    ("FR", "ARA", "Lyon", "69002", 45.7485, 4.8270, "Auvergne-Rhone-Alpes", "Europe/Paris"),
    ("GB", "ENG", "London", "EC1A", 51.5202, -0.0979, "England", "Europe/London"),
    ("DE", "BE", "Berlin", "10115", 52.5321, 13.3849, "Land Berlin", "Europe/Berlin"),
    ("US", "CA", "San Francisco", "94107", 37.7697, -122.3933, "California", "America/Los_Angeles"),
    ("US", "NY", "New York", "10001", 40.7506, -73.9972, "New York", "America/New_York"),
    ("JP", "13", "Tokyo", "100-0001", 35.6850, 139.7514, "Tokyo", "Asia/Tokyo"),
    ("BR", "SP", "Sao Paulo", "01000", -23.5475, -46.6361, "Sao Paulo", "America/Sao_Paulo"),
)

# (browser family, major, minor, engine, os family, os major, manufacturer, device, mobile,
#  screen w, screen h, user agent)
_BROWSERS = (
    ("Chrome", "124", "0", "WEBKIT", "Windows", "10", "Microsoft Corporation", "Other", False,
     1920, 1080, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"),
    ("Firefox", "125", "0", "GECKO", "Ubuntu", None, "Canonical Ltd.", "Other", False,
     2560, 1440, "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"),
    ("Safari", "17", "4", "WEBKIT", "Mac OS X", "14", "Apple Inc.", "Other", False,
     1728, 1117, "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_4) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15"),
    ("Mobile Safari", "17", "4", "WEBKIT", "iOS", "17", "Apple Inc.", "iPhone", True,
     390, 844, "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"),
    ("Chrome Mobile", "124", "0", "WEBKIT", "Android", "14", "Google Inc.", "Pixel 8", True,
     412, 915, "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36"),
    ("Edge", "124", "0", "WEBKIT", "Windows", "11", "Microsoft Corporation", "Other", False,
     1536, 864, "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.2478.51"),
)  # fmt: skip

# (path, title)
_PAGES = (
    ("/", "Acme Shop - Home"),
    ("/products/anvil", "Anvil, 50 kg - Acme Shop"),
    ("/products/rocket-skates", "Rocket skates - Acme Shop"),
    ("/products/giant-magnet", "Giant magnet - Acme Shop"),
    ("/products/portable-hole", "Portable hole - Acme Shop"),
    ("/category/gadgets", "Gadgets - Acme Shop"),
    ("/blog/how-to-catch-a-roadrunner", "How to catch a roadrunner - Acme Blog"),
    ("/cart", "Your cart - Acme Shop"),
    ("/help/shipping", "Shipping - Acme Help"),
)

# (referrer URL or None, medium, source, term)
_REFERRERS = (
    (None, None, None, None),
    ("https://www.google.com/search?q=acme+anvil", "search", "Google", "acme anvil"),
    ("https://www.bing.com/search?q=rocket+skates", "search", "Bing", "rocket skates"),
    ("https://www.facebook.com/", "social", "Facebook", None),
    ("https://news.ycombinator.com/item?id=1", "unknown", None, None),
)

# (target URL, element id, classes, target, text)
_LINKS = (
    ("https://shop.acme.example/products/anvil", "hero-anvil", ["btn", "btn-primary"], "_self", "Buy the anvil"),
    ("https://shop.acme.example/cart", "nav-cart", ["nav-link"], "_self", "Cart"),
    ("https://twitter.com/acme", "footer-twitter", ["social"], "_blank", "Follow us"),
    ("https://docs.acme.example/returns", "returns-policy", ["link"], "_blank", "Returns policy"),
    ("https://shop.acme.example/category/gadgets", "menu-gadgets", ["menu", "menu-item"], "_self", "Gadgets"),
)  # fmt: skip

_CAMPAIGNS = (("email", "newsletter", "spring_sale"), ("cpc", "google", "brand_search"))
_CURRENCIES = ("EUR", "GBP", "USD")
_COUPONS = (None, None, "SPRING10", "WELCOME5")


@dataclass(frozen=True, slots=True)
class _Visitor:
    """One visitor: who, where, on what, and in which session."""

    domain_userid: str
    network_userid: str
    user_id: str | None
    ip: str
    place: tuple[Any, ...]
    browser: tuple[Any, ...]
    session_id: str
    session_index: int
    clock_skew_ms: int


def format_tstamp(moment: datetime) -> str:
    """Return ``moment`` as enriched TSV writes it: ``YYYY-MM-DD HH:MM:SS.fff`` (UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def assemble(fields: Mapping[str, str]) -> str:
    """Return the TSV line of ``fields`` (name → text) in the 131-field order, empty where absent."""
    return "\t".join(fields.get(name, "") for name in _NAMES)


def contexts_text(*entities: tuple[str, Any]) -> str:
    """Return a ``contexts``/``derived_contexts`` field holding ``(schema, data)`` entities."""
    data = [{"schema": schema, "data": value} for schema, value in entities]
    return _json({"schema": CONTEXTS_SCHEMA, "data": data})


def unstruct_text(schema: str, data: Any) -> str:
    """Return an ``unstruct_event`` field holding one ``(schema, data)`` entity."""
    return _json({"schema": UNSTRUCT_SCHEMA, "data": {"schema": schema, "data": data}})


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Traffic:
    """A seeded source of good enriched lines, starting at ``start``, ``rate`` events a second."""

    def __init__(
        self, rng: random.Random, start: datetime, rate: float = 100.0, visitors: int = 200
    ) -> None:
        self._rng = rng
        self._clock = start.astimezone(UTC)
        self._mean_gap = 1.0 / rate if rate > 0 else 0.01
        self._visitors = [self._visitor() for _ in range(visitors)]
        self._events = [name for name, _ in _EVENT_MIX]
        self._weights = [weight for _, weight in _EVENT_MIX]

    @property
    def rng(self) -> random.Random:
        """The generator every draw comes from (malformed lines draw from it too)."""
        return self._rng

    def uuid(self) -> str:
        """Return a random (version 4) UUID drawn from this source's generator."""
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def next_event(self) -> tuple[str, str, str]:
        """Return ``(kind, event_id, line)`` of the next good event."""
        kind = self._rng.choices(self._events, self._weights)[0]
        event_id = self.uuid()
        return kind, event_id, assemble(self.fields(kind, event_id))

    def fields(self, kind: str, event_id: str) -> dict[str, str]:
        """Return the field texts of a good ``kind`` event (``page_view``, ``link_click``, …)."""
        self._clock += timedelta(seconds=self._rng.expovariate(1.0 / self._mean_gap))
        visitor = self._rng.choice(self._visitors)
        fields = {
            **self._base(event_id, visitor),
            **self._page(),
            **self._device(visitor),
            **self._timestamps(visitor),
        }
        fields["contexts"] = contexts_text((WEB_PAGE, {"id": self.uuid()}))
        fields["derived_contexts"] = contexts_text((UA_PARSER, _ua_context(visitor.browser)))
        fields.update(_EVENT_FIELDS[kind](self))
        return fields

    def _visitor(self) -> _Visitor:
        rng = self._rng
        return _Visitor(
            domain_userid=f"{rng.getrandbits(64):016x}",
            network_userid=self.uuid(),
            user_id=f"user-{rng.randrange(1, 10_000):05d}" if rng.random() < 0.3 else None,
            ip=f"{rng.choice(('192.0.2', '198.51.100', '203.0.113'))}.{rng.randrange(1, 255)}",
            place=rng.choice(_PLACES),
            browser=rng.choice(_BROWSERS),
            session_id=self.uuid(),
            session_index=rng.randrange(1, 40),
            clock_skew_ms=rng.randrange(-90_000, 90_000),
        )

    def _base(self, event_id: str, visitor: _Visitor) -> dict[str, str]:
        country, region, city, zipcode, lat, lon, region_name, zone = visitor.place
        return {
            "app_id": _APP_ID,
            "platform": "web",
            "event_id": event_id,
            "name_tracker": "sp",
            "v_tracker": "js-3.24.2",
            "v_collector": "ssc-3.2.0-pubsub",
            "v_etl": "snowplow-enrich-pubsub-5.0.0",
            "user_id": visitor.user_id or "",
            "user_ipaddress": visitor.ip,
            "domain_userid": visitor.domain_userid,
            "domain_sessionidx": str(visitor.session_index),
            "network_userid": visitor.network_userid,
            "domain_sessionid": visitor.session_id,
            "geo_country": country,
            "geo_region": region,
            "geo_city": city,
            "geo_zipcode": zipcode,
            "geo_latitude": f"{lat:.4f}",
            "geo_longitude": f"{lon:.4f}",
            "geo_region_name": region_name,
            "geo_timezone": zone,
            "event_fingerprint": f"{self._rng.getrandbits(128):032x}",
        }

    def _page(self) -> dict[str, str]:
        rng = self._rng
        path, title = rng.choice(_PAGES)
        fields = {
            "page_url": f"https://{_HOST}{path}",
            "page_title": title,
            "page_urlscheme": "https",
            "page_urlhost": _HOST,
            "page_urlport": "443",
            "page_urlpath": path,
        }
        referrer, medium, source, term = rng.choice(_REFERRERS)
        if referrer is not None:
            scheme, _, rest = referrer.partition("://")
            host, _, tail = rest.partition("/")
            refr_path, _, query = ("/" + tail).partition("?")
            fields |= {
                "page_referrer": referrer,
                "refr_urlscheme": scheme,
                "refr_urlhost": host,
                "refr_urlport": "443",
                "refr_urlpath": refr_path,
                "refr_urlquery": query,
                "refr_medium": medium or "",
                "refr_source": source or "",
                "refr_term": term or "",
            }
        if rng.random() < 0.15:
            campaign_medium, campaign_source, campaign = rng.choice(_CAMPAIGNS)
            fields |= {
                "page_urlquery": f"utm_medium={campaign_medium}&utm_source={campaign_source}"
                f"&utm_campaign={campaign}",
                "mkt_medium": campaign_medium,
                "mkt_source": campaign_source,
                "mkt_campaign": campaign,
            }
        return fields

    def _device(self, visitor: _Visitor) -> dict[str, str]:
        family, major, minor, engine, os_family, _, maker, _, mobile, w, h, agent = visitor.browser
        return {
            "useragent": agent,
            "br_name": f"{family} {major}",
            "br_family": family,
            "br_version": f"{major}.{minor}",
            "br_type": "Browser (mobile)" if mobile else "Browser",
            "br_renderengine": engine,
            "br_lang": self._rng.choice(("en-US", "en-GB", "fr-FR", "de-DE", "ja-JP")),
            "br_features_pdf": "1",
            "br_cookies": "1",
            "br_colordepth": "24",
            "br_viewwidth": str(w - self._rng.randrange(0, 40)),
            "br_viewheight": str(h - self._rng.randrange(80, 200)),
            "os_name": os_family,
            "os_family": os_family,
            "os_manufacturer": maker,
            "os_timezone": visitor.place[7],
            "dvce_type": "Mobile" if mobile else "Computer",
            "dvce_ismobile": "1" if mobile else "0",
            "dvce_screenwidth": str(w),
            "dvce_screenheight": str(h),
            "doc_charset": "UTF-8",
            "doc_width": str(w - 17),
            "doc_height": str(self._rng.randrange(h, 6 * h)),
        }

    def _timestamps(self, visitor: _Visitor) -> dict[str, str]:
        collector = self._clock
        send_delay = timedelta(milliseconds=self._rng.randrange(5, 2_000))
        sent = collector + timedelta(milliseconds=visitor.clock_skew_ms)
        created = sent - send_delay
        etl = collector + timedelta(milliseconds=self._rng.randrange(50, 900))
        return {
            "collector_tstamp": format_tstamp(collector),
            "etl_tstamp": format_tstamp(etl),
            "dvce_created_tstamp": format_tstamp(created),
            "dvce_sent_tstamp": format_tstamp(sent),
            "derived_tstamp": format_tstamp(collector - send_delay),
        }

    def _page_view(self) -> dict[str, str]:
        return _event_header("page_view", "com.snowplowanalytics.snowplow", "page_view", "1-0-0")

    def _link_click(self) -> dict[str, str]:
        target, element_id, classes, element_target, text = self._rng.choice(_LINKS)
        data: dict[str, Any] = {
            "targetUrl": target,
            "elementId": element_id,
            "elementClasses": classes,
            "elementTarget": element_target,
        }
        version = self._rng.choice((0, 1))
        if version == 1:
            data["elementContent"] = text
        fields = _event_header(
            "unstruct", "com.snowplowanalytics.snowplow", "link_click", f"1-0-{version}"
        )
        fields["unstruct_event"] = unstruct_text(LINK_CLICK.format(version), data)
        return fields

    def _checkout_started(self) -> dict[str, str]:
        rng = self._rng
        items = rng.randrange(1, 8)
        data = {
            "cartId": f"cart-{rng.getrandbits(48):012x}",
            "itemCount": items,
            "total": round(items * rng.uniform(4.99, 249.0), 2),
            "currency": rng.choice(_CURRENCIES),
            "coupon": rng.choice(_COUPONS),
            "startedAt": self._clock.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        }
        fields = _event_header("unstruct", "com.acme", "checkout_started", "1-0-0")
        fields["unstruct_event"] = unstruct_text(CHECKOUT_STARTED, data)
        return fields

    def _legacy_order(self) -> dict[str, str]:
        rng = self._rng
        data = {
            # Text ids since the legacy system's 2024 migration (the old ones were numbers).
            "orderId": f"LO-{self._clock:%Y}-{rng.randrange(1, 1_000_000):06d}",
            "total": round(rng.uniform(9.99, 1999.0), 2),
            "currency": rng.choice(_CURRENCIES),
        }
        fields = _event_header("unstruct", "com.acme", "legacy_order", "1-0-0")
        fields["unstruct_event"] = unstruct_text(LEGACY_ORDER, data)
        return fields


def _event_header(event: str, vendor: str, name: str, version: str) -> dict[str, str]:
    return {
        "event": event,
        "event_vendor": vendor,
        "event_name": name,
        "event_format": "jsonschema",
        "event_version": version,
    }


def _ua_context(browser: tuple[Any, ...]) -> dict[str, Any]:
    family, major, minor, _, os_family, os_major, _, device, *_ = browser
    return {
        "useragentFamily": family,
        "useragentMajor": major,
        "useragentMinor": minor,
        "useragentPatch": None,
        "useragentVersion": f"{family} {major}.{minor}",
        "osFamily": os_family,
        "osMajor": os_major,
        "osMinor": None,
        "osPatch": None,
        "osPatchMinor": None,
        "osVersion": f"{os_family} {os_major}" if os_major else os_family,
        "deviceFamily": device,
    }


_EVENT_FIELDS = {
    "page_view": Traffic._page_view,
    "link_click": Traffic._link_click,
    "checkout_started": Traffic._checkout_started,
    "legacy_order": Traffic._legacy_order,
}
