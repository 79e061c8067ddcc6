"""Text fields follow one rule on both databases (issue 12, item 15): no NUL and no lone
surrogate in any stored text, no control character in keys and queue names; each refusal is
one line naming the field, and nothing is stored.

Through the real `onthedot` command (raw argv bytes: a newline that would forge an `Error:`
line in `schedules list`, an escape sequence, undecodable bytes) and through the API for NUL
(argv cannot carry one), on SQLite and PostgreSQL.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from onthedot import App, JobFilter
from onthedot.domain.errors import ScheduleError
from tests.torture.chaos_app import make_app
from tests.torture.harness import ROOT, worker_env

BAD_UTF8 = b"bad\xff\xfe"


@pytest.fixture
def client(db_url: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.chdir(str(tmp_path))
    app = make_app(db_url, log_events=False)
    app.migrate()
    app.schedules.create("fine", "every 1h", "chaos.work", args=[1])
    yield app
    app.close()


def onthedot(url: str, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    argv = [sys.executable, "-m", "onthedot", "--app", "tests.torture.chaos_app:app", *args]
    return subprocess.run(argv, cwd=ROOT, env=worker_env(url), capture_output=True, timeout=60)


def _refused(done: subprocess.CompletedProcess[bytes], field: str) -> str:
    err = done.stderr.decode(errors="replace")
    assert done.returncode in (1, 2), (done.stdout, err)
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert field in lines[0], (field, lines[0])
    return lines[0]


def test_cli_text_fields(client: App, db_url: str, record_result: dict[str, object]) -> None:
    jobs_before = client.storage.count_jobs(JobFilter())
    create = ("schedules", "create")
    spec = ("every 1h", "chaos.work", "--args", "[1]")
    refused = {
        "newline key": _refused(onthedot(db_url, *create, "x\nError: fake", *spec), "key"),
        "escape key": _refused(onthedot(db_url, *create, "x\x1b[31mred", *spec), "key"),
        "undecodable key": _refused(onthedot(db_url, *create, BAD_UTF8, *spec), "key"),
        "undecodable note": _refused(
            onthedot(db_url, "schedules", "pause", "fine", "--note", BAD_UTF8), "note"
        ),
        "newline queue": _refused(
            onthedot(db_url, "enqueue", "chaos.work", "--args", "[1]", "--queue", "q\nx"), "queue"
        ),
        "undecodable unique_key": _refused(
            onthedot(db_url, "enqueue", "chaos.work", "--args", "[1]", "--unique-key", BAD_UTF8),
            "unique_key",
        ),
    }
    listed = onthedot(db_url, "schedules", "list")
    assert listed.returncode == 0, listed.stderr
    out = listed.stdout.decode(errors="replace")
    assert not any(line.startswith("Error:") for line in out.splitlines()), out
    keys = {s["key"] for s in client.schedules.list()}
    assert keys == {"fine"} | set(client.schedules.declared()), keys
    assert client.storage.count_jobs(JobFilter()) == jobs_before
    assert client.schedules.get("fine")["paused"] is False
    record_result.update(backend=db_url.split(":")[0], refused=refused)


def test_api_nul_and_surrogates(client: App) -> None:
    work = client.jobs["chaos.work"]
    cases = {
        "queue": lambda v: work.enqueue_with([1], {}, queue=v),
        "unique_key": lambda v: work.enqueue_with([1], {}, unique_key=v),
        "key": lambda v: client.schedules.create(v, "every 1h", "chaos.work", args=[1]),
        "note": lambda v: client.schedules.pause("fine", note=v),
        "actor": lambda v: client.schedules.resume("fine", actor=v),
    }
    for field, call in cases.items():
        for value in ("a\x00b", "a\ud800b"):
            with pytest.raises((ValueError, ScheduleError)) as caught:
                call(value)
            message = str(caught.value)
            assert field in message and "\n" not in message, (field, message)
            assert ("NUL" if "\x00" in value else "lone surrogate") in message, message
    update = client.schedules.update
    with pytest.raises(ScheduleError, match="queue"):
        update("fine", queue="q\x00")
    assert client.storage.count_jobs(JobFilter()) == 0
    assert client.schedules.get("fine")["paused"] is False
    assert {a.action for a in client.schedules.audit()} == {"created"}
