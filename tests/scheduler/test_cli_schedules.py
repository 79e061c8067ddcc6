"""The schedule commands of the CLI: list, history, explain, check, preview, and the worker
refusing to start on invalid schedules. The ledger is written by `onthedot.testing.tick` on an
app with a manual clock; the CLI loads the user's app module as it would in production."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from click.testing import CliRunner, Result

import onthedot.cli.jobs
import onthedot.cli.schedules  # noqa: F401  (registers the commands)
from onthedot.cli import cli
from onthedot.testing import tick
from tests.scheduler.helpers import MakeApp, utc

T0 = utc(2030, 1, 1)
ISO_Z = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"

MODULE = """
from onthedot import App

created = []


def declare(app):
    @app.job(name="work")
    def work(n: int = 0) -> int:
        return n

    app.schedule("ten", "every 10s", "work", catchup="all")
    app.schedule("nightly", "30 2 * * *", "work", timezone="America/New_York")


def build():
    app = App(log_events=False)
    declare(app)
    created.append(app)
    return app
"""

BAD_MODULE = """
from onthedot import App

app = App(log_events=False)


@app.job(name="work")
def work(n: int = 0) -> int:
    return n


app.schedule("dup", "every 10s", "work")
app.schedule("dup", "every 20s", "work")
app.schedule("bad-spec", "61 * * * *", "work")
app.schedule("bad-zone", "0 9 * * *", "work", timezone="Nowhere/Land")
app.schedule("never", "0 0 30 2 *", "work")
"""

WARN_MODULE = """
from onthedot import App

app = App(log_events=False)
app.job(name="work")(lambda: None)
app.schedule("never", "0 0 30 2 *", "work")
app.schedule("fine", "@daily", "work")
"""


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Write the app modules under unique names; close every app the CLI built."""
    monkeypatch.syspath_prepend(str(tmp_path))
    suffix = uuid.uuid4().hex[:8]
    names = {}
    for kind, text in (("good", MODULE), ("bad", BAD_MODULE), ("warn", WARN_MODULE)):
        name = f"onthedot_cli_{kind}_{suffix}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
        names[kind] = name
    importlib.invalidate_caches()
    yield names
    for name in names.values():
        module = sys.modules.pop(name, None)
        for app in getattr(module, "created", []):
            app.close()


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def good_module(modules: dict[str, str]) -> ModuleType:
    return importlib.import_module(modules["good"])


@pytest.fixture
def ticked(make_app: MakeApp, modules: dict[str, str], db_url: str) -> list[str]:
    """The good app's ledger after ticks at T0 (first sight) and T0+25s; the CLI's arguments."""
    app = make_app(T0)
    good_module(modules).declare(app)
    tick(app)
    tick(app, utc(2030, 1, 1, 0, 0, 25))
    return ["--app", f"{modules['good']}:build", "--database", db_url]


def test_list_json(ticked: list[str]) -> None:
    result = run(*ticked, "schedules", "list", "--json")
    assert result.exit_code == 0, result.output
    views: list[dict[str, Any]] = json.loads(result.stdout)
    assert [v["key"] for v in views] == ["nightly", "ten"]
    for v in views:
        for field in (
            "key",
            "spec",
            "description",
            "timezone",
            "source",
            "status",
            "next",
            "last_slot",
            "last_outcome",
            "missed",
            "coalesced",
        ):
            assert field in v, field
        assert v["source"] == "code" and v["status"] == "active"
        assert isinstance(v["description"], str) and v["description"]
        assert len(v["next"]) == 3
        for n in v["next"]:
            assert isinstance(n, str)
            assert n.endswith("Z")
    nightly, ten = views
    assert (nightly["spec"], nightly["timezone"], nightly["last_slot"]) == (
        "30 2 * * *",
        "America/New_York",
        None,
    )
    assert (ten["spec"], ten["timezone"]) == ("every 10s", "UTC")
    assert (ten["last_slot"], ten["last_outcome"]) == ("2030-01-01T00:00:20Z", "enqueued")
    assert (ten["missed"], ten["coalesced"]) == (0, 0)
    assert ten["next"][0] == "2030-01-01T00:00:30Z"  # after the cursor, which is ahead of now


def test_list_text(ticked: list[str]) -> None:
    result = run(*ticked, "schedules", "list")
    assert result.exit_code == 0, result.output
    assert "ten  [code, active]" in result.stdout
    assert "last: 2030-01-01T00:00:20Z enqueued  missed=0 coalesced=0" in result.stdout


def test_history_json(ticked: list[str]) -> None:
    result = run(*ticked, "schedules", "history", "ten", "--json")
    assert result.exit_code == 0, result.output
    records = json.loads(result.stdout)
    assert [set(r) for r in records] == [{"slot", "outcome", "job_id", "job_state"}] * 2
    assert [(r["slot"], r["outcome"], r["job_state"]) for r in records] == [
        ("2030-01-01T00:00:20Z", "enqueued", "queued"),
        ("2030-01-01T00:00:10Z", "enqueued", "queued"),
    ]
    assert all(isinstance(r["job_id"], int) for r in records)
    assert records[0]["job_id"] != records[1]["job_id"]
    empty = run(*ticked, "schedules", "history", "nightly", "--json")
    assert json.loads(empty.stdout) == []


def test_explain(ticked: list[str]) -> None:
    result = run(*ticked, "schedules", "explain", "ten")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("schedule 'ten'")
    assert "cursor:      2030-01-01T00:00:20Z" in text
    assert "matches the code" in text
    assert "2030-01-01T00:00:20Z  enqueued job" in text
    # No worker is alive here (the tick was driven by hand): the slot would not fire.
    assert "verdict: no live worker runs the scheduler, so it does not fire" in text
    missing = run(*ticked, "schedules", "explain", "no-such-key")
    assert missing.exit_code == 1
    assert "no schedule with key 'no-such-key'" in missing.output


def test_check_exit_codes(modules: dict[str, str]) -> None:
    ok = run("--app", f"{modules['good']}:build", "check")
    assert ok.exit_code == 0, ok.output
    assert "2 schedule(s) checked: 0 error(s), 0 warning(s)" in ok.stdout

    warn = run("--app", f"{modules['warn']}:app", "check")
    assert warn.exit_code == 0, warn.output
    assert "warning: schedule 'never':" in warn.stdout and "never fires" in warn.stdout

    bad = run("--app", f"{modules['bad']}:app", "check")
    assert bad.exit_code == 1
    for line in (
        "error: schedule 'dup': declared 2 times: keys must be unique",
        "error: schedule 'bad-spec':",
        "error: schedule 'bad-zone':",
        "warning: schedule 'never': spec '0 0 30 2 *' never fires",
        "5 schedule(s) checked: 3 error(s), 1 warning(s)",
    ):
        assert line in bad.stdout, line


def test_worker_refuses_to_start_on_invalid_schedules(
    modules: dict[str, str], tmp_path: Path, sqlite_url: str
) -> None:
    check = run("--app", f"{modules['bad']}:app", "check")
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "onthedot", "--app", f"{modules['bad']}:app"),
            *("--database", sqlite_url, "worker", "--burst"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert check.stdout.strip() in proc.stderr  # the same report as `onthedot check`
    assert "worker not started" in proc.stderr


def test_preview_json_across_a_gap() -> None:
    result = run(
        "preview",
        "30 2 * * *",
        "--timezone",
        "America/New_York",
        "--after",
        "2024-03-09T12:00:00Z",
        "--count",
        "3",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [
        "2024-03-10T07:00:00Z",  # 02:30 does not exist: 03:00 EDT
        "2024-03-11T06:30:00Z",
        "2024-03-12T06:30:00Z",
    ]


def test_preview_text_shows_local_times() -> None:
    result = run(
        "preview",
        "*/30 1 * * *",
        "--timezone",
        "America/New_York",
        "--after",
        "2024-11-03T04:00:00Z",
        "--count",
        "4",
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()[1:]
    assert [line.split("  ")[1] for line in lines] == [
        "Sun 2024-11-03 01:00:00 EDT",
        "Sun 2024-11-03 01:30:00 EDT",
        "Sun 2024-11-03 01:00:00 EST",
        "Sun 2024-11-03 01:30:00 EST",
    ]


def test_preview_rejects_a_bad_spec_and_zone() -> None:
    bad_spec = run("preview", "61 * * * *")
    assert bad_spec.exit_code == 1 and "Error:" in bad_spec.output
    bad_zone = run("preview", "@daily", "--timezone", "Nowhere/Land")
    assert bad_zone.exit_code == 1 and "Nowhere/Land" in bad_zone.output
