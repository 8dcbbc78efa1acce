"""``plowline dev generate``: realistic lines the loader's transform turns into rows or bad rows."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import plowline_devstack
import pytest
from plowline_cloud.iglu.resolver import load_resolver
from plowline_core.badrows import IgluErrorRow, ParsingErrorRow
from plowline_core.event.fields import FIELD_COUNT
from plowline_core.testing.clock import FixedClock
from plowline_core.transform.row import RowBuilder, TransformedRow
from plowline_devstack.cli import main
from plowline_devstack.demo.generate import GeneratedLine, generate
from plowline_devstack.demo.malformed import MALFORMED_KINDS

START = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
EXAMPLES = Path(plowline_devstack.__file__).parent / "examples"
COUNT = 4000
_STAMPS = ("collector_tstamp", "etl_tstamp", "derived_tstamp")


@pytest.fixture(scope="module")
def lines() -> list[GeneratedLine]:
    """Four thousand lines from one seed, 5% malformed."""
    return list(generate(COUNT, start=START, seed=7))


@pytest.fixture(scope="module")
def outcomes(lines: list[GeneratedLine]) -> list[object]:
    """Each line transformed by the loader's RowBuilder against the example registry."""
    resolver = load_resolver(EXAMPLES / "resolver.json", FixedClock(START))
    builder = RowBuilder(resolver)
    return [builder.transform_line(generated.line) for generated in lines]


def test_generate_good_lines_become_rows(
    lines: list[GeneratedLine], outcomes: list[object]
) -> None:
    """Every good line becomes a table row carrying its event id."""
    expected = [(g.event_id, True) for g in lines if g.good]
    actual = [
        (g.event_id, isinstance(o, TransformedRow) and o.event_id == g.event_id)
        for g, o in zip(lines, outcomes, strict=True)
        if g.good
    ]
    assert expected == actual


def test_generate_malformed_lines_become_bad_rows(
    lines: list[GeneratedLine], outcomes: list[object]
) -> None:
    """Every malformed line becomes a bad row of the class its kind calls for."""
    expected_class: dict[str, type] = dict.fromkeys(MALFORMED_KINDS, ParsingErrorRow)
    expected_class["unknown_schema"] = IgluErrorRow
    expected = [(g.kind, expected_class[g.kind].__name__) for g in lines if not g.good]
    actual = [
        (g.kind, type(o).__name__) for g, o in zip(lines, outcomes, strict=True) if not g.good
    ]
    assert expected == actual


def test_generate_rows_cover_every_entity_type(outcomes: list[object]) -> None:
    """The good rows need web_page, ua_parser_context, both link_clicks and the checkout."""
    found = {
        (entity.shred_property.name, entity.schema.to_uri())
        for o in outcomes
        if isinstance(o, TransformedRow)
        for entity in o.types
    }
    snowplow = "iglu:com.snowplowanalytics.snowplow"
    expected = {
        ("CONTEXTS", f"{snowplow}/web_page/jsonschema/1-0-0"),
        ("DERIVED_CONTEXTS", f"{snowplow}/ua_parser_context/jsonschema/1-0-0"),
        ("UNSTRUCT_EVENT", f"{snowplow}/link_click/jsonschema/1-0-0"),
        ("UNSTRUCT_EVENT", f"{snowplow}/link_click/jsonschema/1-0-1"),
        ("UNSTRUCT_EVENT", "iglu:com.acme/checkout_started/jsonschema/1-0-0"),
    }
    assert expected == found


def test_generate_malformed_share_is_exact(lines: list[GeneratedLine]) -> None:
    """round(count * 0.05) lines are malformed, spread over every malformed kind."""
    kinds = Counter(g.kind for g in lines if not g.good)
    expected = (round(COUNT * 0.05), set(MALFORMED_KINDS))
    assert expected == (sum(kinds.values()), set(kinds))


def test_generate_event_mix_holds_every_event(lines: list[GeneratedLine]) -> None:
    """Page views, link clicks and checkouts all appear among the good lines."""
    expected = {"page_view", "link_click", "checkout_started"}
    assert expected == {g.kind for g in lines if g.good}


def test_generate_event_ids_are_unique_and_in_their_line(lines: list[GeneratedLine]) -> None:
    """Every line carries its own event id, and no two lines share one."""
    expected = (len(lines), True)
    actual = (len({g.event_id for g in lines}), all(g.event_id in g.line for g in lines))
    assert expected == actual


def test_generate_good_lines_have_131_fields(lines: list[GeneratedLine]) -> None:
    """Good lines are tab-separated with exactly the enriched field count."""
    expected = {FIELD_COUNT}
    assert expected == {len(g.line.split("\t")) for g in lines if g.good}


def test_generate_timestamps_are_ordered(outcomes: list[object]) -> None:
    """Collector time precedes ETL time, and derived time never follows collector time."""
    rows = [
        {k: datetime.fromisoformat(v) for k, v in o.data.items() if k in _STAMPS}
        for o in outcomes
        if isinstance(o, TransformedRow)
    ]
    expected = (True, True)
    actual = (
        all(r["collector_tstamp"] < r["etl_tstamp"] for r in rows),
        all(r["derived_tstamp"] <= r["collector_tstamp"] for r in rows),
    )
    assert expected == actual


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        pytest.param(1, 1, True, id="same-seed-same-lines"),
        pytest.param(1, 2, False, id="other-seed-other-lines"),
    ],
)
def test_generate_is_deterministic_by_seed(first: int, second: int, same: bool) -> None:
    """The same seed and start give the same lines; another seed gives others."""
    one = [g.line for g in generate(300, start=START, seed=first)]
    two = [g.line for g in generate(300, start=START, seed=second)]
    assert same == (one == two)


def test_generate_rejects_a_fraction_above_one() -> None:
    """A bad fraction outside [0, 1] is refused."""
    with pytest.raises(ValueError, match="bad_fraction"):
        list(generate(10, start=START, bad_fraction=1.5))


def test_generate_command_writes_a_file(tmp_path: Path) -> None:
    """``plowline dev generate --to FILE`` writes the lines of the same seed and start."""
    out = tmp_path / "events.tsv"
    argv = ["dev", "generate", "--count", "50", "--seed", "3", "--start", START.isoformat()]
    code = main([*argv, "--to", str(out)])
    expected = (0, [g.line for g in generate(50, start=START, seed=3, rate=200.0)])
    assert expected == (code, out.read_text().splitlines())
