"""`onthedot import-beat` against a real Celery app object (no broker needed): the printed
lines declare valid onthedot schedules, and what has no equivalent is flagged one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("celery")

from click.testing import CliRunner

import onthedot
from onthedot.cli.main import cli

TASKS = ("proj.tasks.report", "proj.tasks.poll", "proj.tasks.ping", "proj.tasks.sync")


def run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "celery_project"))
    result = CliRunner().invoke(cli, ["import-beat", "beatconf:app"])
    assert result.exit_code == 0, result.output
    return result.output.splitlines()


def test_lines_and_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = run(monkeypatch)
    assert (
        "app.schedule('report', '0 2 * * *', 'proj.tasks.report', args=['daily', 3], "
        "kwargs={'fmt': 'pdf'}, timezone='Europe/Paris', queue='reports')"
    ) in lines
    assert (
        "app.schedule('office-hours', '*/15 9-17 * * mon-fri', 'proj.tasks.poll', "
        "timezone='Europe/Paris')"
    ) in lines
    assert "app.schedule('heartbeat', 'every 30s', 'proj.tasks.ping')" in lines
    assert "app.schedule('sync', 'every 90m', 'proj.tasks.sync')" in lines
    assert "app.schedule('hourly', 'every 2h', 'proj.tasks.ping')" in lines
    assert "app.schedule('priority', 'every 1m', 'proj.tasks.ping', priority=9)" in lines
    flags = [line for line in lines if line.startswith(("# SKIPPED", "# NOTE"))]
    assert len(flags) == 6
    text = "\n".join(flags)
    assert "# SKIPPED 'sunrise': solar schedule ('sunrise') has no equivalent" in text
    assert "# SKIPPED 'custom': custom schedule class Every5Minutes has no equivalent" in text
    assert "# NOTE 'sync': relative=True" in text
    assert "# NOTE 'report': option 'expires'=600 has no equivalent" in text
    assert "# NOTE 'first-monday': day_of_month and day_of_week both set" in text
    assert "# NOTE 'priority': priority carried as is" in text


def test_printed_lines_declare_valid_schedules(monkeypatch: pytest.MonkeyPatch) -> None:
    app = onthedot.App("sqlite:///:memory:", log_events=False)
    for name in TASKS:
        app.job(name=name)(lambda *a, **k: None)
    code = "\n".join(line for line in run(monkeypatch) if line.startswith("app.schedule("))
    exec(code, {"app": app})
    assert app.schedules.check().ok, app.schedules.check().render()
    assert len(app.schedules.registry.declared()) == 7


def test_not_a_celery_app() -> None:
    result = CliRunner().invoke(cli, ["import-beat", "json:dumps"])
    assert result.exit_code == 2 and "names no Celery app" in result.output


def run_names(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "celery_project"))
    result = CliRunner().invoke(cli, ["import-beat", "beat_names:app"])
    assert result.exit_code == 0, result.output
    return result.output


def test_day_and_month_names_become_ones_check_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = run_names(monkeypatch).splitlines()
    assert "app.schedule('sundays', '0 * * * sun', 'proj.tasks.ping')" in lines
    assert "app.schedule('two-days', '0 9 * * mon,fri', 'proj.tasks.ping')" in lines
    assert "app.schedule('midweek', '0 * * * tue-thu', 'proj.tasks.ping')" in lines
    assert "app.schedule('new-year', '0 0 1 jan *', 'proj.tasks.ping')" in lines


def test_relative_interval_is_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = run_names(monkeypatch).splitlines()
    assert "# NOTE 'aligned': relative=True (intervals aligned to the period) has no " in "\n".join(
        lines
    )
    assert "app.schedule('aligned', 'every 1h', 'proj.tasks.ping')" in lines


def test_output_is_python_no_entry_can_break_out_of(monkeypatch: pytest.MonkeyPatch) -> None:
    """A newline in an entry name or an option key stays inside its comment or its repr: the
    whole output, pasted as it is, only declares schedules."""
    import ast
    import builtins

    output = run_names(monkeypatch)
    tree = ast.parse(output)
    calls = [
        stmt
        for stmt in tree.body
        if isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and ast.unparse(stmt.value.func) == "app.schedule"
    ]
    assert len(calls) == len(tree.body) == 7, output
    for line in output.splitlines():
        assert line.startswith(("#", "app.schedule(")), line
    app = onthedot.App("sqlite:///:memory:", log_events=False)
    app.job(name="proj.tasks.ping")(lambda *a, **k: None)
    exec(output, {"app": app})
    assert not hasattr(builtins, "ONTHEDOT_PWNED")
    # The key came through as the string it was; onthedot's own check refuses its newline.
    problems = app.schedules.check().problems
    assert [p.key for p in problems] == ["name\nimport builtins; builtins.ONTHEDOT_PWNED = True\n"]
    assert "control character" in problems[0].message
