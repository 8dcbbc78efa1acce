"""The mutator takes a 2.x config's skipSchemas and legacyColumns, as the loader does."""

from __future__ import annotations

from pathlib import Path

import pytest
from plowline_core.iglu.key import SchemaKey
from plowline_mutator.bootstrap import load_column_rules

E2E = Path(__file__).resolve().parents[2] / "data" / "v2config" / "e2e.hocon"


def test_a_2x_configs_legacy_and_skipped_schemas_reach_the_mutator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """e2e.hocon's old_note is legacy and ignored_thing skipped for the mutator too."""
    monkeypatch.setenv("PLOWLINE_TEST_V2_PORT", "8000")
    rules = load_column_rules(E2E)
    legacy = SchemaKey.parse("iglu:com.acme/old_note/jsonschema/1-0-0")
    skipped = SchemaKey.parse("iglu:com.acme/ignored_thing/jsonschema/1-0-0")
    assert (rules.legacy(legacy), rules.skips(skipped)) == (True, True)
