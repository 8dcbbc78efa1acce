"""Specification: every flag, subcommand and variable a service accepted on 2026-11-27 stays accepted.

The sets below were read from the parsers and settings as they were before the chassis
(issue: one runtime chassis); a renamed flag stays as an alias, so each command's accepted
set may grow but never lose a member. Subcommands are named by their path under the
program ("" is the top level).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import pytest
from plowline_cloud.service_settings import EmulatorEndpoints
from plowline_deadletter.cli import build_parser as deadletter_parser
from plowline_deadletter.settings import DeadLetterSettings
from plowline_loader.cli import build_parser as loader_parser
from plowline_loader.settings import LoaderSettings
from plowline_mutator.cli import build_parser as mutator_parser
from plowline_mutator.settings import MutatorSettings
from plowline_repeater.cli import build_parser as repeater_parser
from plowline_repeater.settings import RepeaterSettings
from pydantic import AliasChoices
from pydantic_settings import BaseSettings

_FLAGS_ACCEPTED: dict[str, dict[str, str]] = {
    "plowline-deadletter": {
        "": "",
        "run": "--badRowsSub --bucket --config --dedupLookback --gzip "
        "--iglu-config --logLevel --maxRows --port --resolver "
        "--stallTimeout --window",
    },
    "plowline-loader": {
        "": "--version",
        "backfill": "--column-mode --config --iglu-config --iglu-not-found --master --resolver",
        "class-archive": "",
        "run": "--checkpoint --class-archive --column-mode --config "
        "--exit-on-missing-iglu-schema --failed-inserts-topic "
        "--grace-period --iglu-config --iglu-not-found --ledger-table "
        "--master --max-bytes --max-bytes-in-batch "
        "--max-bytes-single-payload --max-messages --missing-schema-bound "
        "--partitions --port --resolver --staging-bucket --stall-timeout --task-seconds "
        "--too-many-columns-delay --trigger-interval --types-topic "
        "--webhook-endpoint --webhook-heartbeat --webhook-tags",
        "transform": "--bad --column-mode --config --good --iglu-config "
        "--iglu-not-found --resolver",
    },
    "plowline-mutator": {
        "": "",
        "add-column": "--column-mode --config --iglu-config --iglu-not-found "
        "--resolver --schema --shred-property --shredProperty "
        "--types-subscription",
        "create": "--clusterBy --config --iglu-config --partitionColumn "
        "--partitioningType --requirePartitionFilter --resolver "
        "--types-subscription",
        "listen": "--column-mode --config --iglu-config --iglu-not-found "
        "--resolver --types-subscription --verbose",
        "preview": "--column-mode --config --iglu-config --iglu-not-found "
        "--resolver --shred-property",
        "serve": "--column-mode --config --host --iglu-config --iglu-not-found "
        "--insecure-no-auth --max-body-bytes --no-listen "
        "--open-read-access --port --resolver --stall-timeout "
        "--token-file --types-subscription --verbose",
    },
    "plowline-repeater": {
        "": "",
        "replay": "--config --dry-run --error-matches --iglu-config "
        "--ledger-table --resolver --since --to --until",
        "run": "--backoffPeriod --bufferSize --config --deadEndBucket "
        "--desperatesBufferSize --desperatesWindow --failedInsertsSub "
        "--iglu-config --maxOutstanding --port --resolver --stallTimeout "
        "--timeout --verbose --window",
    },
}
_ENVIRONMENT_ACCEPTED: dict[str, str] = {
    "DeadLetterSettings": "PLOWLINE_DEADLETTER_BAD_ROWS_SUB PLOWLINE_DEADLETTER_BUCKET "
    "PLOWLINE_DEADLETTER_CONFIG PLOWLINE_DEADLETTER_DEDUP_LOOKBACK "
    "PLOWLINE_DEADLETTER_GZIP PLOWLINE_DEADLETTER_LOG_JSON "
    "PLOWLINE_DEADLETTER_LOG_LEVEL PLOWLINE_DEADLETTER_MAX_OUTSTANDING "
    "PLOWLINE_DEADLETTER_MAX_ROWS PLOWLINE_DEADLETTER_PORT "
    "PLOWLINE_DEADLETTER_STALL_TIMEOUT PLOWLINE_DEADLETTER_WINDOW "
    "PUBSUB_EMULATOR_HOST STORAGE_EMULATOR_HOST",
    "EmulatorSettings": "BIGQUERY_EMULATOR_GRPC_HOST BIGQUERY_EMULATOR_HOST PUBSUB_EMULATOR_HOST "
    "STORAGE_EMULATOR_HOST",
    "LoaderSettings": "BIGQUERY_EMULATOR_GRPC_HOST BIGQUERY_EMULATOR_HOST "
    "PLOWLINE_LOADER_ACK_DEADLINE PLOWLINE_LOADER_BACKOFF_MAX "
    "PLOWLINE_LOADER_CHECKPOINT PLOWLINE_LOADER_CLASS_ARCHIVE "
    "PLOWLINE_LOADER_COLUMN_MODE PLOWLINE_LOADER_CONFIG "
    "PLOWLINE_LOADER_EXIT_ON_MISSING_IGLU_SCHEMA "
    "PLOWLINE_LOADER_FAILED_INSERTS_TOPIC PLOWLINE_LOADER_GRACE_PERIOD "
    "PLOWLINE_LOADER_IGLU_CONFIG PLOWLINE_LOADER_IGLU_NOT_FOUND "
    "PLOWLINE_LOADER_INSERT_BATCH_ROWS PLOWLINE_LOADER_LEASE_INTERVAL "
    "PLOWLINE_LOADER_LEDGER_TABLE PLOWLINE_LOADER_LOG_JSON "
    "PLOWLINE_LOADER_LOG_LEVEL PLOWLINE_LOADER_MASTER "
    "PLOWLINE_LOADER_MAX_BAD_ROW_BYTES PLOWLINE_LOADER_MAX_BYTES "
    "PLOWLINE_LOADER_MAX_BYTES_IN_BATCH "
    "PLOWLINE_LOADER_MAX_BYTES_SINGLE_PAYLOAD PLOWLINE_LOADER_MAX_MESSAGES "
    "PLOWLINE_LOADER_MISSING_SCHEMA_BOUND PLOWLINE_LOADER_PARTITIONS "
    "PLOWLINE_LOADER_PORT PLOWLINE_LOADER_PULL_TIMEOUT PLOWLINE_LOADER_RESOLVER "
    "PLOWLINE_LOADER_SCHEMA_REFRESH PLOWLINE_LOADER_SPARK_UI "
    "PLOWLINE_LOADER_STAGING_BUCKET PLOWLINE_LOADER_STALL_TIMEOUT "
    "PLOWLINE_LOADER_TASK_SECONDS "
    "PLOWLINE_LOADER_TOO_MANY_COLUMNS_DELAY PLOWLINE_LOADER_TRIGGER_INTERVAL "
    "PLOWLINE_LOADER_TYPES_TOPIC PLOWLINE_LOADER_WEBHOOK_ENDPOINT "
    "PLOWLINE_LOADER_WEBHOOK_HEARTBEAT PLOWLINE_LOADER_WEBHOOK_TAGS "
    "PUBSUB_EMULATOR_HOST STORAGE_EMULATOR_HOST",
    "MutatorSettings": "BIGQUERY_EMULATOR_HOST PLOWLINE_MUTATOR_COLUMN_MODE "
    "PLOWLINE_MUTATOR_CONFIG PLOWLINE_MUTATOR_HOST "
    "PLOWLINE_MUTATOR_IGLU_CONFIG PLOWLINE_MUTATOR_IGLU_NOT_FOUND "
    "PLOWLINE_MUTATOR_INSECURE_NO_AUTH PLOWLINE_MUTATOR_LOG_JSON "
    "PLOWLINE_MUTATOR_LOG_LEVEL PLOWLINE_MUTATOR_MAX_BODY_BYTES "
    "PLOWLINE_MUTATOR_OPEN_READ_ACCESS PLOWLINE_MUTATOR_PORT "
    "PLOWLINE_MUTATOR_REFRESH_INTERVAL PLOWLINE_MUTATOR_RESOLVER "
    "PLOWLINE_MUTATOR_RETRY_DELAY PLOWLINE_MUTATOR_STALL_TIMEOUT "
    "PLOWLINE_MUTATOR_TOKEN PLOWLINE_MUTATOR_TYPES_SUBSCRIPTION "
    "PLOWLINE_MUTATOR_VERBOSE PUBSUB_EMULATOR_HOST",
    "RepeaterSettings": "PLOWLINE_REPEATER_BACKOFF_PERIOD PLOWLINE_REPEATER_BUFFER_SIZE "
    "PLOWLINE_REPEATER_CONFIG PLOWLINE_REPEATER_DEAD_END_BUCKET "
    "PLOWLINE_REPEATER_FAILED_INSERTS_SUB PLOWLINE_REPEATER_IGLU_CONFIG "
    "PLOWLINE_REPEATER_LEDGER_TABLE PLOWLINE_REPEATER_LOG_JSON "
    "PLOWLINE_REPEATER_MAX_OUTSTANDING PLOWLINE_REPEATER_PORT "
    "PLOWLINE_REPEATER_RESOLVER PLOWLINE_REPEATER_SCHEMA_REFRESH "
    "PLOWLINE_REPEATER_STALL_TIMEOUT PLOWLINE_REPEATER_VERBOSE "
    "PLOWLINE_REPEATER_WINDOW",
}

_PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {
    "plowline-loader": loader_parser,
    "plowline-mutator": mutator_parser,
    "plowline-repeater": repeater_parser,
    "plowline-deadletter": deadletter_parser,
}
_SETTINGS: dict[str, type[BaseSettings]] = {
    "LoaderSettings": LoaderSettings,
    "MutatorSettings": MutatorSettings,
    "RepeaterSettings": RepeaterSettings,
    "EmulatorSettings": EmulatorEndpoints,  # the repeater's, now every service's
    "DeadLetterSettings": DeadLetterSettings,
}


def _accepted_flags(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """Return every subcommand path of ``parser`` with the option strings it accepts."""
    found: dict[str, set[str]] = {}

    def walk(node: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        options: set[str] = set()
        for action in node._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))
            else:
                options.update(action.option_strings)
        found[" ".join(path)] = options

    walk(parser, ())
    return found


def _accepted_variables(settings: type[BaseSettings]) -> set[str]:
    """Return the environment variables ``settings`` reads (an alias is read without the prefix)."""
    prefix = str(settings.model_config.get("env_prefix", ""))
    names: set[str] = set()
    for name, field in settings.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(choice.upper() for choice in alias.choices if isinstance(choice, str))
        elif isinstance(alias, str):
            names.add(alias.upper())
        else:
            names.add(f"{prefix}{name}".upper())
    return names


@pytest.mark.parametrize(
    ("program", "command"),
    [
        pytest.param(program, command, id=f"{program} {command}".strip())
        for program, commands in _FLAGS_ACCEPTED.items()
        for command in commands
    ],
)
def test_no_flag_accepted_before_is_dropped(program: str, command: str) -> None:
    """A subcommand accepted on 2026-11-27 still exists and still takes every flag it took."""
    accepted = _accepted_flags(_PARSERS[program]())

    expected = set(_FLAGS_ACCEPTED[program][command].split())
    assert set() == expected - accepted.get(command, set())
    assert command in accepted


@pytest.mark.parametrize(
    "settings", [pytest.param(name, id=name) for name in _ENVIRONMENT_ACCEPTED]
)
def test_no_variable_read_before_is_dropped(settings: str) -> None:
    """Each environment variable read on 2026-11-27 is still read by the same service's settings."""
    expected = set(_ENVIRONMENT_ACCEPTED[settings].split())

    assert set() == expected - _accepted_variables(_SETTINGS[settings])
