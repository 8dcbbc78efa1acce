"""Specification of reading a Snowplow 2.x config: files and base64, one warning, overrides.

The development check at the end compares with 2.x's own parse results
(``config_expected.json``) when ``PLOWLINE_CONFORMANCE_V2`` names that folder.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from plowline_cloud.config_source import load_document, load_pipeline_config
from plowline_core.v2_config import duration_s, parse_v2
from structlog.testing import capture_logs

DATA = Path(__file__).resolve().parents[2] / "data" / "v2config"
MINIMAL = DATA / "minimal.hocon"
FULL = DATA / "full.hocon"
CONFORMANCE = os.environ.get("PLOWLINE_CONFORMANCE_V2")
# The 2.x keys plowline reads (every other key is named in the warning).
HONOURED = {
    "input.subscription",
    "output.good.project",
    "output.good.dataset",
    "output.good.table",
    "output.bad.topic",
    "batching.maxBytes",
    "batching.maxDelay",
    "batching.writeBatchConcurrency",
    "retries.tooManyColumns.delay",
    "retries.setupErrors.delay",
    "retries.transientErrors.delay",
    "skipSchemas",
    "legacyColumns",
    "legacyColumnMode",
    "exitOnMissingIgluSchema",
    "decompression.maxBytesInBatch",
    "decompression.maxBytesSinglePayload",
    "monitoring.webhook.endpoint",
    "monitoring.webhook.heartbeat",
    "monitoring.healthProbe.port",
}

HONOURED_PREFIXES = ("monitoring.webhook.tags.",)
"""Keys whose every child is honoured (the webhook's tags: any name)."""


def _unprefixed(paths: Iterable[str]) -> set[str]:
    return {path for path in paths if not path.startswith(HONOURED_PREFIXES)}


def test_a_2x_file_and_its_base64_read_the_same() -> None:
    """--config takes the 2.x HOCON file or its base64, as 2.x's container does."""
    encoded = base64.b64encode(FULL.read_bytes()).decode()

    assert load_pipeline_config(FULL) == load_pipeline_config(encoded)


def test_the_full_config_names_its_unused_keys_in_one_warning() -> None:
    """Every key of the reference-shaped file plowline does not use is in exactly one warning."""
    with capture_logs() as logs:
        load_pipeline_config(FULL)

    warnings = [log for log in logs if log["log_level"] == "warning"]
    named = " ".join(warnings[0]["keys"])
    expected = (1, True, True, True)
    assert expected == (
        len(warnings),
        "telemetry.collectorUri" in named,
        "monitoring.sentry.dsn" in named,
        "input.maxMessagesPerPull" in named,
    )


def test_every_key_of_the_full_config_is_honoured_or_named() -> None:
    """No key of the reference-shaped file is dropped silently."""
    document, _ = load_document(FULL, "--config")
    config = parse_v2(document)
    named = {key for entry in config.ignored for key in entry.rsplit(" (", 1)[0].split(", ")}

    assert _unprefixed(_leaves(document)) == named | HONOURED


def test_the_full_config_is_read_as_written() -> None:
    """The reference-shaped file's honoured values are its own, not 2.x's defaults."""
    config = load_pipeline_config(FULL).v2
    assert config is not None

    expected = ("web_events", 4_000_000, 2.0, 3, 120.0, False, 1_048_576, 2_000_000, 9010)
    assert expected == (
        config.table,
        config.max_bytes,
        config.max_delay_s,
        config.write_batch_concurrency,
        config.too_many_columns_delay_s,
        config.exit_on_missing_iglu_schema,
        config.max_bytes_in_batch,
        config.max_bytes_single_payload,
        config.health_port,
    )


def test_a_variable_overrides_a_derived_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """PLOWLINE_V2_TYPES_TOPIC replaces the derived types topic for every service."""
    monkeypatch.setenv("PLOWLINE_V2_TYPES_TOPIC", "projects/p/topics/from-env")

    expected = "projects/p/topics/from-env"
    assert expected == load_pipeline_config(MINIMAL).bigquery.types_topic


def test_a_flag_wins_over_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A service's flag (handed in as an override) wins over PLOWLINE_V2_*."""
    monkeypatch.setenv("PLOWLINE_V2_TYPES_TOPIC", "projects/p/topics/from-env")

    config = load_pipeline_config(MINIMAL, v2_overrides={"types_topic": "projects/p/topics/flag"})

    assert config.bigquery.types_topic == "projects/p/topics/flag"


def test_an_unset_flag_leaves_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """A flag not given (None) does not hide the variable."""
    monkeypatch.setenv("PLOWLINE_V2_DEAD_END_BUCKET", "gs://from-env")

    config = load_pipeline_config(MINIMAL, v2_overrides={"dead_end_bucket": None})

    assert config.dead_end_bucket == "gs://from-env"


def _leaves(node: Any, prefix: str = "") -> list[str]:
    if isinstance(node, dict) and node:
        return [
            leaf
            for key, child in node.items()
            for leaf in _leaves(child, f"{prefix}.{key}" if prefix else key)
        ]
    return [prefix]


def _conformance_cases() -> list[Any]:
    if CONFORMANCE is None:
        return [
            pytest.param(
                None,
                marks=pytest.mark.skip(
                    reason="PLOWLINE_CONFORMANCE_V2 is not set: it names the folder of 2.x's "
                    "test vectors (shared/conformance/v2), which may not be redistributed"
                ),
                id="no-conformance-folder",
            )
        ]
    expected = json.loads((Path(CONFORMANCE) / "config_expected.json").read_text())
    return [pytest.param(case, id=case["id"]) for case in expected["cases"]]


@pytest.mark.parametrize("case", _conformance_cases())
def test_2x_reference_configs_parse_as_2x_parses_them(case: dict[str, Any]) -> None:
    """Development check: every value plowline honours equals 2.x's own parse result."""
    config = load_pipeline_config(Path(str(CONFORMANCE)) / case["file"]).v2
    assert config is not None
    want = case["expected"]

    expected = (
        want["input"]["subscription"],
        want["output"]["good"]["project"],
        want["output"]["good"]["dataset"],
        want["output"]["good"]["table"],
        want["output"]["bad"]["topic"],
        want["batching"]["maxBytes"],
        duration_s(want["batching"]["maxDelay"], "maxDelay"),
        want["batching"]["writeBatchConcurrency"],
        duration_s(want["retries"]["tooManyColumns"]["delay"], "delay"),
        want["skipSchemas"],
        want["legacyColumns"],
        want["legacyColumnMode"],
        want["exitOnMissingIgluSchema"],
        want["decompression"]["maxBytesInBatch"],
        want["decompression"]["maxBytesSinglePayload"],
        want["monitoring"]["healthProbe"]["port"],
    )
    assert expected == (
        config.subscription,
        config.project,
        config.dataset,
        config.table,
        config.bad_topic,
        config.max_bytes,
        config.max_delay_s,
        config.write_batch_concurrency,
        config.too_many_columns_delay_s,
        [str(criterion) for criterion in config.skip_schemas],
        [str(criterion) for criterion in config.legacy_columns],
        config.legacy_column_mode,
        config.exit_on_missing_iglu_schema,
        config.max_bytes_in_batch,
        config.max_bytes_single_payload,
        config.health_port,
    )


@pytest.mark.parametrize("case", _conformance_cases())
def test_every_key_of_2x_reference_configs_is_honoured_or_named(case: dict[str, Any]) -> None:
    """Development check: no key of 2.x's own configs is dropped silently."""
    document, _ = load_document(Path(str(CONFORMANCE)) / case["file"], "--config")
    config = parse_v2(document)
    named = {key for entry in config.ignored for key in entry.rsplit(" (", 1)[0].split(", ")}

    assert set() == _unprefixed(_leaves(document)) - named - HONOURED
