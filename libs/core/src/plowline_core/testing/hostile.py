"""Named hostile messages, each built from one good event, with what each must become.

``hostile_lines()`` returns the catalogue (built once, ~25 MB: two lines are 10 MB).
Each ``HostileLine`` holds the message bytes as a sender could publish them and the
outcome of ``RowBuilder.transform_line`` (bytes decoded as UTF-8; ``parse_bytes`` when
they are not) with a resolver that knows Iglu Central, in both column modes unless
``major`` says otherwise: ``"good"`` or a ``FailureCode`` value. The loader then applies its
size limits on top (``huge-*`` lines become ``size.row`` there).

Notes:
    Reusable by every package's tests (and the fuzz target's seed corpus); no hypothesis
    here (see ``plowline_core.testing.hostile_strategies``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from plowline_core.event.entities import MAX_NESTING
from plowline_core.event.fields import ENRICHED_FIELDS
from plowline_core.testing.tsv import (
    UNSTRUCT_EVENT_SCHEMA,
    contexts_field,
    enriched_fields,
)

GOOD = "good"
"""The outcome of a line that becomes a table row."""

LINK_CLICK = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
CLIENT_SESSION = "iglu:com.snowplowanalytics.snowplow/client_session/jsonschema/1-0-1"
UNKNOWN = "iglu:com.acme/never_published/jsonschema/1-0-0"

PARSER_DEPTH_LIMIT = 1024
"""The deepest nesting orjson parses; past ``MAX_NESTING`` the parser refuses it anyway."""

HUGE = 10 * 1024 * 1024
"""The size of the ``huge-*`` lines (Pub/Sub's message limit is 10 MB)."""


@dataclass(frozen=True, slots=True)
class HostileLine:
    """One hostile message and what the transform must make of it."""

    name: str
    data: bytes
    expected: str
    note: str
    major: str | None = None  # the outcome in major column mode, when it differs

    def expected_in(self, major: bool) -> str:
        """Return the expected outcome in major (True) or full (False) column mode."""
        return self.major if major and self.major is not None else self.expected


def good_fields() -> dict[str, str]:
    """Return the field texts of the good event every hostile line starts from."""
    fields = enriched_fields(
        event="unstruct",
        contexts=[(WEB_PAGE, {"id": "5d8d9ed8-4a85-4e21-9b52-6e0b3d3b1ef2"})],
        unstruct_event=(LINK_CLICK, {"targetUrl": "https://example.com/a"}),
    )
    return dict(zip((field.name for field in ENRICHED_FIELDS), fields, strict=True))


def good_line() -> str:
    """Return the good event as one TSV line."""
    return "\t".join(good_fields().values())


def nested(depth: int, leaf: str = "1") -> str:
    """Return JSON text of ``depth`` arrays nested around ``leaf``."""
    return "[" * depth + leaf + "]" * depth


def unstruct_text(uri: str, data_text: str, envelope: str = UNSTRUCT_EVENT_SCHEMA) -> str:
    """Return an ``unstruct_event`` field whose entity data is the raw JSON ``data_text``."""
    return f'{{"schema":"{envelope}","data":{{"schema":"{uri}","data":{data_text}}}}}'


def _line(**overrides: str) -> bytes:
    fields = good_fields()
    unknown = set(overrides) - set(fields)
    if unknown:
        raise TypeError(f"not enriched fields: {sorted(unknown)}")
    fields.update(overrides)
    return "\t".join(fields.values()).encode("utf-8", "surrogatepass")


def _with_bytes(name: str, raw: bytes) -> bytes:
    """Return the good line with field ``name`` holding ``raw`` bytes (maybe not UTF-8)."""
    fields = {key: value.encode() for key, value in good_fields().items()}
    fields[name] = raw
    return b"\t".join(fields.values())


def _fields(count: int) -> bytes:
    texts = list(good_fields().values())
    texts = (texts * (count // len(texts) + 1))[:count]
    return "\t".join(texts).encode()


def _cases() -> list[tuple[str, bytes, str, str, str | None]]:
    link_click = ("targetUrl", "https://example.com/a")
    return [
        ("good", _line(), GOOD, "the good event itself", None),
        ("empty", b"", "parsing.not_tsv", "an empty message", None),
        ("no-tab", b"GET / HTTP/1.1", "parsing.not_tsv", "not TSV at all", None),
        ("fields-1-tab", b"\t", "parsing.field_number_mismatch", "two empty fields", None),
        ("fields-130", _fields(130), "parsing.field_number_mismatch", "one field short", None),
        ("fields-132", _fields(132), "parsing.field_number_mismatch", "one field extra", None),
        ("fields-300", _fields(300), "parsing.field_number_mismatch", "300 fields", None),
        ("only-tabs", b"\t" * 130, "parsing.row_decoding", "131 empty fields", None),
        (
            "truncated",
            good_line().encode()[:700],
            "parsing.field_number_mismatch",
            "the good line cut mid-field",
            None,
        ),
        ("crlf", _line() + b"\r", "parsing.row_decoding", "CRLF ending left on", None),
        (
            "invalid-utf8",
            _with_bytes("page_title", b"caf\xc3(\xff\xfe"),
            "parsing.invalid_utf8",
            "bytes that are not UTF-8 in a string field",
            None,
        ),
        (
            "overlong-utf8-nul",
            _with_bytes("page_title", b"a\xc0\x80b"),
            "parsing.invalid_utf8",
            "NUL written as an overlong UTF-8 sequence",
            None,
        ),
        (
            "encoded-surrogate",
            _with_bytes("page_title", b"\xed\xa0\x80"),
            "parsing.invalid_utf8",
            "a lone surrogate written as UTF-8 bytes (CESU-8)",
            None,
        ),
        ("nul", _line(page_title="a\x00b"), GOOD, "NUL characters in a string field", None),
        (
            "control-and-bidi",
            _line(page_title="\x01\x1b[31m\u202eevil\u2066\u200f\ufeff"),
            GOOD,
            "control, ANSI escape and bidi characters",
            None,
        ),
        ("bom", ("\ufeff" + good_line()).encode(), GOOD, "a byte-order mark first", None),
        (
            "json-lone-surrogate",
            _line(unstruct_event=unstruct_text(LINK_CLICK, '{"targetUrl":"\\ud800"}')),
            "parsing.row_decoding",
            "a lone surrogate escape in entity JSON",
            None,
        ),
        (
            "json-nan",
            _line(unstruct_event=unstruct_text(LINK_CLICK, '{"targetUrl":"x","n":NaN}')),
            "parsing.row_decoding",
            "NaN in entity JSON (not JSON)",
            None,
        ),
        ("atomic-nan", _line(se_value="NaN"), GOOD, "NaN double: the SDK's NULL", None),
        ("atomic-infinity", _line(se_value="-Infinity"), GOOD, "Infinity: NULL", None),
        (
            "atomic-int-past-64-bits",
            _line(txn_id="123456789012345678901234567890"),
            "parsing.row_decoding",
            "an integer field past 64 bits",
            None,
        ),
        (
            "json-int-past-64-bits",
            _line(
                contexts=contexts_field((CLIENT_SESSION, {"sessionIndex": 1})).replace(
                    '"sessionIndex":1', '"sessionIndex":123456789012345678901234567890'
                )
            ),
            "iglu.cast",
            "an INTEGER entity value past 64 bits",
            None,
        ),
        (
            "json-duplicate-keys",
            _line(unstruct_event=unstruct_text(LINK_CLICK, '{"targetUrl":"a","targetUrl":"b"}')),
            GOOD,
            "duplicate keys: the last one wins (as circe)",
            None,
        ),
        (
            "nested-at-limit",
            _line(unstruct_event=unstruct_text(LINK_CLICK, nested(MAX_NESTING - 2))),
            "iglu.cast",
            "entity JSON nested 250 deep (the most accepted): data is not an object",
            None,
        ),
        (
            "nested-at-limit-in-string",
            _line(
                unstruct_event=unstruct_text(
                    LINK_CLICK, f'{{"targetUrl":{nested(MAX_NESTING - 3)}}}'
                )
            ),
            GOOD,
            "a STRING sub-field given 247 levels: its JSON text (full mode)",
            "iglu.cast",
        ),
        (
            "nested-past-limit",
            _line(unstruct_event=unstruct_text(LINK_CLICK, nested(MAX_NESTING - 1))),
            "parsing.row_decoding",
            "entity JSON nested 251 deep: refused by the parser",
            None,
        ),
        (
            "nested-300",
            _line(unstruct_event=unstruct_text(LINK_CLICK, nested(300))),
            "parsing.row_decoding",
            "entity data nested 300 deep (orjson writes 254)",
            None,
        ),
        (
            "nested-contexts-past-limit",
            _line(contexts=contexts_field((WEB_PAGE, orjson.loads(nested(MAX_NESTING - 2))))),
            "parsing.row_decoding",
            "a context item nested past the limit",
            None,
        ),
        (
            "nested-parser-limit",
            _line(unstruct_event=unstruct_text(UNKNOWN, nested(PARSER_DEPTH_LIMIT - 3))),
            "parsing.row_decoding",
            "arrays nested to orjson's parsing limit, unknown schema",
            None,
        ),
        (
            "nested-objects-parser-limit",
            _line(
                unstruct_event=unstruct_text(
                    UNKNOWN, '{"a":' * (PARSER_DEPTH_LIMIT - 3) + "1" + "}" * 1021
                ),
            ),
            "parsing.row_decoding",
            "objects nested to the parsing limit, unknown schema",
            None,
        ),
        (
            "nested-wide-spine",
            _line(
                unstruct_event=unstruct_text(
                    UNKNOWN, "[" * (PARSER_DEPTH_LIMIT - 3) + "1" + ',"x"]' * 1021
                ),
            ),
            "parsing.row_decoding",
            "arrays of two items nested to the parsing limit, unknown schema",
            None,
        ),
        (
            "nested-past-parser-limit",
            _line(unstruct_event=unstruct_text(LINK_CLICK, nested(PARSER_DEPTH_LIMIT + 1))),
            "parsing.row_decoding",
            "nested past the parser's limit",
            None,
        ),
        (
            "schema-uri-no-patch",
            _line(unstruct_event=unstruct_text(LINK_CLICK[:-2], '{"targetUrl":"a"}')),
            "parsing.row_decoding",
            "a schema URI with two version numbers",
            None,
        ),
        (
            "schema-uri-trailing-space",
            _line(unstruct_event=unstruct_text(LINK_CLICK + " ", '{"targetUrl":"a"}')),
            "parsing.row_decoding",
            "a schema URI with a trailing space",
            None,
        ),
        (
            "schema-uri-upper-case",
            _line(
                unstruct_event=unstruct_text(
                    LINK_CLICK.replace("iglu:", "IGLU:"), '{"targetUrl":"a"}'
                )
            ),
            "parsing.row_decoding",
            "IGLU: instead of iglu:",
            None,
        ),
        (
            "schema-uri-unknown",
            _line(unstruct_event=unstruct_text(UNKNOWN, '{"targetUrl":"a"}')),
            "iglu.resolution",
            "a valid URI no registry knows",
            None,
        ),
        (
            "envelope-1-1-0",
            _line(
                unstruct_event=unstruct_text(
                    LINK_CLICK, '{"targetUrl":"a"}', UNSTRUCT_EVENT_SCHEMA[:-5] + "1-1-0"
                )
            ),
            "parsing.row_decoding",
            "an unstruct_event envelope of another model",
            None,
        ),
        (
            "data-missing",
            _line(unstruct_event=unstruct_text(LINK_CLICK, "null").replace(',"data":null', "")),
            "parsing.row_decoding",
            "an entity without data",
            None,
        ),
        (
            "huge-junk",
            b"x" * HUGE,
            "parsing.not_tsv",
            "10 MB without a tab",
            None,
        ),
        (
            "huge-title",
            _line(page_title="t" * HUGE),
            GOOD,
            "a 10 MB string field (the loader makes it size.row)",
            None,
        ),
        (
            "many-contexts",
            _line(contexts=contexts_field(*[(WEB_PAGE, {"id": str(i)}) for i in range(20000)])),
            GOOD,
            "20,000 context items",
            None,
        ),
        (
            "wide-entity",
            _line(
                unstruct_event=unstruct_text(
                    LINK_CLICK, _object({link_click[0]: "a", **{f"k{i}": i for i in range(300)}})
                )
            ),
            GOOD,
            "an entity with 300 keys the schema does not know (dropped)",
            None,
        ),
    ]


def _object(items: Mapping[str, Any]) -> str:
    return orjson.dumps(dict(items)).decode()


@lru_cache(maxsize=1)
def hostile_lines() -> tuple[HostileLine, ...]:
    """Return the catalogue of named hostile lines (see the module docstring)."""
    return tuple(HostileLine(*case) for case in _cases())


def hostile_line(name: str) -> HostileLine:
    """Return the named hostile line; raise KeyError for an unknown name."""
    for line in hostile_lines():
        if line.name == name:
            return line
    raise KeyError(name)
