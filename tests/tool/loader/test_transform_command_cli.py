"""``plowline-loader transform``: enriched TSV in, BigQuery-JSON rows and bad rows out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from plowline_core.testing.tsv import enriched_line
from plowline_loader.cli import main
from support.configs import repository, resolver_config, write_json

DATA = Path(__file__).resolve().parents[2] / "data"
VECTORS = DATA / "conformance" / "vectors"
CONSOLE_SCRIPT = Path(sys.executable).with_name("plowline-loader")


def _resolver_file(tmp_path: Path, connection: dict[str, Any]) -> Path:
    central = repository(connection, name="Iglu Central")
    config = resolver_config(central, cache_size=500, cache_ttl=None, addition=1)
    return write_json(tmp_path / "resolver.json", config)


@pytest.fixture
def resolver(tmp_path: Path) -> Path:
    """A resolver config with Iglu Central as an embedded repository."""
    return _resolver_file(tmp_path, {"embedded": {"path": str(DATA / "iglu-central")}})


def _vector_lines() -> list[str]:
    """The enriched vectors as one-line TSV (their pretty-printed JSON folded onto one line)."""
    return [
        json.loads((VECTORS / f"enriched_00{i}.json").read_text())["tsv"].replace("\n", " ")
        for i in (1, 2, 3, 4)
    ]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_vectors_give_their_rows_and_bad_rows(tmp_path: Path, resolver: Path) -> None:
    """The enriched vectors give their derived v1 rows, and bad rows for the broken ones."""
    source = tmp_path / "in.tsv"
    source.write_text("\n".join(_vector_lines()) + "\n")
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    code = main(
        [
            "transform",
            "--resolver",
            str(resolver),
            "--good",
            str(good),
            "--bad",
            str(bad),
            str(source),
        ]
    )
    expected_rows = [
        json.loads((VECTORS / f"enriched_00{i}.json").read_text())[
            "expected_bigquery_v1_row_DERIVED"
        ]
        for i in (1, 2)
    ]
    bad_schemas = [row["schema"].split("/")[1] for row in _jsonl(bad)]
    assert (0, expected_rows, ["loader_parsing_error", "loader_parsing_error"]) == (
        code,
        _jsonl(good),
        bad_schemas,
    )


def test_summary_counts_lines_good_bad_and_types(
    tmp_path: Path, resolver: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary on stderr counts lines, good rows, bad rows by code and entity types."""
    source = tmp_path / "in.tsv"
    source.write_text("\n".join(_vector_lines()) + "\n")
    main(
        [
            "transform",
            "--resolver",
            str(resolver),
            "--good",
            str(tmp_path / "g"),
            "--bad",
            str(tmp_path / "b"),
            str(source),
        ]
    )
    err = capsys.readouterr().err
    expected = [
        "plowline-loader transform: lines=4 good=2 bad=2",
        "bad by type: parsing.field_number_mismatch=1, parsing.row_decoding=1",
        "entity types seen: 4",
    ]
    assert expected == err.splitlines()[:3]


def test_bad_row_processor_is_the_loader(tmp_path: Path, resolver: Path) -> None:
    """Bad rows name plowline-loader and its installed version as their processor."""
    source = tmp_path / "in.tsv"
    source.write_text("not tsv\n")
    bad = tmp_path / "bad.jsonl"
    main(
        [
            "transform",
            "--resolver",
            str(resolver),
            "--good",
            str(tmp_path / "g"),
            "--bad",
            str(bad),
            str(source),
        ]
    )
    from importlib.metadata import version

    expected = {"artifact": "plowline-loader", "version": version("plowline-loader")}
    assert expected == _jsonl(bad)[0]["data"]["processor"]


def test_registry_unavailable_exits_1_naming_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreachable HTTP registry stops the run with exit code 1 and names the repository."""
    resolver = _resolver_file(tmp_path, {"http": {"uri": "http://127.0.0.1:9/api"}})
    line = enriched_line(contexts=[("iglu:com.acme/ctx/jsonschema/1-0-0", {"a": 1})])
    source = tmp_path / "in.tsv"
    source.write_text(line + "\n")
    code = main(
        [
            "transform",
            "--resolver",
            str(resolver),
            "--good",
            str(tmp_path / "g"),
            "--bad",
            str(tmp_path / "b"),
            str(source),
        ]
    )
    err = capsys.readouterr().err
    assert (code, "Iglu registry unavailable at line 1" in err, "Iglu Central" in err) == (
        1,
        True,
        True,
    )


def test_2x_iglu_config_is_the_resolver(tmp_path: Path, resolver: Path) -> None:
    """Snowplow 2.x's --iglu-config names the resolver as --resolver does."""
    source = tmp_path / "in.tsv"
    source.write_text("")

    assert main(["transform", "--iglu-config", str(resolver), str(source)]) == 0


def test_invalid_resolver_config_exits_2(tmp_path: Path) -> None:
    """A resolver file that is not JSON is a usage error (exit code 2)."""
    resolver = tmp_path / "resolver.json"
    resolver.write_text("{nope")
    source = tmp_path / "in.tsv"
    source.write_text("")
    expected = 2
    assert expected == main(["transform", "--resolver", str(resolver), str(source)])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("Iglu Central=500", "not a status that can mean 'not found'", id="5xx"),
        pytest.param("elsewhere=403", "not HTTP repositories", id="unknown-name"),
    ],
)
def test_a_bad_iglu_not_found_exits_2_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    """A malformed --iglu-not-found, or one naming no HTTP repository, is a usage error."""
    resolver = _resolver_file(tmp_path, {"http": {"uri": "https://127.0.0.1:9/api"}})
    source = tmp_path / "in.tsv"
    source.write_text("")
    code = main(["transform", "--resolver", str(resolver), "--iglu-not-found", value, str(source)])
    expected = (2, True)
    assert expected == (code, message in capsys.readouterr().err)


def test_missing_input_exits_2(tmp_path: Path, resolver: Path) -> None:
    """An input file that does not exist is a usage error (exit code 2)."""
    expected = 2
    assert expected == main(
        ["transform", "--resolver", str(resolver), str(tmp_path / "absent.tsv")]
    )


def test_missing_resolver_flag_exits_2() -> None:
    """Omitting --resolver is an argparse usage error (exit code 2)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["transform"])
    expected = 2
    assert expected == exit_info.value.code


def test_console_script_reads_stdin_and_writes_stdout(tmp_path: Path, resolver: Path) -> None:
    """The installed console script transforms stdin to rows on stdout, bad rows on stderr."""
    lines = [enriched_line(event_id="11111111-2222-4333-8444-555555555555"), "broken"]
    done = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "transform",
            "--resolver",
            str(resolver),
            "--column-mode",
            "major",
            "-",
        ],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    bad = [line for line in done.stderr.splitlines() if line.startswith("{")]
    expected = (0, ["11111111-2222-4333-8444-555555555555"], 1)
    assert expected == (done.returncode, [row["event_id"] for row in rows], len(bad))


def test_line_that_is_not_utf8_is_a_bad_row(tmp_path: Path, resolver: Path) -> None:
    """Bytes that are not UTF-8 give a parsing bad row and the run goes on."""
    source = tmp_path / "in.tsv"
    source.write_bytes(b"\xff\xfe\tbroken\n" + enriched_line().encode() + b"\r\n")
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    code = main(
        [
            "transform",
            "--resolver",
            str(resolver),
            "--good",
            str(good),
            "--bad",
            str(bad),
            str(source),
        ]
    )
    expected = (0, 1, ["loader_parsing_error"])
    assert expected == (
        code,
        len(_jsonl(good)),
        [row["schema"].split("/")[1] for row in _jsonl(bad)],
    )


def test_a_1x_config_given_to_transform_warns_on_stderr_not_among_the_rows(
    tmp_path: Path, resolver: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--config with unused 1.x keys: the one warning goes to stderr, stdout keeps only rows."""
    examples = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"
    source = tmp_path / "in.tsv"
    source.write_text("")

    code = main(
        ["transform", "--config", str(examples / "config.hocon"), "--resolver", str(resolver)]
        + [str(source)]
    )

    out, err = capsys.readouterr()
    expected = (0, "", 1)
    assert expected == (code, out, err.count("loader.consumerSettings.maxQueueSize")), err
