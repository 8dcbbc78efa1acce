"""Specification of the loader's command line as Snowplow writes it: run by default, Beam options ignored."""

from __future__ import annotations

import pytest
from plowline_loader.cli import main

MISSING = "/nonexistent/bigquery.hocon"


def test_snowplows_arguments_run_without_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """``--config … --resolver … --runner=…`` reaches ``run``, which reports the config by its flag."""
    code = main(
        ["--config", MISSING, "--resolver", MISSING, "--runner=DataflowRunner", "--streaming"]
    )

    expected = (2, True)
    err = capsys.readouterr().err
    assert expected == (code, f"plowline-loader run: --config {MISSING}: no such file" in err), err


def test_a_stray_word_is_refused_not_ignored() -> None:
    """A word that is no option's value is a usage error: it is a mistake, not a Beam option."""
    with pytest.raises(SystemExit) as caught:
        main(["--config", MISSING, "--resolver", MISSING, "stray"])

    usage_error = 2
    assert usage_error == caught.value.code


def test_unknown_options_are_refused_outside_run() -> None:
    """Only ``run`` sets unknown options aside; ``backfill`` still refuses them."""
    with pytest.raises(SystemExit) as caught:
        main(["backfill", "--config", MISSING, "--resolver", MISSING, "--runner=x", "file.tsv"])

    usage_error = 2
    assert usage_error == caught.value.code
