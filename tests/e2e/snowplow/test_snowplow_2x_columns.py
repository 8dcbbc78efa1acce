"""A 2.x config end to end: every event a row or a failed event, the table as 2.x's rules give.

Loader, mutator and repeater run as processes from one 2.x config of our own
(``tests/data/v2config/e2e.hocon``: ``skipSchemas``, ``legacyColumns``; then
``e2e_legacy.hocon``: the same with ``legacyColumnMode = true``) with an embedded
registry of our own schemas beside it: ``com.acme/cart_item`` 1-0-0, 1-0-1 (adds
``unitPrice``), 1-1-0 (adds ``giftNote``) and 1-0-2 (``quantity`` integer → string: it cannot
merge), ``com.acme/old_note`` (legacy) and ``com.acme/ignored_thing`` (skipped), sent as
unstruct events and contexts, with malformed lines among them.

``EXPECTED_MAJOR`` is the entity columns written out from the rules as the README states them
(one column per model, minor versions merged in SchemaVer order, a field a later version adds
appended NULLABLE; a version that retypes a field gets
``<column>_recovered_<M>_<R>_<A>_<hash>``; ``_schema_version`` first in each context item;
a legacy column named and typed as 1.x, fields sorted by name; nothing for a skipped schema).
``EXPECTED_LEGACY`` is the same events under ``legacyColumnMode = true``: every schema in a
1.x column of its own full version, fields sorted by name, no ``_schema_version``, no
recovery column (1-0-2 is simply a column of its own).

``HASH_1_0_2`` (``support.snowplow``) is checked against the README's rule, with no service
running, by ``tests/integration/snowplow/test_snowplow_2x_columns.py``.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from google.api_core.exceptions import AlreadyExists, DeadlineExceeded, RetryError
from google.cloud import bigquery
from plowline_cloud.clients import bigquery_client, publisher_client, subscriber_client
from plowline_core.event.fields import V2_ATOMIC_COLUMNS
from plowline_devstack.demo.malformed import malformed_line
from plowline_devstack.demo.traffic import Traffic, assemble, contexts_text, unstruct_text
from plowline_devstack.stack.config import load_stack
from plowline_devstack.stack.lifecycle import LocalStack
from plowline_devstack.stack.provisioning import provision_pubsub, provision_storage
from plowline_devstack.stack.servers import free_port
from support.configs import embedded, resolver_config, write_json
from support.snowplow import HASH_1_0_2, V2CONFIG
from support.stack import answers
from support.timing import wait_for

pytestmark = pytest.mark.timeout(900)  # services start (~1 min), then two waves of events
MAIN_U = "unstruct_event_com_acme_cart_item_1"
MAIN_C = "contexts_com_acme_cart_item_1"
RECOVERED_U = f"{MAIN_U}_recovered_1_0_2_{HASH_1_0_2}"
RECOVERED_C = f"{MAIN_C}_recovered_1_0_2_{HASH_1_0_2}"
LEGACY_C = "contexts_com_acme_old_note_1_0_0"
VERSION = ("_schema_version", "STRING", "REQUIRED", ())
EXPECTED_MAJOR = {
    MAIN_U: (
        "RECORD",
        "NULLABLE",
        (
            ("quantity", "INTEGER", "REQUIRED", ()),
            ("sku", "STRING", "REQUIRED", ()),
            ("unit_price", "FLOAT", "NULLABLE", ()),
            ("gift_note", "STRING", "NULLABLE", ()),
        ),
    ),
    RECOVERED_U: (
        "RECORD",
        "NULLABLE",
        (
            ("quantity", "STRING", "REQUIRED", ()),
            ("sku", "STRING", "REQUIRED", ()),
            ("unit_price", "FLOAT", "NULLABLE", ()),
        ),
    ),
    MAIN_C: (
        "RECORD",
        "REPEATED",
        (
            VERSION,
            ("quantity", "INTEGER", "REQUIRED", ()),
            ("sku", "STRING", "REQUIRED", ()),
            ("unit_price", "FLOAT", "NULLABLE", ()),
            ("gift_note", "STRING", "NULLABLE", ()),
        ),
    ),
    RECOVERED_C: (
        "RECORD",
        "REPEATED",
        (
            VERSION,
            ("quantity", "STRING", "REQUIRED", ()),
            ("sku", "STRING", "REQUIRED", ()),
            ("unit_price", "FLOAT", "NULLABLE", ()),
        ),
    ),
    LEGACY_C: (
        "RECORD",
        "REPEATED",
        (("count", "INTEGER", "NULLABLE", ()), ("text", "STRING", "REQUIRED", ())),
    ),
}
# Where each entity goes: (unstruct?, name, version) → column ("" : nowhere).
ROUTES_MAJOR = {
    (True, "cart_item", "1-0-0"): MAIN_U,
    (True, "cart_item", "1-0-1"): MAIN_U,
    (True, "cart_item", "1-1-0"): MAIN_U,
    (True, "cart_item", "1-0-2"): RECOVERED_U,
    (True, "ignored_thing", "1-0-0"): "",
    (False, "cart_item", "1-0-0"): MAIN_C,
    (False, "cart_item", "1-0-1"): MAIN_C,
    (False, "cart_item", "1-1-0"): MAIN_C,
    (False, "cart_item", "1-0-2"): RECOVERED_C,
    (False, "old_note", "1-0-0"): LEGACY_C,
    (False, "ignored_thing", "1-0-0"): "",
}
_QUANTITY = ("quantity", "INTEGER", "REQUIRED", ())
_SKU = ("sku", "STRING", "REQUIRED", ())
_PRICE = ("unit_price", "FLOAT", "NULLABLE", ())
_LEGACY_FIELDS = {  # 1.x's fields of each version, sorted by name
    "1-0-0": (_QUANTITY, _SKU),
    "1-0-1": (_QUANTITY, _SKU, _PRICE),
    "1-0-2": (("quantity", "STRING", "REQUIRED", ()), _SKU, _PRICE),
    "1-1-0": (("gift_note", "STRING", "NULLABLE", ()), _QUANTITY, _SKU, _PRICE),
}
# legacyColumnMode = true: every schema in 1.x's columns, one per full version present.
EXPECTED_LEGACY = {
    **{
        f"unstruct_event_com_acme_cart_item_{v.replace('-', '_')}": ("RECORD", "NULLABLE", f)
        for v, f in _LEGACY_FIELDS.items()
    },
    **{
        f"contexts_com_acme_cart_item_{v.replace('-', '_')}": ("RECORD", "REPEATED", f)
        for v, f in _LEGACY_FIELDS.items()
    },
    LEGACY_C: EXPECTED_MAJOR[LEGACY_C],
}
ROUTES_LEGACY = {
    (unstruct, name, version): column
    and f"{'unstruct_event' if unstruct else 'contexts'}_com_acme_{name}_{version.replace('-', '_')}"
    for (unstruct, name, version), column in ROUTES_MAJOR.items()
}


@dataclass(frozen=True)
class Mode:
    """One 2.x column mode under test: its config file, table, bad topic and expectations."""

    config: str
    subscription: str
    table: str
    bad_topic: str
    expected: Mapping[str, Any]
    routes: Mapping[tuple[bool, str, str], str]


MODES = {
    "major": Mode(
        "e2e.hocon", "v2-e2e-enriched", "v2_e2e", "v2-e2e-bad", EXPECTED_MAJOR, ROUTES_MAJOR
    ),
    "legacy": Mode(
        "e2e_legacy.hocon",
        "v2-e2e-legacy-enriched",
        "v2_e2e_legacy",
        "v2-e2e-legacy-bad",
        EXPECTED_LEGACY,
        ROUTES_LEGACY,
    ),
}
NAMES = {"unitPrice": "unit_price", "giftNote": "gift_note"}
_TYPES = {"STRUCT": "RECORD", "INT64": "INTEGER", "FLOAT64": "FLOAT", "BOOL": "BOOLEAN"}
_ITEMS = {
    "1-0-0": {"sku": "A-100", "quantity": 1},
    "1-0-1": {"sku": "A-101", "quantity": 2, "unitPrice": 2.5},
    "1-0-2": {"sku": "A-102", "quantity": "three", "unitPrice": 3.25},
    "1-1-0": {"sku": "A-110", "quantity": 4, "unitPrice": 4.75, "giftNote": "for you"},
}


@dataclass
class Sent:
    """One published line: its event id, whether it must be a row, its entities."""

    event_id: str
    line: str
    good: bool
    entities: list[tuple[bool, str, str, dict[str, Any]]] = field(default_factory=list)


def _entity(name: str, version: str, data: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    return f"iglu:com.acme/{name}/jsonschema/{version}", data


def _good(traffic: Traffic, unstruct: Any, contexts: list[Any]) -> Sent:
    event_id = traffic.uuid()
    fields = traffic.fields("page_view", event_id)
    fields["contexts"] = contexts_text(*(_entity(*c) for c in contexts)) if contexts else ""
    fields["derived_contexts"] = ""
    entities = [(False, name, version, dict(data)) for name, version, data in contexts]
    if unstruct is not None:
        name, version, data = unstruct
        fields.update(event="unstruct", event_vendor="com.acme", event_name=name)
        fields.update(event_format="jsonschema", event_version=version)
        fields["unstruct_event"] = unstruct_text(*_entity(name, version, data))
        entities.append((True, name, version, dict(data)))
    return Sent(event_id, assemble(fields), True, entities)


def _bad_unstruct(traffic: Traffic, version: str, data: Mapping[str, Any]) -> Sent:
    sent = _good(traffic, ("cart_item", version, data), [])
    return Sent(sent.event_id, sent.line, False)


def _events() -> list[Sent]:
    traffic = Traffic(random.Random(24), datetime.now(UTC), rate=50.0)
    note, ignored = {"text": "hello", "count": 7}, {"code": "X1"}
    sent: list[Sent] = []
    for round_ in range(3):
        for version, item in _ITEMS.items():
            sent.append(_good(traffic, ("cart_item", version, item), []))
            contexts = [("cart_item", version, item), ("old_note", "1-0-0", note)]
            if round_ == 0:
                contexts.append(("ignored_thing", "1-0-0", ignored))
            sent.append(_good(traffic, None, contexts))
    sent.append(_good(traffic, ("ignored_thing", "1-0-0", ignored), []))
    sent.append(_good(traffic, None, [("cart_item", "1-0-0", _ITEMS["1-0-0"])] * 2))
    for kind in ("not_tsv", "field_count", "bad_timestamp", "bad_json"):
        event_id = traffic.uuid()
        sent.append(Sent(event_id, malformed_line(traffic, kind, event_id), False))
    sent.append(_bad_unstruct(traffic, "1-0-1", {"sku": "B", "quantity": "two"}))  # wrong type
    sent.append(_bad_unstruct(traffic, "1-0-3", _ITEMS["1-0-0"]))  # in no repository
    return sent


def _shape(schema: list[bigquery.SchemaField]) -> tuple[Any, ...]:
    return tuple(
        (f.name, _TYPES.get(f.field_type, f.field_type), f.mode, _shape(list(f.fields)))
        for f in schema
    )


def _cell(mode: Mode, column: str, version: str, data: Mapping[str, Any]) -> dict[str, Any]:
    subs = [sub[0] for sub in mode.expected[column][2]]
    values = {NAMES.get(key, key): value for key, value in data.items()}
    if "_schema_version" in subs:
        values["_schema_version"] = version
    return {sub: values.get(sub) for sub in subs}


def _expected_row(mode: Mode, sent: Sent) -> dict[str, Any]:
    row: dict[str, Any] = {
        column: [] if column.startswith("contexts") else None for column in mode.expected
    }
    for unstruct, name, version, data in sent.entities:
        column = mode.routes[(unstruct, name, version)]
        if column and unstruct:
            row[column] = _cell(mode, column, version, data)
        elif column:
            row[column].append(_cell(mode, column, version, data))
    return row


def _resolver(directory: Path) -> Path:
    """A resolver config whose one repository is the embedded registry beside e2e.hocon."""
    path = directory / "resolver.json"
    return write_json(path, resolver_config(embedded(V2CONFIG / "iglu", name="ours")))


@dataclass
class Outcome:
    """What the run left: rows by event id, failed events by event id, the table's schema."""

    mode: Mode
    sent: list[Sent]
    rows: dict[str, list[dict[str, Any]]]
    failed: Counter[str]
    schema: list[bigquery.SchemaField]
    logs: str


class _Watch:
    """Reads the table's rows and pulls the bad topic's failed events, counting per event id."""

    def __init__(self, stack: LocalStack, sent: list[Sent], table: str, check: str) -> None:
        self._bigquery = bigquery_client(stack.endpoints.project, stack.endpoints.bigquery_url)
        self._subscriber = subscriber_client(stack.endpoints.pubsub_target)
        self._table = f"{stack.project}.snowplow.{table}"
        self._check = check
        self._ids = [s.event_id for s in sent]
        self.failed: Counter[str] = Counter()

    def rows(self) -> dict[str, list[dict[str, Any]]]:
        found: dict[str, list[dict[str, Any]]] = {}
        for row in self._bigquery.query(f"SELECT * FROM `{self._table}`").result():
            found.setdefault(str(row["event_id"]), []).append(dict(row.items()))
        return found

    def pull(self) -> None:
        try:
            reply = self._subscriber.pull(
                request={"subscription": self._check, "max_messages": 500}, timeout=5
            )
        except (DeadlineExceeded, RetryError):
            return
        for message in reply.received_messages:
            text = message.message.data.decode(errors="replace")
            self.failed.update(i for i in self._ids if i in text)
        if reply.received_messages:
            ack_ids = [m.ack_id for m in reply.received_messages]
            self._subscriber.acknowledge(request={"subscription": self._check, "ack_ids": ack_ids})

    def accounted(self) -> int:
        self.pull()
        return sum(len(copies) for copies in self.rows().values()) + sum(self.failed.values())

    def close(self) -> None:
        self._bigquery.close()  # type: ignore[no-untyped-call]
        self._subscriber.close()


@pytest.fixture(scope="module", params=sorted(MODES))
def outcome(
    request: pytest.FixtureRequest,
    local_stack: LocalStack,
    start_module_service: Callable[..., Callable[..., Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Outcome]:
    """Start loader, mutator and repeater from the mode's config, send the events, wait for all.

    The 1-0-0 events go first and land before the rest are sent, so the columns the mutator
    made for them must widen (1-0-1, 1-1-0) rather than be made whole at once.
    """
    mode = MODES[request.param]
    config = V2CONFIG / mode.config
    files = (
        "--config",
        str(config),
        "--iglu-config",
        str(_resolver(tmp_path_factory.mktemp("v2"))),
    )
    provision_pubsub(load_stack(config)[0], local_stack.endpoints)
    provision_storage(load_stack(config)[0], local_stack.endpoints)
    subscriber = subscriber_client(local_stack.endpoints.pubsub_target)
    check = f"projects/{local_stack.project}/subscriptions/{mode.bad_topic}-check"
    bad_topic = f"projects/{local_stack.project}/topics/{mode.bad_topic}"
    with contextlib.suppress(AlreadyExists):
        subscriber.create_subscription(request={"name": check, "topic": bad_topic})
    loader_port, repeater_port = free_port(), free_port()
    ports = {
        "PLOWLINE_TEST_V2_PORT": str(loader_port),
        "PLOWLINE_REPEATER_PORT": str(repeater_port),
        "PLOWLINE_MUTATOR_PORT": str(free_port()),  # listen's probes
    }
    start = start_module_service(ports)
    services = (
        start("plowline_loader.cli", *files),
        start("plowline_mutator.cli", "listen", *files),
        start("plowline_repeater.cli", *files),
    )

    def ready() -> bool:
        listening = "listening" in services[1].tail()
        return listening and answers(loader_port) and answers(repeater_port)

    if not wait_for(ready, 180, every_s=1.0):
        pytest.fail("\n\n".join(s.tail() for s in services), pytrace=False)
    sent = _events()
    publisher = publisher_client(local_stack.endpoints.pubsub_target)
    topic = f"projects/{local_stack.project}/topics/enriched"
    watch = _Watch(local_stack, sent, mode.table, check)
    first = [s for s in sent if s.good and {e[2] for e in s.entities} == {"1-0-0"}]
    for wave in (first, [s for s in sent if s not in first]):  # then the columns widen
        for future in [publisher.publish(topic, s.line.encode()) for s in wave]:
            future.result(timeout=60)
        done = len(first) if wave is first else len(sent)
        wait_for(lambda done=done: watch.accounted() >= done, 240, every_s=2.0)
    time.sleep(10.0)  # room for a second copy of anything, before counting for good
    watch.pull()
    client = bigquery_client(local_stack.endpoints.project, local_stack.endpoints.bigquery_url)
    schema = list(client.get_table(f"{local_stack.project}.snowplow.{mode.table}").schema)
    logs = "\n\n".join(s.tail() for s in services)
    yield Outcome(mode, sent, watch.rows(), watch.failed, schema, logs)
    for service in services:
        service.stop()
    watch.close()
    subscriber.delete_subscription(request={"subscription": check})
    enriched = f"projects/{local_stack.project}/subscriptions/{mode.subscription}"
    subscriber.delete_subscription(request={"subscription": enriched})
    subscriber.close()
    client.delete_table(f"{local_stack.project}.snowplow.{mode.table}", not_found_ok=True)
    client.close()  # type: ignore[no-untyped-call]


def _side_by_side(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    def lines(columns: Mapping[str, Any]) -> list[str]:
        out: list[str] = []
        for name in sorted(columns):
            kind, mode, subs = columns[name]
            out.append(f"{name} {kind} {mode}")
            out.extend(f"    {sub} {sub_kind} {sub_mode}" for sub, sub_kind, sub_mode, _ in subs)
        return out

    left, right = lines(expected), lines(actual)
    width = max(len(line) for line in left + ["2.x rules"])
    rows = [f"{'2.x rules'.ljust(width)} | plowline's table", "-" * (width + 20)]
    for index in range(max(len(left), len(right))):
        one = left[index] if index < len(left) else ""
        other = right[index] if index < len(right) else ""
        rows.append(f"{one.ljust(width)} | {other}")
    return "\n".join(rows)


def test_every_event_is_one_row_or_one_failed_event(outcome: Outcome) -> None:
    """Each event id is exactly one row (the good ones) or one failed event on the bad topic."""
    expected = {s.event_id: (1, 0) if s.good else (0, 1) for s in outcome.sent}
    actual = {
        s.event_id: (len(outcome.rows.get(s.event_id, [])), outcome.failed[s.event_id])
        for s in outcome.sent
    }
    strangers = set(outcome.rows) - set(expected)
    assert (expected, set()) == (actual, strangers), outcome.logs


def test_the_table_has_the_columns_the_2x_rules_give(outcome: Outcome) -> None:
    """The table is 2.x's atomic columns, then exactly the entity columns the mode's rules give."""
    shape = _shape(outcome.schema)
    atomic = {f.name for f in V2_ATOMIC_COLUMNS}
    entity = {name: rest for name, *rest in shape if name not in atomic}
    actual = {name: tuple(rest) for name, rest in entity.items()}
    print("\n" + _side_by_side(outcome.mode.expected, actual))
    names = [name for name, *_ in shape]
    expected = ([f.name for f in V2_ATOMIC_COLUMNS], outcome.mode.expected)
    assert expected == (names[: len(atomic)], actual)


def test_each_value_lands_in_its_2x_column(outcome: Outcome) -> None:
    """Merged versions in the main column, 1-0-2 in the recovery one, old_note legacy, no skipped."""
    good = [s for s in outcome.sent if s.good]
    expected = {s.event_id: _expected_row(outcome.mode, s) for s in good}
    actual = {}
    for s in good:
        row = (outcome.rows.get(s.event_id) or [{}])[0]
        columns = outcome.mode.expected
        empty: dict[str, Any] = {c: [] if c.startswith("contexts") else None for c in columns}
        actual[s.event_id] = {c: row.get(c) or empty[c] for c in columns}
    assert expected == actual, outcome.logs
