"""Specification of the repeater's command line: Snowplow 0.x and 1.x flags, config fallbacks."""

from __future__ import annotations

import pytest
from plowline_cloud.command_line import with_default_command
from plowline_core.errors import ConfigError
from plowline_repeater.cli import build_parser
from plowline_repeater.settings import RepeaterSettings


@pytest.mark.parametrize(
    "flag",
    [
        pytest.param("--timeout=20", id="1.x"),
        pytest.param("--desperatesWindow=20", id="0.x"),
        pytest.param("--window=20", id="plowline"),
    ],
)
def test_every_spelling_of_the_window_sets_it(flag: str) -> None:
    """Snowplow 1.x's --timeout and 0.x's --desperatesWindow both set the dead-end window."""
    parser = build_parser()
    args = parser.parse_args(with_default_command(["--config=c", "--resolver=r", flag], parser))

    expected = (20.0, "run")
    assert expected == (args.window, args.command)


def test_the_flag_bucket_wins_over_the_configs() -> None:
    """--deadEndBucket overrides 1.x's repeater.output.deadLetters.bucket."""
    settings = RepeaterSettings(config="c", resolver="r", dead_end_bucket="gs://flag")

    expected = "gs://flag"
    assert expected == settings.options("gs://config").dead_end_bucket


def test_the_configs_bucket_is_used_without_the_flag() -> None:
    """Without --deadEndBucket, the 1.x config's bucket is the dead end."""
    settings = RepeaterSettings(config="c", resolver="r")

    expected = "gs://config/x"
    assert expected == settings.options(expected).dead_end_bucket


def test_no_bucket_anywhere_says_where_to_put_one() -> None:
    """Neither flag nor config: a ConfigError naming the flag, the 1.x key and the variable."""
    settings = RepeaterSettings(config="c", resolver="r")

    with pytest.raises(ConfigError) as caught:
        settings.options(None)

    expected = ("--deadEndBucket", "repeater.output.deadLetters.bucket", "DEAD_END_BUCKET")
    assert all(part in str(caught.value) for part in expected), str(caught.value)
