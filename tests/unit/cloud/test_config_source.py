"""Specification of config_source: --config/--resolver as a path or base64 of JSON or HOCON."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from plowline_cloud.config_source import load_document, load_pipeline_config, read_source
from plowline_core.errors import ConfigError
from structlog.testing import capture_logs

EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"

# Snowplow 0.x, as its docs show it: the bigquery_config JSON, base64-encoded on the command
# line (--config=$(base64 -w0 bigquery.json)). This is that string for com-acme's pipeline.
V0_BASE64 = (
    "eyJzY2hlbWEiOiAiaWdsdTpjb20uc25vd3Bsb3dhbmFseXRpY3Muc25vd3Bsb3cuc3RvcmFnZS9iaWdxdWVyeV9j"
    "b25maWcvanNvbnNjaGVtYS8xLTAtMCIsICJkYXRhIjogeyJuYW1lIjogIkFscGhhIEJpZ1F1ZXJ5IHRlc3QiLCAi"
    "aWQiOiAiMzFiMTU1OWQtZDMxOS00MDIzLWFhYWUtOTc2OTgyMzhkODA4IiwgInByb2plY3RJZCI6ICJjb20tYWNt"
    "ZSIsICJkYXRhc2V0SWQiOiAic25vd3Bsb3ciLCAidGFibGVJZCI6ICJldmVudHMiLCAiaW5wdXQiOiAiZW5yaWNo"
    "ZWQtc3ViIiwgInR5cGVzVG9waWMiOiAidHlwZXMtdG9waWMiLCAidHlwZXNTdWJzY3JpcHRpb24iOiAidHlwZXMt"
    "c3ViIiwgImJhZFJvd3MiOiAiYmFkLXRvcGljIiwgImZhaWxlZEluc2VydHMiOiAiZmFpbGVkLWluc2VydHMtdG9w"
    "aWMiLCAibG9hZCI6IHsibW9kZSI6ICJTVFJFQU1JTkdfSU5TRVJUUyIsICJyZXRyeSI6IGZhbHNlfSwgInB1cnBv"
    "c2UiOiAiRU5SSUNIRURfRVZFTlRTIn19"
)
V1_HOCON = """
# a comment, unquoted keys, and substitutions: HOCON, not JSON
projectId = "com-acme"
loader {
  input.subscription = enriched-sub
  output {
    good { datasetId = snowplow, tableId = events }
    bad.topic = bad-topic
    types.topic = types-topic
    failedInserts.topic = failed-inserts-topic
  }
}
mutator { input.subscription = types-sub, output.good = ${loader.output.good} }
repeater {
  input.subscription = failed-inserts-sub
  output { good = ${loader.output.good}, deadLetters.bucket = "gs://dead-letters" }
}
"""


def _b64(text: str, altchars: bytes = b"+/") -> str:
    return base64.b64encode(text.encode(), altchars).decode()


def test_the_0x_base64_example_reads_as_the_docs_config() -> None:
    """Snowplow 0.x's base64 --config names the docs' project, table and input subscription."""
    config = load_pipeline_config(V0_BASE64)

    expected = ("com-acme.snowplow.events", "enriched-sub", "0.x")
    assert expected == (config.bigquery.table_ref, config.bigquery.input, config.layout)


@pytest.mark.parametrize(
    "form",
    [
        pytest.param("file", id="hocon-file"),
        pytest.param("base64", id="hocon-base64"),
        pytest.param("urlsafe-unpadded", id="hocon-urlsafe-base64-without-padding"),
        pytest.param("base64-wrapped", id="hocon-base64-wrapped-at-76"),
    ],
)
def test_a_1x_config_reads_the_same_in_every_form(tmp_path: Path, form: str) -> None:
    """A HOCON file, its base64 (standard, URL-safe, unpadded, wrapped) all give one config."""
    path = tmp_path / "bigquery.hocon"
    path.write_text(V1_HOCON)
    encoded = _b64(V1_HOCON)
    value = {
        "file": str(path),
        "base64": encoded,
        "urlsafe-unpadded": _b64(V1_HOCON, b"-_").rstrip("="),
        "base64-wrapped": base64.encodebytes(V1_HOCON.encode()).decode(),
    }[form]

    assert load_pipeline_config(path) == load_pipeline_config(value)


def test_substitutions_carry_the_loader_table_to_mutator_and_repeater() -> None:
    """${loader.output.good} gives the mutator and repeater the loader's table."""
    config = load_pipeline_config(_b64(V1_HOCON))

    expected = ("com-acme.snowplow.events",) * 3
    assert expected == (
        config.bigquery.table_ref,
        config.mutator.table_ref,
        config.repeater.table_ref,
    )


def test_an_optional_environment_substitution_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """${?NAME} takes an environment variable's value, as HOCON defines it."""
    monkeypatch.setenv("PLOWLINE_TEST_PROJECT", "from-env")
    text = V1_HOCON.replace('projectId = "com-acme"', "projectId = ${?PLOWLINE_TEST_PROJECT}")

    expected = "from-env"
    assert expected == load_pipeline_config(_b64(text)).bigquery.project_id


def test_unused_keys_are_named_in_one_warning(tmp_path: Path) -> None:
    """Every key plowline ignores is listed, by dotted path, in exactly one warning."""
    with capture_logs() as logs:
        load_pipeline_config(EXAMPLES / "config.hocon")

    warnings = [log for log in logs if log["log_level"] == "warning"]
    expected = [
        [
            "loader.consumerSettings.maxQueueSize",
            "loader.consumerSettings.parallelPullCount",
            "loader.sinkSettings.good.bqWriteRequestThreshold",
            "loader.terminationTimeout",
            "monitoring.stdout.period",
            "monitoring.stdout.prefix",
        ]
    ]
    assert expected == [log["keys"] for log in warnings]


def test_a_config_plowline_reads_whole_gives_no_warning() -> None:
    """A 0.x config (every key used) logs no warning."""
    with capture_logs() as logs:
        load_pipeline_config(V0_BASE64)

    expected: list[object] = []
    assert expected == [log for log in logs if log["log_level"] == "warning"]


def test_the_example_hocon_and_json_name_the_same_pipeline() -> None:
    """examples/config.hocon (1.x) and examples/config.json (0.x) give the loader one table and topics."""
    v1 = load_pipeline_config(EXAMPLES / "config.hocon").bigquery
    v0 = load_pipeline_config(EXAMPLES / "config.json").bigquery

    fields = ("project_id", "dataset_id", "table_id", "input", "types_topic", "bad_rows")
    assert [getattr(v0, f) for f in fields] == [getattr(v1, f) for f in fields]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param(
            "/etc/snowplow/bigquery.hocon",
            "--config /etc/snowplow/bigquery.hocon: no such file, and not base64 either",
            id="missing-path",
        ),
        pytest.param(
            "eyJub3QgYmFzZTY0!!", "no such file, and not base64 either", id="bad-base64-char"
        ),
        pytest.param(
            base64.b64encode(b"\xff\xfe\x00binary").decode(),
            "no such file, and not base64 either",
            id="base64-of-binary",
        ),
        pytest.param(
            _b64("{ unclosed"), "--config (base64): neither JSON nor HOCON", id="bad-text"
        ),
        pytest.param(_b64("[1, 2]"), "must be a JSON or HOCON object", id="json-array"),
        pytest.param(
            _b64("loader.input.subscription = x"),
            "--config (base64): projectId, loader.output.good.datasetId, ",
            id="incomplete-1x",
        ),
    ],
)
def test_a_bad_value_is_a_config_error_naming_the_flag(value: str, message: str) -> None:
    """Whatever is wrong, the ConfigError starts with --config and says what to fix."""
    with pytest.raises(ConfigError) as caught:
        load_pipeline_config(value)

    assert str(caught.value).startswith("--config"), str(caught.value)
    assert message in str(caught.value)


def test_a_directory_is_not_a_config(tmp_path: Path) -> None:
    """A value naming a directory is refused as not a file, not tried as base64."""
    with pytest.raises(ConfigError) as caught:
        read_source(str(tmp_path), "--resolver")

    assert f"--resolver {tmp_path}: not a file" == str(caught.value)


def test_a_base64_document_resolves_relative_paths_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A base64 value has no file, so relative paths in it start at the working directory."""
    monkeypatch.chdir(tmp_path)

    document, source = load_document(_b64('{"a": 1}'), "--resolver")

    assert ({"a": 1}, tmp_path, "(base64)") == (document, source.base_dir, source.origin)
