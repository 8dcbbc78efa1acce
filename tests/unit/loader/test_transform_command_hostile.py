"""``plowline-loader transform`` on hostile files: every line is a row or a bad row, exit 0."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plowline_cloud.chassis import EXIT_OK
from plowline_core.testing.hostile import GOOD, hostile_line, hostile_lines
from plowline_core.testing.hostile_strategies import hostile_messages
from plowline_loader.cli import main
from support.configs import embedded, resolver_config, write_json

DATA = Path(__file__).resolve().parents[2] / "data"


def _resolver_file(folder: Path) -> Path:
    central = embedded(DATA / "iglu-central", name="Iglu Central")
    config = resolver_config(central, cache_size=500, cache_ttl=None, addition=1)
    return write_json(folder / "resolver.json", config)


def _run(folder: Path, data: bytes) -> tuple[int, list[bytes], list[bytes]]:
    """Run the command on a file holding ``data``; return the exit code, good and bad lines."""
    source, good, bad = folder / "in.tsv", folder / "good.jsonl", folder / "bad.jsonl"
    source.write_bytes(data)
    argv = ["transform", "--resolver", str(_resolver_file(folder))]
    code = main([*argv, "--good", str(good), "--bad", str(bad), str(source)])
    return code, good.read_bytes().splitlines(), bad.read_bytes().splitlines()


def _line_count(data: bytes) -> int:
    """Return how many lines a file holds: a last line without its newline counts too."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _codes(bad: list[bytes]) -> Counter[str]:
    """Return the bad rows counted by schema name (each must read back as JSON)."""
    return Counter(orjson.loads(line)["schema"].split("/")[1] for line in bad)


def test_named_hostile_lines_are_all_accounted(tmp_path: Path) -> None:
    """A file of every named hostile line gives each its outcome: rows, bad rows, exit 0."""
    lines = [line for line in hostile_lines() if b"\n" not in line.data]
    code, good, bad = _run(tmp_path, b"\n".join(line.data for line in lines) + b"\n")
    # The command strips a CRLF ending, so the line that keeps its \r in the core is good here.
    expected = Counter(GOOD if line.name == "crlf" else line.expected for line in lines)
    assert (EXIT_OK, expected[GOOD], len(lines) - expected[GOOD]) == (code, len(good), len(bad))
    assert sum(_codes(bad).values()) == len(bad)


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        pytest.param(b"", 0, id="empty-file"),
        pytest.param(hostile_line("good").data, 1, id="no-trailing-newline"),
        pytest.param(hostile_line("good").data + b"\r\n" + b"\r\n", 2, id="crlf-and-blank-line"),
        pytest.param(b"\n\n\n", 3, id="blank-lines"),
        pytest.param(b"\x00\xff\xfe\r\x00", 1, id="binary-junk"),
        pytest.param(hostile_line("huge-junk").data, 1, id="10-mb-no-newline"),
    ],
)
def test_file_shapes_are_all_accounted(tmp_path: Path, data: bytes, lines: int) -> None:
    """Files without a final newline, with CRLF, blank lines or binary junk: every line counted."""
    code, good, bad = _run(tmp_path, data)
    assert (EXIT_OK, lines) == (code, len(good) + len(bad))


@settings(max_examples=25)
@given(
    messages=st.lists(hostile_messages(), max_size=6),
    separator=st.sampled_from([b"\n", b"\r\n"]),
    trailing=st.booleans(),
)
def test_any_hostile_file_is_all_accounted(
    messages: list[bytes], separator: bytes, trailing: bool
) -> None:
    """Any bytes in a file: as many good rows plus bad rows as lines, and exit 0."""
    data = separator.join(messages) + (separator if trailing and messages else b"")
    with tempfile.TemporaryDirectory() as folder:
        code, good, bad = _run(Path(folder), data)
    assert (EXIT_OK, _line_count(data)) == (code, len(good) + len(bad))
