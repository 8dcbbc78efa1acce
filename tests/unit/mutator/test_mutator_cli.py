"""Specification of the mutator's command line: every subcommand takes --config and --resolver."""

from __future__ import annotations

import pytest
from plowline_mutator.cli import build_parser


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["create", "--partitionColumn=load_tstamp"], id="create"),
        pytest.param(["listen", "--verbose"], id="listen"),
        pytest.param(
            ["add-column", "--shredProperty=CONTEXTS", "--schema=iglu:a/b/jsonschema/1-0-0"],
            id="add-column",
        ),
        pytest.param(["serve"], id="serve"),
        pytest.param(
            ["preview", "--shred-property=CONTEXTS", "iglu:a/b/jsonschema/1-0-0"], id="preview"
        ),
    ],
)
def test_every_subcommand_takes_config_and_resolver(argv: list[str]) -> None:
    """Snowplow passes both flags to every subcommand; each keeps them as given (path or base64)."""
    args = build_parser().parse_args([*argv, "--config=Y29uZmln", "--resolver=cmVzb2x2ZXI="])

    expected = ("Y29uZmln", "cmVzb2x2ZXI=")
    assert expected == (args.config, args.resolver)
