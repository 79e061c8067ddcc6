"""Hostile strings in every CLI filter and option, on both backends: HTML, SQL fragments, LIKE
wildcards, backslashes and quotes, 100 000 characters, NUL, bidi controls, emoji, newlines, and
invalid UTF-8 (as Python hands undecodable argv bytes over: lone surrogates). Each command ends
in a clean error (one line, or a usage error) or a correct result (empty, or exactly the seeded
job that holds that very string), never a traceback; and the database is intact afterwards.

In-process (click's CliRunner) for the many combinations, plus real processes given raw
invalid UTF-8 bytes in argv. The web admin's own hostile-input tests live in tests/web.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from onthedot import App, JobFilter
from tests.torture import clitools
from tests.torture.chaos_app import make_app
from tests.torture.clitools import clean, one_line_error, run
from tests.torture.harness import ROOT

HOSTILE = {
    "html": "<script>alert('x')</script><b>&amp;</b>",
    "sql": "'; DROP TABLE onthedot_jobs; --",
    "sql_or": '" OR 1=1 --',
    "like": "%_%",
    "escapes": "\\'\\\"\\\\ \\u0000",
    "long": "A" * 100_000,
    "nul": "nul\x00byte",
    "bidi": "\u202eevil\u200b",
    "emoji": "😀" * 300,
    "newlines": "line1\nline2\r\nError: fake",
    "format": "%s %d {0} {name} $1",
    "invalid_utf8": os.fsdecode(b"bad\xff\xfeutf8"),
}
STORABLE = [k for k in HOSTILE if k not in ("nul", "invalid_utf8")]  # valid JSON text anywhere


@pytest.fixture
def seeded(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    """An app whose database holds a few plain jobs and one in a queue named with HTML."""
    monkeypatch.chdir(tmp_path)  # a default sqlite:///onthedot.db lands here, never in the repo
    app = make_app(db_url, log_events=False)
    app.migrate()
    work = app.jobs["chaos.work"]
    work.enqueue_many([[1], [2], [3]])
    work.enqueue_with([4], {}, queue="<i>q</i>")
    yield app
    clitools.close_opened()
    app.close()


def _snapshot(app: App) -> list[tuple[int, str, str, object]]:
    return [(j.id, j.state.value, j.queue, j.args) for j in app.list_jobs(limit=10_000)]


def test_hostile_job_filters(seeded: App, db_url: str) -> None:
    before = _snapshot(seeded)
    for key, value in HOSTILE.items():
        _filters(db_url, key, value)
    assert _snapshot(seeded) == before


def _filters(db_url: str, key: str, value: str) -> None:
    result = run("jobs", "list", "--state", value, database=db_url)
    assert "unknown state" in one_line_error(result) or result.exit_code == 2
    for option in ("--queue", "--name", "--schedule", "--search"):
        for extra in ([], ["--json"]):
            result = clean(run("jobs", "list", option, value, *extra, database=db_url))
            if result.exit_code:
                one_line_error(result)  # a clean refusal (e.g. text the database cannot hold)
            elif extra:
                assert json.loads(result.output) == [], (key, option, result.output[:300])
            else:
                assert len(result.output.splitlines()) == 1, (key, option, result.output[:300])


def test_search_finds_exactly_the_job_holding_the_string(seeded: App, db_url: str) -> None:
    work = seeded.jobs["chaos.work"]
    ids = {key: work.enqueue_with([HOSTILE[key], 0, 0]) for key in STORABLE}
    ids["plain"] = work.enqueue_with(["plain", 0, 0])
    for key in STORABLE:
        result = clean(run("jobs", "list", "--search", HOSTILE[key], "--json", database=db_url))
        found = {job["id"] for job in json.loads(result.output)}
        assert ids[key] in found, key
        assert ids["plain"] not in found, key  # no wildcard, no injection
    result = run("jobs", "list", "--queue", "<i>q</i>", "--json", database=db_url)
    assert {j["queue"] for j in json.loads(clean(result).output)} == {"<i>q</i>"}


def test_hostile_enqueue_names_arguments_and_options(seeded: App, db_url: str) -> None:
    for key, value in HOSTILE.items():
        _enqueue(seeded, db_url, key, value)


def _enqueue(seeded: App, db_url: str, key: str, value: str) -> None:
    before = seeded.storage.count_jobs(JobFilter())
    assert "no job named" in one_line_error(run("enqueue", value, database=db_url))
    one_line_error(run("enqueue", "chaos.work", "--args", value, database=db_url))
    one_line_error(
        run("enqueue", "chaos.work", "--args", "[1]", "--kwargs", value, database=db_url)
    )
    one_line_error(run("enqueue", "chaos.work", "--args", "[1]", "--delay", value, database=db_url))
    one_line_error(run("enqueue", "chaos.work", "--args", "[1]", "--priority", value))
    stored = 0
    for option in ("--queue", "--unique-key"):
        result = clean(
            run("enqueue", "chaos.work", "--args", "[1]", option, value, database=db_url)
        )
        if result.exit_code:
            one_line_error(result)
        else:
            stored += 1
            job = seeded.get_job(int(result.output.strip()))
            assert job is not None
            assert (job.queue if option == "--queue" else job.unique_key) == value, key
    as_args = clean(run("enqueue", "chaos.work", "--args", json.dumps([value]), database=db_url))
    if key in STORABLE:
        job = seeded.get_job(int(as_args.output.strip()))
        assert job is not None and job.args == [value], f"{key}: stored exactly as given"
        stored += 1
    else:
        assert "Error:" in one_line_error(as_args)
    assert seeded.storage.count_jobs(JobFilter()) == before + stored


def test_hostile_schedule_keys_specs_and_zones(seeded: App, db_url: str) -> None:
    before = _snapshot(seeded)
    for value in HOSTILE.values():
        _schedules(db_url, value)
    assert _snapshot(seeded) == before


def _schedules(db_url: str, value: str) -> None:
    one_line_error(run("schedules", "explain", value, database=db_url))
    history = clean(run("schedules", "history", value, database=db_url))
    if history.exit_code:
        one_line_error(history)
    else:
        assert history.output.startswith("no slot history for")
    for args in (("pause", value), ("resume", value), ("skip", value)):
        one_line_error(run("schedules", *args, database=db_url))
    one_line_error(run("preview", value, app=False))
    one_line_error(run("preview", "*/5 * * * *", "--timezone", value, app=False))
    one_line_error(run("preview", "every 1s", "--after", value, app=False))
    one_line_error(run("jobs", "show", value, database=db_url))


def test_raw_invalid_utf8_bytes_in_argv(seeded: App, db_url: str) -> None:
    """Real processes: the kernel hands over bytes that are not UTF-8."""
    bad = b"\xff\xfe<b>'; DROP TABLE onthedot_jobs; --\x80"
    base = [sys.executable.encode(), b"-m", b"onthedot", b"--database", db_url.encode()]
    app_option = [b"--app", clitools.APP.encode()]
    env = {
        k: v for k, v in os.environ.items() if k not in ("ONTHEDOT_APP", "ONTHEDOT_DATABASE_URL")
    }
    before = _snapshot(seeded)
    for argv in (
        [*base, b"jobs", b"list", b"--search", bad],
        [*base, b"jobs", b"list", b"--queue", bad, b"--json"],
        [*base, *app_option, b"enqueue", bad],
        [*base, *app_option, b"enqueue", b"chaos.work", b"--args", bad],
        [*base, *app_option, b"schedules", b"history", bad],
        [*base, b"preview", bad, b"--timezone", bad],
    ):
        result = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, timeout=120)
        stderr = result.stderr.decode(errors="replace")
        assert b"Traceback" not in result.stderr + result.stdout, stderr
        assert result.returncode in (0, 1, 2), (argv, result.returncode, stderr)
        if result.returncode:
            assert len([x for x in stderr.splitlines() if x.startswith("Error")]) == 1, stderr
    assert _snapshot(seeded) == before
    health = run("health", database=db_url, app=False)
    assert health.exit_code == 0, health.output
