"""deploy/GKE.md grants each service exactly the roles its code declares (``GRANTS``).

GKE.md's step 4 grants with four shell helpers (``sub``, ``pub``, ``ds``, ``bkt``); each
service's ``bootstrap.GRANTS`` names the resource by the config field or flag it comes from,
resolved here with the prod overlay (its config.json and rendered arguments).
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

import pytest
from plowline_core.grants import Grant

SERVICES = ("loader", "mutator", "repeater", "deadletter")

Triple = tuple[str, str, str, str]  # service, role, resource kind, resource name


def _declared_grants() -> dict[str, tuple[Grant, ...]]:
    from plowline_deadletter.bootstrap import GRANTS as DEADLETTER
    from plowline_loader.bootstrap import GRANTS as LOADER
    from plowline_mutator.bootstrap import GRANTS as MUTATOR
    from plowline_repeater.bootstrap import GRANTS as REPEATER

    return {"loader": LOADER, "mutator": MUTATOR, "repeater": REPEATER, "deadletter": DEADLETTER}


def _step(deploy: Any, heading: str) -> str:
    """Return the first shell block of the GKE.md section that starts with ``heading``."""
    text = (deploy.repo / "deploy" / "GKE.md").read_text()
    section = text[text.index(heading) :]
    return section[section.index("```sh\n") + 6 : section.index("```", section.index("```sh") + 5)]


def _project(deploy: Any) -> str:
    match = re.search(r"export PROJECT=(\S+)", (deploy.repo / "deploy" / "GKE.md").read_text())
    assert match is not None, "GKE.md exports no PROJECT"
    return match.group(1)


def _documented(deploy: Any) -> set[Triple]:
    """The (service, role, kind, name) grants of GKE.md's step 4."""
    project = _project(deploy)
    found: set[Triple] = set()
    for line in _step(deploy, "## 4.").splitlines():
        for call in line.split("#")[0].split(";"):
            words = shlex.split(call)
            if not words:
                continue
            if words[0] == "sub":
                found.add((words[2], "roles/pubsub.subscriber", "subscription", words[1]))
            elif words[0] == "pub":
                found.add((words[2], "roles/pubsub.publisher", "topic", words[1]))
            elif words[0] == "ds":
                found.add((words[1], "roles/bigquery.dataEditor", "dataset", "snowplow"))
            elif words[0] == "bkt":
                bucket = f"{project}-plowline-{words[1]}"
                found.add((words[2], words[3], "bucket", bucket))
    return found


def _arguments(deploy: Any) -> dict[str, list[str]]:
    """Each prod service's arguments, with ``$(NAME)`` expanded from plowline-settings."""
    manifests = deploy.render("prod")
    settings: dict[str, str] = next(
        m["data"] for m in manifests if m["kind"] == "ConfigMap" and "BAD_ROWS_SUB" in m["data"]
    )
    args = {
        name.removeprefix("plowline-"): d["spec"]["template"]["spec"]["containers"][0]["args"]
        for name, d in deploy.by_kind(manifests, "Deployment").items()
    }
    args["loader"] = deploy.by_kind(manifests, "SparkApplication")["plowline-loader"]["spec"][
        "arguments"
    ]
    expand = re.compile(r"\$\((\w+)\)")
    return {
        service: [expand.sub(lambda m: settings[m.group(1)], arg) for arg in values]
        for service, values in args.items()
    }


def _declared(deploy: Any) -> set[Triple]:
    """The (service, role, kind, name) grants the services declare, resolved for prod."""
    config = json.loads(
        (
            deploy.repo / "deploy" / "k8s" / "overlays" / "prod" / "config" / "config.json"
        ).read_text()
    )["data"]
    arguments = _arguments(deploy)
    found: set[Triple] = set()
    for service, grants in _declared_grants().items():
        for grant in grants:
            if grant.source.startswith("--"):
                value = deploy.flag(arguments[service], grant.source)
                assert value is not None, f"{service} is given no {grant.source}"
            else:
                value = config[grant.source]
            name = value.removeprefix("gs://").split("/")[0]
            found.add((service, grant.role, grant.kind.value, name))
    return found


def test_gke_guide_grants_exactly_what_each_service_declares(deploy: Any) -> None:
    """GKE.md's IAM step and the services' declared GRANTS name the same roles on the same resources."""
    documented, declared = _documented(deploy), _declared(deploy)
    expected: tuple[set[Triple], set[Triple]] = (set(), set())
    assert expected == (declared - documented, documented - declared)


@pytest.mark.parametrize("service", SERVICES)
def test_every_service_declares_its_grants(service: str) -> None:
    """Each service declares at least one grant, each with a predefined role."""
    grants = _declared_grants()[service]
    expected = (True, True)
    assert expected == (len(grants) > 0, all(g.role.startswith("roles/") for g in grants))


def test_gke_guide_binds_every_kubernetes_account_to_its_google_account(deploy: Any) -> None:
    """Step 5 lets every Kubernetes service account of the prod overlay act as its Google account."""
    block = _step(deploy, "## 5.")
    loop = re.search(r"for s in ([\w ]+); do", block)
    assert loop is not None, "GKE.md step 5 has no loop over the services"
    members = {f"plowline-{s}" for s in loop.group(1).split()}
    members |= set(re.findall(r"\[plowline/(plowline-[\w-]+)\]", block)) - {"plowline-$s"}
    accounts = set(deploy.by_kind(deploy.render("prod"), "ServiceAccount"))
    assert accounts == members
