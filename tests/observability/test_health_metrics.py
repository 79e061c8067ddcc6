"""Schedule health as Prometheus metrics, through prometheus_client and the web admin's own
exposition alike, and the shipped rules: `promtool check rules` and `promtool test rules`, with
every metric they read present in what onthedot exposes."""

from __future__ import annotations

import re
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest

from onthedot import App, ManualClock
from onthedot.observability.metrics_health import health_families, text_exposition
from onthedot.testing import check_health, tick
from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus"
prom = pytest.importorskip("onthedot.observability.metrics")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if IN_CI:
            pytest.fail("promtool is required under CI=true")
        pytest.skip("promtool not installed")
    return found


def late_app(db_url: str) -> App:
    app = App(db_url, clock=ManualClock("2030-01-01T00:00:00Z"), log_events=False)

    @app.job(name="work")
    def work() -> None: ...

    app.schedule("nightly", "every 60s", work, grace="10s")
    app.migrate()
    tick(app)
    clock = app.clock
    assert isinstance(clock, ManualClock)
    check_health(app, clock.now() + timedelta(seconds=71))
    return app


def test_both_expositions_carry_the_same_health_metrics(db_url: str) -> None:
    app = late_app(db_url)
    try:
        body = prom.render(app).decode()
        for line in (
            'onthedot_schedule_problem{cause="no_live_worker",kind="late",schedule="nightly"} 1.0',
            'onthedot_schedule_problems{kind="late"} 1.0',
            'onthedot_schedule_problems{kind="failed"} 0.0',
            'onthedot_schedule_lateness_seconds{schedule="nightly"} 11.0',
            'onthedot_schedule_grace_seconds{schedule="nightly"} 10.0',
            'onthedot_schedule_period_seconds{schedule="nightly"} 60.0',
        ):
            assert line in body
        plain = text_exposition(health_families(app.health.report()))
        for line in plain:
            if not line.startswith("#"):
                name_labels, value = line.rsplit(" ", 1)
                assert any(
                    row.startswith(name_labels.split("{")[0]) and row.endswith(value)
                    for row in body.splitlines()
                ), line
    finally:
        app.close()


def test_the_rules_read_only_metrics_onthedot_exposes(db_url: str) -> None:
    app = late_app(db_url)
    try:
        body = prom.render(app).decode()
    finally:
        app.close()
    exposed = set(re.findall(r"^# TYPE (onthedot_\w+) ", body, re.M))
    rules = (RULES / "onthedot-alerts.yml").read_text()
    used = set(re.findall(r"\b(onthedot_\w+)", rules))
    assert used and used <= exposed, used - exposed


def test_promtool_checks_and_unit_tests_the_rules() -> None:
    tool = promtool()
    check = subprocess.run(
        [tool, "check", "rules", str(RULES / "onthedot-alerts.yml")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS: 8 rules found" in check.stdout
    tests = subprocess.run(
        [tool, "test", "rules", "onthedot-alerts.test.yml"],
        cwd=RULES, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout + tests.stderr
