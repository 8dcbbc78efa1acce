"""``plowline-mutator preview`` against an embedded registry (the Iglu Central checkout)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from plowline_mutator.cli import main
from support.configs import embedded, resolver_config, write_json

WEB_PAGE = "iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0"
LINK_CLICK = "iglu:com.snowplowanalytics.snowplow/link_click/jsonschema/1-0-1"
MISSING = "iglu:com.acme/nothing/jsonschema/1-0-0"


@pytest.fixture
def resolver_file(tmp_path: Path, iglu_central_dir: Path) -> Path:
    """A resolver config with one embedded repository: Iglu Central."""
    config = resolver_config(
        embedded(iglu_central_dir, name="central"), cache_size=10, cache_ttl=None
    )
    return write_json(tmp_path / "resolver.json", config)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, Any]]]:
    code = main(["preview", *argv])
    return code, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_preview_prints_v1_context_column(
    resolver_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A context schema prints its v1 REPEATED RECORD column and exits 0."""
    code, lines = _run(
        capsys, "--resolver", str(resolver_file), "--shred-property", "CONTEXTS", WEB_PAGE
    )
    expected = {
        "name": "contexts_com_snowplowanalytics_snowplow_web_page_1_0_0",
        "type": "RECORD",
        "mode": "REPEATED",
        "fields": [{"name": "id", "type": "STRING", "mode": "REQUIRED"}],
    }
    assert (0, [expected]) == (code, lines)


def test_preview_takes_2x_iglu_config(
    resolver_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Snowplow 2.x's --iglu-config names the resolver as --resolver does."""
    code, lines = _run(
        capsys, "--iglu-config", str(resolver_file), "--shred-property", "CONTEXTS", WEB_PAGE
    )

    assert (code, len(lines)) == (0, 1)


def test_preview_major_mode_names_column_by_model(
    resolver_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --column-mode major the column is named by the model only."""
    _, lines = _run(
        capsys,
        "--resolver",
        str(resolver_file),
        "--shred-property",
        "UNSTRUCT_EVENT",
        "--column-mode",
        "major",
        LINK_CLICK,
    )
    assert lines[0]["name"] == "unstruct_event_com_snowplowanalytics_snowplow_link_click_1"


def test_preview_reports_errors_in_order_and_exits_1(
    resolver_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Malformed and unknown schemas print error objects in input order; the exit code is 1."""
    code, lines = _run(
        capsys,
        "--resolver",
        str(resolver_file),
        "--shred-property",
        "CONTEXTS",
        "not-a-uri",
        MISSING,
        WEB_PAGE,
    )
    summary = [(line.get("schema"), "error" in line) for line in lines]
    assert (code, summary) == (1, [("not-a-uri", True), (MISSING, True), (None, False)])


def test_preview_reads_uris_from_stdin(
    resolver_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """'-' reads one URI per line from stdin, skipping blank lines."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{WEB_PAGE}\n\n{LINK_CLICK}\n"))
    _, lines = _run(
        capsys, "--resolver", str(resolver_file), "--shred-property", "derived_contexts", "-"
    )
    expected = [
        "contexts_com_snowplowanalytics_snowplow_web_page_1_0_0",
        "contexts_com_snowplowanalytics_snowplow_link_click_1_0_1",
    ]
    assert expected == [line["name"] for line in lines]


def test_preview_bad_resolver_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A resolver file that cannot be read is a usage error (exit 2)."""
    code = main(
        [
            "preview",
            "--resolver",
            str(tmp_path / "absent.json"),
            "--shred-property",
            "CONTEXTS",
            WEB_PAGE,
        ]
    )
    assert (code, capsys.readouterr().out) == (2, "")


def test_preview_bad_shred_property_exits_2(resolver_file: Path) -> None:
    """An unknown shred property is rejected by argparse with exit status 2."""
    with pytest.raises(SystemExit) as exited:
        main(["preview", "--resolver", str(resolver_file), "--shred-property", "ATOMIC", WEB_PAGE])
    assert exited.value.code == 2


def test_console_script_runs_end_to_end(resolver_file: Path) -> None:
    """The installed plowline-mutator script prints one line per schema and exits 0."""
    script = Path(sys.executable).with_name("plowline-mutator")
    done = subprocess.run(
        [
            str(script),
            "preview",
            "--resolver",
            str(resolver_file),
            "--shred-property",
            "CONTEXTS",
            WEB_PAGE,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (done.returncode, len(done.stdout.splitlines())) == (0, 1)
