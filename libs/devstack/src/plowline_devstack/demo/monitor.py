"""``plowline demo --monitor``: a real Prometheus over the demo's services, and what it shows.

Starts ``prometheus`` from PATH (Debian's ``prometheus`` package, or a release from
prometheus.io) beside the local stack. It scrapes the four services at their demo ports with
the job names and metric paths of compose's ``deploy/monitoring/prometheus.yml``, every
second. At the end every panel query of the Grafana dashboard
(``deploy/monitoring/grafana/plowline.json``) and every alert expression of
``deploy/monitoring/alerts.yaml`` (without its ``for:``) is evaluated as an instant query
through Prometheus' HTTP API: per panel, whether it returned data; per alert, whether its
condition holds.

Notes:
    The dashboard's ``$__rate_interval`` becomes the time Prometheus has watched (at least
    four scrapes), so a panel's rate covers the whole run. A query whose only values are
    NaN (a quantile of no observation) returned no data. The deploy files are read from the
    repository this package lives in (a clone: ``uv sync`` installs it editable).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from plowline_core.errors import PlowlineError

from plowline_devstack.stack.servers import free_port, log_tail

REPO = Path(__file__).resolve().parents[5]
MONITORING = REPO / "deploy" / "monitoring"
SCRAPE_INTERVAL_S = 1
_HTTP_TIMEOUT_S = 10.0
_GET_PROMETHEUS = (
    "Debian/Ubuntu: `sudo apt-get install prometheus` (only its binary is used); elsewhere "
    "download a release from https://prometheus.io/download/ and put `prometheus` on PATH"
)


class MonitorError(PlowlineError):
    """Prometheus could not be found, started or asked."""


@dataclass(frozen=True, slots=True)
class PanelResult:
    """One dashboard panel: its title and, per query, how many series had a value."""

    title: str
    series: tuple[tuple[str, int], ...]  # (query, series with a number)

    @property
    def has_data(self) -> bool:
        """Say whether any of the panel's queries returned a number."""
        return any(count for _, count in self.series)


@dataclass(frozen=True, slots=True)
class AlertResult:
    """One alert: whether its condition holds now, and for which label sets."""

    name: str
    holding: tuple[str, ...]  # the label sets it holds for, as text

    @property
    def holds(self) -> bool:
        """Say whether the alert's condition holds for some series."""
        return bool(self.holding)


@dataclass(frozen=True, slots=True)
class MonitorReport:
    """What Prometheus showed at the end of the run."""

    panels: tuple[PanelResult, ...]
    alerts: tuple[AlertResult, ...]

    def lines(self) -> list[str]:
        """Return the report as printable lines."""
        out = ["dashboard panels (instant queries over the run):"]
        for panel in self.panels:
            state = "data" if panel.has_data else "NO DATA"
            counts = ", ".join(str(count) for _, count in panel.series)
            out.append(f"  {state:<8} {panel.title} (series per query: {counts})")
        out.append("alert conditions (expressions without for:):")
        for alert in self.alerts:
            state = "HOLDS" if alert.holds else "quiet"
            where = f" for {'; '.join(alert.holding)}" if alert.holds else ""
            out.append(f"  {state:<8} {alert.name}{where}")
        return out


@dataclass
class Prometheus:
    """A running Prometheus: its process, HTTP address and log."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    started: float = field(default_factory=time.monotonic)

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Return the instant vector ``expr`` evaluates to now (MonitorError if refused)."""
        address = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        try:
            with urllib.request.urlopen(address, timeout=_HTTP_TIMEOUT_S) as reply:
                answer = json.loads(reply.read())
        except urllib.error.HTTPError as error:
            answer = json.loads(error.read() or b"{}")
        except OSError as error:
            raise MonitorError(f"Prometheus at {self.url} did not answer: {error}") from error
        if answer.get("status") != "success":
            raise MonitorError(f"Prometheus refused {expr!r}: {answer.get('error', answer)}")
        data = answer["data"]
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        result: list[dict[str, Any]] = data["result"]
        return result

    def wait_scrapes(self, count: int = 2) -> None:
        """Wait long enough for ``count`` more scrapes of every target."""
        time.sleep(count * SCRAPE_INTERVAL_S + 0.5)

    def stop(self, grace: float = 10.0) -> None:
        """Stop Prometheus (SIGTERM, then SIGKILL after ``grace`` seconds)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def find_prometheus() -> str:
    """Return the ``prometheus`` binary on PATH, or raise MonitorError saying how to get it."""
    found = shutil.which("prometheus")
    if found is None:
        raise MonitorError(f"--monitor needs `prometheus` on PATH: {_GET_PROMETHEUS}")
    return found


def scrape_config(ports: Mapping[str, int], interval_s: int = SCRAPE_INTERVAL_S) -> dict[str, Any]:
    """Return a Prometheus config scraping each service at 127.0.0.1:<its demo port>.

    Job names and metric paths are compose's (deploy/monitoring/prometheus.yml), whose
    targets are ``<service>:<port>``; ``ports`` maps service names to demo ports.
    """
    compose = yaml.safe_load(_deploy_file(MONITORING / "prometheus.yml").read_text())
    jobs = []
    for job in compose["scrape_configs"]:
        [target] = [t for group in job["static_configs"] for t in group["targets"]]
        service = target.split(":", 1)[0]
        if service not in ports:
            raise MonitorError(f"compose scrapes {target}, which the demo does not run")
        jobs.append(
            {
                "job_name": job["job_name"],
                "metrics_path": job.get("metrics_path", "/metrics"),
                "static_configs": [{"targets": [f"127.0.0.1:{ports[service]}"]}],
            }
        )
    interval = f"{interval_s}s"
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": jobs,
    }


def start_prometheus(work_dir: Path, ports: Mapping[str, int], timeout: float = 60.0) -> Prometheus:
    """Start Prometheus in ``work_dir`` over the services' ports; return once it scraped each.

    Notes:
        Prometheus hands new targets to its scrapers about 5 s after it starts: until
        then ``up`` is empty, so this waits for an ``up`` sample of every job.
    """
    binary = find_prometheus()
    work_dir.mkdir(parents=True, exist_ok=True)
    config = work_dir / "prometheus.yml"
    config.write_text(yaml.safe_dump(scrape_config(ports), sort_keys=False))
    port = free_port()
    log = work_dir / "prometheus.log"
    with log.open("ab") as out:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={work_dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    prometheus = Prometheus(process, f"http://127.0.0.1:{port}", log)
    deadline = time.monotonic() + timeout
    while not (_ready(prometheus.url) and _scraped(prometheus) >= len(ports)):
        if process.poll() is not None or time.monotonic() > deadline:
            prometheus.stop()
            raise MonitorError(
                f"Prometheus did not start scraping every service; log {log}:\n{log_tail(log)}"
            )
        time.sleep(0.2)
    return prometheus


def panel_queries() -> list[tuple[str, list[str]]]:
    """Return each dashboard panel's title and queries."""
    path = _deploy_file(MONITORING / "grafana" / "plowline.json")
    panels = json.loads(path.read_text())["panels"]
    return [(p["title"], [t["expr"] for t in p.get("targets", [])]) for p in panels]


def alert_rules() -> list[tuple[str, str]]:
    """Return each alert of alerts.yaml with its expression."""
    groups = yaml.safe_load(_deploy_file(MONITORING / "alerts.yaml").read_text())["groups"]
    return [(r["alert"], r["expr"]) for g in groups for r in g["rules"] if "alert" in r]


def evaluate(prometheus: Prometheus) -> MonitorReport:
    """Evaluate every panel query and alert expression now; return what each gave."""
    watched = max(4 * SCRAPE_INTERVAL_S, math.ceil(time.monotonic() - prometheus.started))
    panels = []
    for title, queries in panel_queries():
        counted = []
        for expr in queries:
            result = prometheus.query(expr.replace("$__rate_interval", f"{watched}s"))
            counted.append((expr, sum(1 for s in result if _is_number(s["value"][1]))))
        panels.append(PanelResult(title, tuple(counted)))
    alerts = []
    for name, expr in alert_rules():
        holding = tuple(_labels(s["metric"]) for s in prometheus.query(expr))
        alerts.append(AlertResult(name, holding))
    return MonitorReport(tuple(panels), tuple(alerts))


def _is_number(value: str) -> bool:
    return not math.isnan(float(value))


def _labels(metric: Mapping[str, str]) -> str:
    shown = sorted((k, v) for k, v in metric.items() if k != "__name__")
    return "{" + ", ".join(f"{k}={v}" for k, v in shown) + "}"


def _scraped(prometheus: Prometheus) -> int:
    """Return how many jobs have been scraped at least once."""
    return len(prometheus.query("count by (job) (up)"))


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/-/ready", timeout=2.0) as reply:
            return int(reply.status) == 200
    except (OSError, urllib.error.URLError):
        return False


def _deploy_file(path: Path) -> Path:
    if not path.is_file():
        raise MonitorError(
            f"{path} not found: --monitor reads the repository's deploy/monitoring files, so "
            "run plowline from a clone (uv sync installs it from there)"
        )
    return path
