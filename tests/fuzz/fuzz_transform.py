"""Coverage-guided fuzzing (atheris) of the C line decoder and the row builder.

For every input the target checks that:
  * ``decode_valid_line`` (C) answers exactly as ``decode_valid_line_python``, and neither raises;
  * the transform (bytes decoded as UTF-8, ``parse_bytes`` when they are not), in both column
    modes, gives a row or a bad row, never an exception, and its JSON reads back: the input is
    accounted for. Anything else raises, which libFuzzer reports as a crash (exit code != 0,
    the input saved as ``crash-*``).

Seeds: the enriched conformance vectors (``tests/data/conformance/vectors/enriched_*.json``)
and the named hostile lines under 64 KiB (``plowline_core.testing.hostile``), kept in
``tests/fuzz/seeds`` (rewrite them with ``--write-seeds``). CI runs the target for ~60 s
(``tests/fuzz/test_fuzz_transform.py``); run it longer by hand::

    uv run python tests/fuzz/fuzz_transform.py --seconds 3600 --corpus /tmp/corpus

Coverage guidance covers the Python of ``plowline_core``; the C extensions run
uninstrumented (their answers are still checked against the reference on every input).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import atheris
import orjson

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
SEEDS = Path(__file__).resolve().parent / "seeds"
_SEED_LIMIT = 64 * 1024

with atheris.instrument_imports(include=["plowline_core"]):
    from plowline_core.badrows import FailureCode, Processor
    from plowline_core.event.atomic import decode_valid_line, decode_valid_line_python
    from plowline_core.event.model import EnrichedEvent
    from plowline_core.event.parser import parse_bytes
    from plowline_core.iglu.config import EmbeddedConnection, RepositoryRef
    from plowline_core.iglu.key import SchemaKey
    from plowline_core.iglu.resolver import Resolver
    from plowline_core.schema.entity import ColumnMode
    from plowline_core.testing.clock import FixedClock
    from plowline_core.testing.hostile import hostile_lines
    from plowline_core.testing.registry import InMemoryRegistry
    from plowline_core.transform.row import RowBuilder, TransformedRow

PROCESSOR = Processor("plowline-fuzz", "0.1.0")
_CODES = frozenset(str(code) for code in FailureCode)


class Unaccounted(AssertionError):
    """An input that did not end as exactly one row or one bad row that encodes."""


def _builders() -> list[RowBuilder]:
    root = DATA / "iglu-central" / "schemas"
    schemas: dict[SchemaKey, Any] = {}
    for path in root.glob("*/*/*/*"):
        vendor, name, fmt, version = path.relative_to(root).parts
        key = SchemaKey.parse(f"iglu:{vendor}/{name}/{fmt}/{version}")
        schemas[key] = orjson.loads(path.read_bytes())
    registry = InMemoryRegistry("Iglu Central", schemas)
    ref = RepositoryRef(registry.name, 0, (), EmbeddedConnection("iglu-central"))
    clock = FixedClock(datetime(2024, 5, 1, tzinfo=UTC))
    return [RowBuilder(Resolver([(ref, registry)], clock), mode) for mode in ColumnMode]


def _outcome(builder: RowBuilder, data: bytes) -> str:
    try:
        result = builder.transform_line(data.decode("utf-8"))
    except UnicodeDecodeError:
        parsed = parse_bytes(data)
        result = builder.build(parsed) if isinstance(parsed, EnrichedEvent) else parsed
    if isinstance(result, TransformedRow):
        if not isinstance(orjson.loads(result.to_json()), dict):
            raise Unaccounted("a row that is not a JSON object")
        return "good"
    code = str(result.code)
    document = orjson.loads(result.to_json(PROCESSOR))
    if code not in _CODES or document["data"]["processor"] != PROCESSOR.to_dict():
        raise Unaccounted(f"a bad row without a catalogued code: {code}")
    return code


def make_target() -> Any:
    """Return the libFuzzer target checking one input (see the module docstring)."""
    builders = _builders()

    def target(data: bytes) -> None:
        text = data.decode("utf-8", "surrogateescape")
        native, reference = decode_valid_line(text), decode_valid_line_python(text)
        if native != reference:
            raise Unaccounted(f"C decoder {native!r} != reference {reference!r}")
        for builder in builders:
            _outcome(builder, data)

    return target


def seed_lines() -> list[tuple[str, bytes]]:
    """Return the seeds: enriched conformance vectors, then the named hostile lines < 64 KiB."""
    seeds = []
    for path in sorted((DATA / "conformance" / "vectors").glob("enriched_*.json")):
        tsv = json.loads(path.read_text())["tsv"]
        seeds.append((path.stem, tsv.replace("\n", " ").encode()))
    for line in hostile_lines():
        if len(line.data) <= _SEED_LIMIT:
            seeds.append((f"hostile_{line.name}", line.data))
    return seeds


def write_seeds(folder: Path) -> int:
    """Write the seeds to ``folder`` (replacing it); return how many."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    seeds = seed_lines()
    for name, data in seeds:
        (folder / name).write_bytes(data)
    return len(seeds)


def main(argv: list[str]) -> int:
    """Fuzz until the time is up or an input fails its checks (exit code != 0)."""
    parser = argparse.ArgumentParser(
        description="Fuzz the C line decoder and the row builder (atheris/libFuzzer).",
        epilog=(
            "New inputs go to --corpus; tests/fuzz/seeds is read as well. Other arguments "
            "are libFuzzer's (e.g. -runs=N, -jobs=2; -help=1 lists them). A failing input "
            "is saved as crash-<sha1> in the current folder: rerun it with "
            "'python tests/fuzz/fuzz_transform.py crash-<sha1>'."
        ),
    )
    parser.add_argument("--seconds", type=int, default=60, help="stop after this long (60)")
    parser.add_argument("--corpus", type=Path, help="folder for new inputs (default: none kept)")
    parser.add_argument("--write-seeds", action="store_true", help="rewrite the seeds and exit")
    ours, libfuzzer = parser.parse_known_args(argv[1:])
    if ours.write_seeds:
        print(f"wrote {write_seeds(SEEDS)} seeds to {SEEDS}")
        return 0
    folders = [str(ours.corpus)] if ours.corpus else []
    if ours.corpus:
        ours.corpus.mkdir(parents=True, exist_ok=True)
    args = [argv[0], f"-max_total_time={ours.seconds}", "-print_final_stats=1", "-max_len=16384"]
    args += ["-timeout=30", "-rss_limit_mb=4096", *libfuzzer]
    if not any(not arg.startswith("-") for arg in libfuzzer):  # no file or folder given
        args += [*folders, str(SEEDS)]
    atheris.Setup(args, make_target())
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
