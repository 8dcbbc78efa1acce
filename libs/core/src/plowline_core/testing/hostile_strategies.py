"""Hypothesis strategies for hostile enriched messages (``plowline-core[testing]``).

``hostile_messages()`` draws message bytes a sender could publish: the good event of
:mod:`plowline_core.testing.hostile` with one field replaced by a nasty value, a line of
0-300 fields, bytes that are not UTF-8, a huge line, or a named hostile line. The pieces
are strategies of their own for tests that want one kind only.

Notes:
    Nesting is drawn up to and past the parser's limit (``PARSER_DEPTH_LIMIT``); huge
    lines are drawn rarely and built outside hypothesis' buffer (``"x" * size``).
"""

from __future__ import annotations

from hypothesis import strategies as st

from plowline_core.event.fields import ENRICHED_FIELDS
from plowline_core.testing.hostile import (
    LINK_CLICK,
    PARSER_DEPTH_LIMIT,
    UNKNOWN,
    good_fields,
    hostile_lines,
    unstruct_text,
)

_NAMES = tuple(field.name for field in ENRICHED_FIELDS)
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff"


def nesting_depths() -> st.SearchStrategy[int]:
    """Draw depths around orjson's write limit (255) and the parser's (1024), and past."""
    edges = [0, 1, 253, 254, 255, 256, 499, 500, 501]
    edges += [PARSER_DEPTH_LIMIT - 4, PARSER_DEPTH_LIMIT, PARSER_DEPTH_LIMIT + 1]
    return st.sampled_from(edges) | st.integers(0, PARSER_DEPTH_LIMIT + 50)


@st.composite
def nested_json(draw: st.DrawFn) -> str:
    """Draw JSON text nested by arrays and objects to a drawn depth, around a drawn leaf."""
    depth = draw(nesting_depths())
    leaf = draw(st.sampled_from(["1", '"x"', "null", "{}", "[]", "1e999", "-0", '"\\ud800"']))
    opener = draw(st.sampled_from(["[", '{"a":', '{"targetUrl":']))
    closer = "]" if opener == "[" else "}"
    return opener * depth + leaf + closer * depth


def nasty_numbers() -> st.SearchStrategy[str]:
    """Draw number texts: NaN, Infinity, past 64 bits, overflowing exponents, signs."""
    fixed = ["NaN", "-NaN", "Infinity", "-Infinity", "1e400", "-1e400", "0x10", "1_000", "+1"]
    fixed += [str(2**63), str(2**64), str(-(2**63) - 1), "1" * 400, "1e-400", "١٢٣", "²"]
    return st.sampled_from(fixed) | st.integers(-(2**200), 2**200).map(str)


def control_and_bidi_text() -> st.SearchStrategy[str]:
    """Draw text made of control, bidi, NUL, BOM and ordinary characters."""
    alphabet = st.sampled_from([chr(code) for code in range(32)] + list(_BIDI) + ["a", "\x7f"])
    return st.text(alphabet, max_size=40)


def any_text() -> st.SearchStrategy[str]:
    """Draw any text, surrogates included."""
    return st.text(st.characters(codec=None, exclude_categories=()), max_size=60)


def almost_valid_schema_uris() -> st.SearchStrategy[str]:
    """Draw Iglu URIs one small edit away from valid (or valid and unknown)."""
    base = LINK_CLICK

    @st.composite
    def edited(draw: st.DrawFn) -> str:
        at = draw(st.integers(0, len(base)))
        edit = draw(st.sampled_from(["drop", "insert", "replace"]))
        char = draw(st.sampled_from(list(" /-.:_0aZ\t\x00\u202e") + ["é"]))
        if edit == "drop":
            return base[:at] + base[at + 1 :]
        if edit == "insert":
            return base[:at] + char + base[at:]
        return base[:at] + char + base[at + 1 :]

    fixed = [base, UNKNOWN, base.upper(), base + "-0", base.replace("1-0-1", "1-0-01")]
    fixed += [base.replace("1-0-1", "99999999999999999999-0-0"), base.replace("iglu:", "")]
    return st.sampled_from(fixed) | edited()


def _uri_json(uri: str) -> str:
    return uri.replace("\\", "\\\\").replace('"', '\\"')


@st.composite
def entity_texts(draw: st.DrawFn) -> str:
    """Draw an ``unstruct_event`` field: nested data, nasty numbers, odd URIs, dup keys."""
    kind = draw(st.sampled_from(["nested", "number", "uri", "duplicate", "text", "raw"]))
    if kind == "nested":
        return unstruct_text(LINK_CLICK, draw(nested_json()))
    if kind == "number":
        return unstruct_text(LINK_CLICK, f'{{"targetUrl":"a","n":{draw(nasty_numbers())}}}')
    if kind == "uri":
        return unstruct_text(_uri_json(draw(almost_valid_schema_uris())), '{"targetUrl":"a"}')
    if kind == "duplicate":
        count = draw(st.integers(2, 50))
        pairs = ",".join(f'"targetUrl":"{i}"' for i in range(count))
        return unstruct_text(LINK_CLICK, "{" + pairs + "}")
    if kind == "text":
        return draw(any_text())
    text = unstruct_text(LINK_CLICK, '{"targetUrl":"a"}')
    at = draw(st.integers(0, len(text)))
    return text[:at] + draw(st.sampled_from(["", "}", "]", '"', "\\", ",", "\x00"])) + text[at:]


@st.composite
def one_field_replaced(draw: st.DrawFn) -> bytes:
    """Draw the good event with one field's text replaced by a hostile one."""
    fields = good_fields()
    name = draw(st.sampled_from(_NAMES))
    if name in ("contexts", "derived_contexts", "unstruct_event"):
        value = draw(entity_texts())
    else:
        value = draw(
            nasty_numbers() | control_and_bidi_text() | any_text() | almost_valid_schema_uris()
        )
    fields[name] = value.replace("\t", " ")
    return "\t".join(fields.values()).encode("utf-8", "surrogatepass")


@st.composite
def field_counts(draw: st.DrawFn) -> bytes:
    """Draw a line of 0-300 fields taken from the good event (131 is the right count)."""
    count = draw(st.integers(0, 300))
    texts = list(good_fields().values())
    return "\t".join((texts * 3)[:count]).encode()


@st.composite
def invalid_utf8(draw: st.DrawFn) -> bytes:
    """Draw the good event with bytes that are not UTF-8 spliced in somewhere."""
    line = "\t".join(good_fields().values()).encode()
    at = draw(st.integers(0, len(line)))
    junk = draw(
        st.sampled_from([b"\xff", b"\xc3(", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80"])
        | st.binary(min_size=1, max_size=8)
    )
    return line[:at] + junk + line[at:]


def huge_lines() -> st.SearchStrategy[bytes]:
    """Draw lines of 1-10 MB (junk, or the good event with a huge field)."""
    sizes = st.sampled_from([1 << 20, 10 << 20])

    def build(size: int, junk: bool) -> bytes:
        if junk:
            return b"y" * size
        fields = good_fields()
        fields["page_title"] = "t" * size
        return "\t".join(fields.values()).encode()

    return st.builds(build, sizes, st.booleans())


def named_hostile_lines() -> st.SearchStrategy[bytes]:
    """Draw one of the named hostile lines."""
    return st.sampled_from([line.data for line in hostile_lines()])


def hostile_messages(huge: bool = False) -> st.SearchStrategy[bytes]:
    """Draw any hostile message (huge ones only when ``huge``: they cost 10 MB each)."""
    kinds = [one_field_replaced(), field_counts(), invalid_utf8(), named_hostile_lines()]
    kinds.append(st.binary(max_size=300))
    if huge:
        kinds.append(huge_lines())
    return st.one_of(kinds)
