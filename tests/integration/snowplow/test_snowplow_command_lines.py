"""Snowplow's documented command lines (0.x and 1.x) start each plowline service on the local stack.

Each test passes the arguments exactly as Snowplow's setup guides write them (base64 configs,
no subcommand, Beam options for the Dataflow loader, 0.x and 1.x repeater flags), changing
only the program name; ports come from the ``PLOWLINE_*_PORT`` variables, since Snowplow's
lines have no port flag.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from plowline_cloud.clients import bigquery_client
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.servers import free_port
from support.configs import embedded, resolver_config
from support.stack import answers

EXAMPLES = Path(__file__).resolve().parents[3] / "libs/devstack/src/plowline_devstack/examples"
# Snowplow 0.x: the self-describing bigquery_config (the local stack's names).
CONFIG = json.loads((EXAMPLES / "config.json").read_text())
# A resolver with the example registry at an absolute path: a base64 resolver has no
# directory of its own, so a relative embedded path would start at the working directory.
RESOLVER = resolver_config(embedded(EXAMPLES / "iglu", name="examples"))
V1_HOCON = """
# Snowplow BigQuery Loader 1.x layout
projectId = "plowline-local"
loader {
  input { type = "PubSub", subscription = "enriched-loader" }
  output {
    good { type = "BigQuery", datasetId = "snowplow", tableId = "TABLE" }
    bad { type = "PubSub", topic = "bad-rows" }
    types { type = "PubSub", topic = "types" }
    failedInserts { type = "PubSub", topic = "failed-inserts" }
  }
  consumerSettings { maxQueueSize = 3000 }
}
mutator {
  input { type = "PubSub", subscription = "types-mutator" }
  output { good = ${loader.output.good} }
}
repeater {
  input { type = "PubSub", subscription = "failed-inserts-repeater" }
  output {
    good = ${loader.output.good}
    deadLetters { type = "Gcs", bucket = "gs://plowline-dead-end/snowplow-1x" }
  }
}
monitoring { stdout { period = "10 min" } }
"""


def _b64(text: str) -> str:
    """``$(cat FILE | base64 -w 0)``, as Snowplow's guides build the arguments."""
    return base64.b64encode(text.encode()).decode()


V0_CONFIG = _b64(json.dumps(CONFIG))
V1_CONFIG = _b64(V1_HOCON.replace("TABLE", "events"))
RESOLVER_B64 = _b64(json.dumps(RESOLVER))


@pytest.fixture
def port(monkeypatch: pytest.MonkeyPatch) -> int:
    """A free port, given to every service through its ``PLOWLINE_*_PORT`` variable."""
    chosen = free_port()
    for service in ("LOADER", "REPEATER", "DEADLETTER"):
        monkeypatch.setenv(f"PLOWLINE_{service}_PORT", str(chosen))
    return chosen


@pytest.fixture
def fresh_table(local_stack: LocalStack) -> Iterator[str]:
    """The name of a table that does not exist yet in the stack's dataset (dropped after)."""
    name = f"created_{uuid.uuid4().hex[:8]}"
    yield name
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    client.delete_table(f"{local_stack.project}.{local_stack.dataset}.{name}", not_found_ok=True)
    client.close()  # type: ignore[no-untyped-call]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, timeout=120, env=os.environ
    )


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(
            [
                f"--config={V0_CONFIG}",
                f"--resolver={RESOLVER_B64}",
                "--runner=DataflowRunner",
                "--project=plowline-local",
                "--region=europe-west2",
                "--gcpTempLocation=gs://plowline-dead-end/tmp",
                '--labels={"team":"data"}',
                "--maxNumWorkers",
                "2",
                "--streaming",
            ],
            id="0.x-dataflow-loader",
        ),
        pytest.param(
            [f"--config={V1_CONFIG}", f"--resolver={RESOLVER_B64}"], id="1.x-streamloader"
        ),
    ],
)
def test_the_loader_starts_from_snowplows_arguments(
    local_stack: LocalStack,
    start_service: Callable[..., Any],
    eventually: Callable[..., Any],
    port: int,
    arguments: list[str],
) -> None:
    """No subcommand, base64 configs, Beam options: the loader becomes ready, naming what it ignored."""
    clean = 0  # the exit code of a command that did its job
    loader = start_service("plowline_loader.cli", *arguments)

    ready = eventually(lambda: answers(port, "/readyz") or loader.process.poll(), timeout=120)

    running = (True, None)
    assert running == (ready, loader.process.poll()), loader.tail()
    beam = any(argument.startswith("--runner") for argument in arguments)
    warned = ("options ignored" in loader.tail(), "--maxNumWorkers" in loader.tail())
    assert (beam, beam) == warned, loader.tail()
    assert clean == loader.stop(), loader.tail()


@pytest.mark.parametrize(
    "config", [pytest.param("0.x", id="0.x-json"), pytest.param("1.x", id="1.x-hocon")]
)
def test_mutator_create_and_add_column_take_snowplows_arguments(
    local_stack: LocalStack, fresh_table: str, config: str
) -> None:
    """``create`` and ``add-column`` with --config and --resolver make the table and its column."""
    clean = 0  # the exit code of a command that did its job
    if config == "0.x":
        document = json.loads(json.dumps(CONFIG))
        document["data"]["tableId"] = fresh_table
        encoded = _b64(json.dumps(document))
    else:
        encoded = _b64(V1_HOCON.replace("TABLE", fresh_table))
    common = [f"--config={encoded}", f"--resolver={RESOLVER_B64}"]

    created = _run(
        "plowline_mutator.cli", "create", *common,
        "--partitionColumn=load_tstamp", "--requirePartitionFilter",
    )  # fmt: skip
    added = _run(
        "plowline_mutator.cli", "add-column", *common, "--shredProperty=CONTEXTS",
        "--schema=iglu:com.snowplowanalytics.snowplow/web_page/jsonschema/1-0-0",
    )  # fmt: skip

    assert (clean, clean) == (created.returncode, added.returncode), created.stderr + added.stderr
    client = bigquery_client(local_stack.project, local_stack.endpoints.bigquery_url)
    table = client.get_table(f"{local_stack.project}.{local_stack.dataset}.{fresh_table}")
    client.close()  # type: ignore[no-untyped-call]
    column = "contexts_com_snowplowanalytics_snowplow_web_page_1_0_0"
    expected = (True, "load_tstamp")
    assert expected == (column in {f.name for f in table.schema}, table.time_partitioning.field)


@pytest.mark.parametrize(
    "config", [pytest.param(V0_CONFIG, id="0.x-json"), pytest.param(V1_CONFIG, id="1.x-hocon")]
)
def test_mutator_listen_takes_snowplows_arguments(
    local_stack: LocalStack,
    start_service: Callable[..., Any],
    eventually: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    config: str,
) -> None:
    """``listen --config … --resolver … --verbose`` opens the types subscription and stops on SIGTERM."""
    clean = 0  # the exit code of a command that did its job
    monkeypatch.setenv("PLOWLINE_MUTATOR_PORT", str(free_port()))  # listen's probes
    mutator = start_service(
        "plowline_mutator.cli", "listen", f"--config={config}", f"--resolver={RESOLVER_B64}",
        "--verbose",
    )  # fmt: skip

    listening = eventually(lambda: "listening" in mutator.tail() or mutator.process.poll())

    running = (True, None)
    assert running == (listening, mutator.process.poll()), mutator.tail()
    assert clean == mutator.stop(), mutator.tail()


@pytest.mark.parametrize(
    ("arguments", "bucket"),
    [
        pytest.param(
            [
                f"--config={V0_CONFIG}",
                f"--resolver={RESOLVER_B64}",
                "--failedInsertsSub=failed-inserts-repeater",
                "--deadEndBucket=gs://plowline-dead-end/snowplow-0x",
                "--desperatesBufferSize=20",
                "--desperatesWindow=20",
                "--backoffPeriod=900",
            ],
            "gs://plowline-dead-end/snowplow-0x",
            id="0.x",
        ),
        pytest.param(
            [
                f"--config={V1_CONFIG}",
                f"--resolver={RESOLVER_B64}",
                "--bufferSize=20",
                "--timeout=20",
                "--backoffPeriod=900",
                "--verbose",
            ],
            "gs://plowline-dead-end/snowplow-1x",
            id="1.x",
        ),
    ],
)
def test_the_repeater_starts_from_snowplows_arguments(
    local_stack: LocalStack,
    start_service: Callable[..., Any],
    eventually: Callable[..., Any],
    port: int,
    arguments: list[str],
    bucket: str,
) -> None:
    """0.x flags, or 1.x flags with subscription and bucket from the HOCON: the repeater is ready."""
    clean = 0  # the exit code of a command that did its job
    repeater = start_service("plowline_repeater.cli", *arguments)

    ready = eventually(lambda: answers(port, "/readyz") or repeater.process.poll())

    running = (True, None)
    assert running == (ready, repeater.process.poll()), repeater.tail()
    expected = (True, True)
    named = ("failed-inserts-repeater" in repeater.tail(), bucket in repeater.tail())
    assert expected == named, repeater.tail()
    assert clean == repeater.stop(), repeater.tail()


def test_the_dead_letter_writer_runs_without_a_subcommand_on_a_1x_config(
    local_stack: LocalStack,
    start_service: Callable[..., Any],
    eventually: Callable[..., Any],
    port: int,
) -> None:
    """``plowline-deadletter --config=<base64 HOCON> --resolver=…`` runs and becomes ready."""
    clean = 0  # the exit code of a command that did its job
    writer = start_service(
        "plowline_deadletter.cli", f"--config={V1_CONFIG}", f"--resolver={RESOLVER_B64}",
        "--badRowsSub=bad-rows-deadletter", "--bucket=gs://plowline-bad-rows/snowplow-1x",
    )  # fmt: skip

    ready = eventually(lambda: answers(port, "/readyz") or writer.process.poll())

    running = (True, None)
    assert running == (ready, writer.process.poll()), writer.tail()
    assert clean == writer.stop(), writer.tail()
