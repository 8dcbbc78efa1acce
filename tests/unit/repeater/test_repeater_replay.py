"""Replaying dead-end objects into fakes: outcomes, results left behind, crash safety."""

from __future__ import annotations

import io
import re

import orjson
import pytest
from plowline_core.badrows import Processor, RecoveryErrorRow
from plowline_core.errors import TransientError
from plowline_core.ports import InsertFailure, InsertReason, Row
from plowline_core.testing.sinks import InMemoryBlobStore, InMemoryPublisher, InMemoryRowSink
from plowline_repeater.cli import main
from plowline_repeater.progress import ProgressBar
from plowline_repeater.replay import Replayer, ReplayReport, TableDestination, TopicDestination
from plowline_repeater.replay_plan import TimeWindow, select_objects
from plowline_repeater.replay_report import render

PROCESSOR = Processor("plowline-repeater", "0.1.0")
NAME = "2026/11/22/05/20261122T051307.250Z-4f1c.ndjson"
ETL = "2026-11-22T05:00:00+00:00"


def _row(event_id: str, **extra: object) -> dict[str, object]:
    return {"event_id": event_id, "etl_tstamp": ETL, **extra}


def _line(row: dict[str, object], message: str = "no such field: x.") -> bytes:
    error = {"message": message, "location": None, "reason": "unknown_field"}
    return RecoveryErrorRow(error, orjson.dumps(row).decode()).to_json(PROCESSOR)


def _refuse_bad(row: Row) -> InsertFailure | None:
    if row.data.get("bad"):
        return InsertFailure(row, InsertReason.INVALID, "Cannot convert value", "bad")
    return None


def _replay(
    store: InMemoryBlobStore, sink: InMemoryRowSink, matcher: str | None = None
) -> ReplayReport:
    replayer = Replayer(store, TableDestination(sink, "p.d.t"), PROCESSOR)
    selection = select_objects(store.list(), TimeWindow())
    return replayer.run(selection, re.compile(matcher) if matcher else None)


def _mixed_store() -> InMemoryBlobStore:
    store = InMemoryBlobStore()
    lines = [_line(_row("e1")), _line(_row("e2", bad=True)), b"junk", _line(_row("e3"))]
    store.put(NAME, b"\n".join(lines) + b"\n")
    return store


def test_rows_are_inserted_with_their_event_id() -> None:
    """Recoverable rows go to the table with insertId = event_id; refused ones do not land."""
    sink = InMemoryRowSink(reject=_refuse_bad)
    _replay(_mixed_store(), sink)
    expected = ["e1", "e3"]
    assert expected == sink.insert_ids


def test_results_are_filed_and_the_source_moved() -> None:
    """Refused rows go to failed/, junk to unrecoverable/, the source to replayed/."""
    store = _mixed_store()
    source = store.objects[NAME]
    _replay(store, InMemoryRowSink(reject=_refuse_bad))
    expected = {
        "replayed/" + NAME: source,
        "unrecoverable/" + NAME: b"junk\n",
        "failed/" + NAME: store.objects.get("failed/" + NAME, b"missing"),
    }
    failed = orjson.loads(store.objects["failed/" + NAME])
    assert (expected, "e2", "invalid") == (
        store.objects,
        orjson.loads(failed["data"]["payload"])["event_id"],
        failed["data"]["failure"]["error"]["reason"],
    )


def test_the_report_counts_in_recovery_words() -> None:
    """recovered / failed / unrecoverable are counted, and the exit code says not all went in."""
    report = _replay(_mixed_store(), InMemoryRowSink(reject=_refuse_bad))
    expected = (2, 1, 1, 1)
    assert expected == (report.recovered, report.failed, report.unrecoverable, report.exit_code)


def test_a_second_run_has_nothing_to_do() -> None:
    """After a run nothing is an input any more, so nothing is inserted twice."""
    store, sink = _mixed_store(), InMemoryRowSink(reject=_refuse_bad)
    _replay(store, sink)
    again = _replay(store, sink)
    expected = ((), ["e1", "e3"], 0)
    assert expected == (again.selection.chosen, sink.insert_ids, again.exit_code)


def test_a_clean_object_exits_zero() -> None:
    """When every row is recovered the exit code is 0."""
    store = InMemoryBlobStore()
    store.put(NAME, _line(_row("e1")) + b"\n")
    expected = 0
    assert expected == _replay(store, InMemoryRowSink()).exit_code


def test_an_unavailable_table_leaves_the_object_in_place() -> None:
    """A dependency error stops the run before the move; the object stays an input."""
    store, sink = _mixed_store(), InMemoryRowSink()
    sink.fail_with = TransientError("BigQuery down")
    report = _replay(store, sink)
    expected = (NAME, "BigQuery down", 1, True, False)
    actual = (
        report.stopped_at,
        report.error,
        report.exit_code,
        NAME in store.objects,
        "replayed/" + NAME in store.objects,
    )
    assert expected == actual


def test_a_rerun_after_a_crash_reuses_results_already_written() -> None:
    """Results a crashed run wrote are found by content, not written a second time."""
    store = _mixed_store()
    store.put("unrecoverable/" + NAME, b"junk\n")  # written before the crash
    _replay(store, InMemoryRowSink(reject=_refuse_bad))
    names = sorted(name for name in store.objects if name.startswith("unrecoverable/"))
    expected = ["unrecoverable/" + NAME]
    assert expected == names


def test_a_result_name_taken_by_other_content_is_numbered() -> None:
    """An earlier, different result is kept and the new one gets the next name."""
    store = _mixed_store()
    store.put("failed/" + NAME, b"older\n")
    _replay(store, InMemoryRowSink(reject=_refuse_bad))
    expected = (b"older\n", True)
    stem = "failed/" + NAME.removesuffix(".ndjson")
    actual = (store.objects["failed/" + NAME], f"{stem}.2.ndjson" in store.objects)
    assert expected == actual


def test_rows_left_out_by_error_matches_stay_an_input() -> None:
    """Unmatched rows go to <stem>.rest.ndjson, which a later run without the filter replays."""
    store, sink = _mixed_store(), InMemoryRowSink(reject=_refuse_bad)
    _replay(store, sink, matcher="Cannot convert")
    _replay(store, sink)
    expected = ["e1", "e3"]
    assert expected == sink.insert_ids


def test_an_object_with_only_unmatched_rows_is_untouched() -> None:
    """No row matching and nothing unrecoverable: the object is not moved."""
    store = InMemoryBlobStore()
    store.put(NAME, _line(_row("e1")) + b"\n")
    before = dict(store.objects)
    _replay(store, InMemoryRowSink(), matcher="never")
    assert before == store.objects


def test_a_dry_run_changes_nothing() -> None:
    """Without a destination the objects are read and reported, nothing is written."""
    store = _mixed_store()
    before = dict(store.objects)
    report = Replayer(store, None, PROCESSOR).run(select_objects(store.list(), TimeWindow()), None)
    expected = (before, 3, 0)
    assert expected == (store.objects, report.recovered, report.exit_code)


def test_republishing_sends_the_rows_as_failed_inserts() -> None:
    """--to failed-inserts publishes each row exactly as the loader did."""
    store, publisher = _mixed_store(), InMemoryPublisher()
    replayer = Replayer(store, TopicDestination(publisher, "projects/p/topics/t"), PROCESSOR)
    replayer.run(select_objects(store.list(), TimeWindow()), None)
    expected = [_row("e1"), _row("e2", bad=True), _row("e3")]
    assert expected == [orjson.loads(message) for message in publisher.messages]


def test_the_summary_names_the_objects() -> None:
    """The summary lists each object with its counts and where the rest was filed."""
    report = _replay(_mixed_store(), InMemoryRowSink(reject=_refuse_bad))
    text = render(report, "gs://b/p/", "table p.d.t")
    expected = [
        f"  {NAME}  2 recovered, 1 failed, 1 unrecoverable",
        f"                  filed -> failed/{NAME}",
        f"                  filed -> unrecoverable/{NAME}",
    ]
    assert expected == [line for line in text.splitlines() if NAME in line]


def test_the_progress_bar_draws_on_a_terminal_and_wipes_itself() -> None:
    """A terminal sees the bar redrawn in place and wiped at the end."""
    stream = io.StringIO()
    bar = ProgressBar(2, stream, "replaying", enabled=True, clock=lambda: 0.0, width=4)
    bar.advance()
    bar.advance()
    bar.close()
    last = "replaying [####] 2/2 objects"
    expected = f"\rreplaying [##--] 1/2 objects\r{last}\r" + " " * len(last) + "\r"
    assert expected == stream.getvalue()


def test_the_progress_bar_is_silent_off_a_terminal() -> None:
    """A pipe or a file gets no bar at all."""
    stream = io.StringIO()
    bar = ProgressBar(2, stream, "replaying")
    bar.advance()
    bar.close()
    expected = ""
    assert expected == stream.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["replay", "s3://b/p"], id="not-gs"),
        pytest.param(["replay", "gs://b/p", "--since", "yesterday"], id="bad-time"),
        pytest.param(["replay", "gs://b/p", "--error-matches", "("], id="bad-regex"),
        pytest.param(["replay", "gs://b/p", "--to", "nowhere"], id="bad-target"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Arguments that cannot be used end with exit code 2 before anything is read."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    expected = 2
    assert expected == exited.value.code


def test_until_before_since_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """An empty time window is a usage error."""
    argv = ["replay", "gs://b/p", "--since", "2026-11-22", "--until", "2026-11-22"]
    expected = 2
    assert expected == main(argv)


def test_a_run_without_config_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """A real run needs --config (the table or topic), checked before any client is built."""
    code = main(["replay", "gs://b/p"])
    expected = (2, True)
    assert expected == (code, "--config FILE is needed" in capsys.readouterr().err)
