"""The fault file: one entry per named real behaviour, strict about what it does not know."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import plowline_devstack
import plowline_devstack.faults.plan
import pytest
from plowline_core.errors import ConfigError
from plowline_devstack.cli import main
from plowline_devstack.faults.catalogue import CATALOGUE
from plowline_devstack.faults.draws import STRUCK_MARK, FaultDraws, struck_faults
from plowline_devstack.faults.plan import NO_FAULTS, FaultPlan, load_faults, parse_faults
from plowline_devstack.faults.pubsub import PubSubFaults


def _docstring_example() -> str:
    """Return the TOML example of the module docstring, with its indentation removed."""
    doc = plowline_devstack.faults.plan.__doc__ or ""
    block = doc.split("parameters; a parameter left out takes its default::", 1)[1]
    lines = block.split("The same in JSON", 1)[0].splitlines()
    return "\n".join(line.removeprefix("    ") for line in lines)


def test_the_documented_example_is_a_valid_fault_file() -> None:
    """The TOML example in the module docstring parses: every Pub/Sub fault and some others on."""
    plan = parse_faults(tomllib.loads(_docstring_example()))
    expected = (
        7,
        sorted(s.name for s in CATALOGUE if s.stand_in == "pubsub"),
        ["backend-error", "response-lost-after-write", "schema-propagation-delay"],
        ["service-unavailable"],
    )
    actual = (
        plan.seed,
        sorted(plan.for_server("pubsub")),
        sorted(plan.for_server("bigquery")),
        sorted(plan.for_server("storage")),
    )
    assert expected == actual


def test_left_out_parameters_take_their_defaults() -> None:
    """A fault named with no parameters is on with its defaults filled in."""
    plan = parse_faults({"pubsub": {"streaming-pull-unavailable": {"after_seconds": 30}}})
    expected = {"streaming-pull-unavailable": {"rate": 0.0, "after_seconds": 30.0}}
    assert expected == plan.for_server("pubsub")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            {"pubsub": {"dupes": {}}}, "unknown pubsub fault 'dupes'; known: ", id="unknown-fault"
        ),
        pytest.param(
            {"pubsub": {"duplicate-delivery": {"ratio": 0.1}}},
            "unknown parameters ['ratio']; known: ['rate']",
            id="unknown-parameter",
        ),
        pytest.param(
            {"pubsub": {"duplicate-delivery": {"rate": 2}}},
            "rate = 2 is outside 0..1",
            id="rate-out-of-range",
        ),
        pytest.param(
            {"pubsub": {"duplicate-delivery": {"rate": "high"}}},
            "rate must be a number",
            id="not-a-number",
        ),
        pytest.param({"spanner": {}}, "unknown keys in the fault file: ['spanner']", id="stand-in"),
        pytest.param({"seed": "x"}, "seed must be an integer", id="seed"),
        pytest.param(
            {"bigquery": {"rate-limit": {}}},
            "unknown bigquery fault 'rate-limit'; known: backend-error, rate-limit-exceeded, ",
            id="bigquery-typo",
        ),
        pytest.param(
            {"storage": {"timeout": {"seconds": 5}}},
            "unknown storage fault 'timeout'; known: service-unavailable, ",
            id="storage-typo",
        ),
        pytest.param(
            {"bigquery": {"schema-propagation-delay": {"seconds": -1}}},
            "seconds = -1 is outside 0..3600",
            id="negative-delay",
        ),
        pytest.param(
            {"bigquery": {"timeout": {"seconds": 0}}},
            "seconds = 0 is outside 0.1..3600",
            id="no-hang",
        ),
    ],
)
def test_a_mistake_in_the_file_is_a_config_error_that_says_what_is_known(
    data: dict[str, object], message: str
) -> None:
    """A typo never turns a fault off silently: it is a ConfigError naming what is allowed."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_faults(data)


def test_a_plan_survives_its_json_form() -> None:
    """to_json() is what the stack writes for its servers; parse_faults reads the same plan."""
    plan = parse_faults({"seed": 3, "pubsub": {"duplicate-delivery": {"rate": 0.5}}})
    expected = (plan.seed, plan.faults)
    again = parse_faults(plan.to_json())
    assert expected == (again.seed, again.faults)


def test_a_json_file_is_read_by_its_suffix(tmp_path: Path) -> None:
    """A .json file is JSON; its faults are read like TOML's."""
    path = tmp_path / "faults.json"
    path.write_text('{"pubsub": {"out-of-order-delivery": {"rate": 0.25}}}')
    expected = ["pubsub.out-of-order-delivery"]
    assert expected == load_faults(path).names()


def test_no_file_means_no_faults() -> None:
    """Without a file every fault is off."""
    expected = NO_FAULTS
    assert expected == load_faults(None)


def test_the_same_seed_draws_the_same_faults() -> None:
    """Two emulators with the same plan and seed fail at the same calls."""
    plan: FaultPlan = parse_faults({"seed": 11, "pubsub": {"duplicate-delivery": {"rate": 0.3}}})
    first, second = (PubSubFaults(plan.for_server("pubsub"), plan.seed) for _ in range(2))
    draws = [first.delivered_twice() for _ in range(50)]
    expected = (draws, True)
    assert expected == ([second.delivered_twice() for _ in range(50)], 0 < sum(draws) < 50)


def test_dev_faults_lists_every_fault_of_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    """``plowline dev faults`` prints one line per fault, named stand-in.fault, with parameters."""
    code = main(["dev", "faults"])
    printed = [line.split(":", 1)[0] for line in capsys.readouterr().out.splitlines()]
    expected = (0, [f"{spec.stand_in}.{spec.name}" for spec in CATALOGUE])
    assert expected == (code, printed)


def test_the_sample_one_percent_plan_fails_one_percent_of_bigquery_rest_calls() -> None:
    """examples/faults-1pct.toml parses, and its BigQuery REST rates add up to 1%."""
    path = Path(plowline_devstack.__file__).parent / "examples" / "faults-1pct.toml"
    plan = load_faults(path)
    rest = ("backend-error", "rate-limit-exceeded", "response-lost-after-write")
    bigquery = plan.for_server("bigquery")
    expected = (0.01, True)
    actual = (
        round(sum(bigquery[name]["rate"] for name in rest), 6),
        bool(plan.for_server("pubsub")),
    )
    assert expected == actual


def test_an_acknowledge_outage_refuses_every_call_for_its_seconds() -> None:
    """acknowledge-unavailable with seconds: after one refusal, every call fails that long."""
    now = [0.0]
    plan = parse_faults(
        {"seed": 3, "pubsub": {"acknowledge-unavailable": {"rate": 0.05, "seconds": 10}}}
    )
    faults = PubSubFaults(plan.for_server("pubsub"), plan.seed, clock=lambda: now[0])
    calls = 0
    while not faults.ack_call_refused():  # the first refusal starts the outage
        calls += 1
    during = []
    for _ in range(40):
        now[0] += 0.2
        during.append(faults.ack_call_refused())
    now[0] += 10
    after = [faults.ack_call_refused() for _ in range(40)]
    assert (all(during), sum(after) < 40) == (True, True), calls


def test_a_strike_is_written_to_stderr_for_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    """Each strike writes one marked line naming the fault; a miss writes nothing."""
    draws = FaultDraws({"sure": {"rate": 1.0}, "never": {"rate": 0.0}})

    struck = [draws.draw("sure"), draws.draw("never"), draws.draw("sure")]

    expected = ([True, False, True], f"{STRUCK_MARK} sure\n" * 2)
    assert expected == (struck, capsys.readouterr().err)


def test_struck_faults_are_counted_per_stand_in_from_the_logs(tmp_path: Path) -> None:
    """struck_faults counts the marked lines of each server log, named by the log's stem."""
    (tmp_path / "pubsub.log").write_text(
        f"started\n{STRUCK_MARK} pull-unavailable\nnoise {STRUCK_MARK} x\n"
        f"{STRUCK_MARK} pull-unavailable\n"
    )
    (tmp_path / "bigquery.log").write_bytes(
        f"{STRUCK_MARK} backend-error\n\xff\n".encode("latin-1")
    )

    expected = {"pubsub.pull-unavailable": 2, "bigquery.backend-error": 1}
    assert expected == dict(struck_faults(tmp_path))
