"""Job ids no database column can hold (issue 12, item 13), through the real `onthedot`
command on both backends: `jobs show|retry|cancel` of 99999999999999999999 answer "no job with
id ..." in one line, and `jobs list --before-id` with such a number lists (or finds nothing)
instead of an `OverflowError` traceback.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from onthedot import App
from tests.torture.chaos_app import make_app
from tests.torture.harness import ROOT, worker_env

HUGE = "99999999999999999999"


@pytest.fixture
def seeded(db_url: str) -> Iterator[App]:
    app = make_app(db_url, log_events=False)
    app.migrate()
    app.jobs["chaos.work"].enqueue_many([[1], [2]])
    yield app
    app.close()


def onthedot(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "onthedot", "--database", url, *args]
    return subprocess.run(
        command, cwd=ROOT, env=worker_env(url), capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("number", [HUGE, "-" + HUGE, "9223372036854775808"])
def test_ids_beyond_any_column(
    seeded: App, db_url: str, number: str, record_result: dict[str, object]
) -> None:
    answers = {}
    for verb in ("show", "retry", "cancel"):
        done = onthedot(db_url, "jobs", verb, "--", number)
        assert done.returncode == 1, (verb, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        assert done.stderr.strip() == f"Error: no job with id {number}", (verb, done.stderr)
        answers[verb] = done.stderr.strip()
    listed = onthedot(db_url, "jobs", "list", "--json", f"--before-id={number}")
    assert listed.returncode == 0, listed.stderr
    assert "Traceback" not in listed.stderr
    ids = sorted(j["id"] for j in __import__("json").loads(listed.stdout))
    assert ids == ([] if number.startswith("-") else [1, 2]), listed.stdout
    record_result.update(backend=db_url.split(":")[0], number=number, answers=answers)
