"""``plowline-loader transform`` writes, byte for byte, each input line's row or bad row.

The reference below is the command's contract written the plain way: split the input on
``\\n``, drop one ``\\r`` before it, transform each line (the bytes of a line that is not
UTF-8 go to the parser as they are), one JSON object and ``\\n`` per line. The command writes
chunks of lines at once; whatever the chunk size, its output must be the reference's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from plowline_cloud.clock import SystemClock
from plowline_cloud.iglu import load_resolver
from plowline_core.badrows import Processor
from plowline_core.event.model import EnrichedEvent
from plowline_core.event.parser import parse_bytes
from plowline_core.schema.entity import ColumnMode
from plowline_core.testing.tsv import enriched_line, with_entities
from plowline_core.transform.row import RowBuilder, TransformedRow
from plowline_loader import transform_command
from plowline_loader.cli import loader_version, main
from support.configs import embedded, resolver_config, write_json

DATA = Path(__file__).resolve().parents[2] / "data"
WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
# The one field that differs between two runs: when the resolver last asked a registry.
_LOOKUP_TIME = re.compile(rb'"lastAttempt":"[^"]*"')


def _input(not_utf8: bool) -> bytes:
    """Lines of every kind: good, bad, with entities, CRLF, empty, multibyte, no end, and
    (``not_utf8``) one that is not UTF-8."""
    lines = [
        enriched_line(app_id="caf\u00e9-\U0001f600").encode(),
        with_entities(contexts=[(WEB_PAGE, {"id": "p-1"})]).encode() + b"\r",
        with_entities(contexts=[(WEB_PAGE, {"id": 7})]).encode(),  # wrong type: a bad row
        with_entities(contexts=[("iglu:com.acme/absent/jsonschema/1-0-0", {})]).encode(),
        b"",
        b"not\ttsv\r\r",
        *([b"\xff\xfe\tnot utf-8"] if not_utf8 else []),
        enriched_line(app_id="\u00e9" * 300).encode(),
    ]
    return b"\n".join(lines) + b"\n" + enriched_line(app_id="last").encode()


def _reference(data: bytes, resolver: Path) -> tuple[bytes, bytes]:
    builder = RowBuilder(load_resolver(str(resolver), SystemClock()), ColumnMode.FULL)
    processor = Processor(transform_command.ARTIFACT, loader_version())
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    good, bad = b"", b""
    for piece in pieces:
        raw = piece.removesuffix(b"\r")
        try:
            result = builder.transform_line(raw.decode("utf-8"))
        except UnicodeDecodeError:
            parsed = parse_bytes(raw)
            result = builder.build(parsed) if isinstance(parsed, EnrichedEvent) else parsed
        if isinstance(result, TransformedRow):
            good += result.to_json() + b"\n"
        else:
            bad += result.to_json(processor) + b"\n"
    return good, bad


@pytest.mark.parametrize(
    "chunk_lines",
    [
        pytest.param(1, id="1-line-chunks"),
        pytest.param(3, id="3-line-chunks"),
        pytest.param(transform_command._CHUNK_LINES, id="default-chunks"),
    ],
)
@pytest.mark.parametrize(
    "not_utf8", [pytest.param(False, id="utf-8"), pytest.param(True, id="a-line-not-utf-8")]
)
def test_output_is_byte_for_byte_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk_lines: int, not_utf8: bool
) -> None:
    """Rows and bad rows are, byte for byte, those of the line-by-line reference."""
    resolver = tmp_path / "resolver.json"
    central = embedded(DATA / "iglu-central", name="Iglu Central")
    write_json(resolver, resolver_config(central, cache_size=500, cache_ttl=None, addition=1))
    source, good, bad = tmp_path / "in.tsv", tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    source.write_bytes(_input(not_utf8))
    monkeypatch.setattr(transform_command, "_CHUNK_LINES", chunk_lines)

    flags = ["--resolver", str(resolver), "--good", str(good), "--bad", str(bad)]
    code = main(["transform", *flags, str(source)])

    expected_good, expected_bad = _reference(source.read_bytes(), resolver)
    actual = (code, good.read_bytes(), _LOOKUP_TIME.sub(b"", bad.read_bytes()))
    assert (0, expected_good, _LOOKUP_TIME.sub(b"", expected_bad)) == actual
