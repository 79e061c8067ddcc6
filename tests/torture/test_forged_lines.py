"""Issue 24 item 4: an untrusted string printed to a terminal or a log shows its control
characters escaped and stays on its one line. Real processes: a Basic-auth user name sent to
a real `onthedot web` (no credentials needed), an operator's note in `onthedot schedules
audit` (both databases), a job's error in a real worker's log (text and JSON)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from onthedot import App
from tests.torture.harness import wait_for
from tests.torture.webproc import ROOT, clean_env, serve_web

# A carriage return and an escape sequence that would wipe the line, a newline starting a
# forged entry, a line separator and a right-to-left override.
FORGED = "x\r\x1b[2K\nWARNING onthedot event=forged user=root\u2028\u202eevil"
RAW = ("\r", "\x1b", "\u2028", "\u202e")


def _assert_one_line_each(text: str, marker: str) -> list[str]:
    """The lines holding `marker`: exactly one, no raw control character in the output, no
    line beginning with the forged entry."""
    assert not [c for c in RAW if c in text], repr(text[-2000:])
    lines = text.split("\n")
    assert not [line for line in lines if line.startswith("WARNING onthedot event=forged")]
    found = [line for line in lines if marker in line]
    assert len(found) == 1, found
    return found


def test_a_login_user_name_cannot_forge_log_lines(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/forged.db"
    App(url, log_events=False).migrate()
    env = {"ONTHEDOT_WEB_USER": "ann", "ONTHEDOT_WEB_PASSWORD": "right-horse"}
    with serve_web(url, tmp_path, **env) as web:
        basic = base64.b64encode(f"{FORGED}:wrong".encode()).decode()
        reply = httpx.get(web.url + "/", headers={"Authorization": f"Basic {basic}"}, timeout=10)
        assert reply.status_code == 401
        wait_for(lambda: "event=web_login_failed" in web.output(), "the web_login_failed line")
        text = web.log.read_bytes().decode("utf-8")
    [line] = _assert_one_line_each(text, "event=web_login_failed")
    assert 'user="x\\r\\x1b[2K\\nWARNING onthedot event' in line, line
    assert "\\u2028\\u202eevil" in line


def test_an_operator_note_cannot_forge_audit_entries(db_url: str, tmp_path: Path) -> None:
    app = App(db_url, log_events=False)
    app.migrate()
    app.job(name="work", runtime=True)(lambda: None)
    app.schedules.create("nightly", "every 1h", "work", actor="alice")
    app.schedules.pause("nightly", note=FORGED, actor="alice")
    app.close()
    done = subprocess.run(
        [sys.executable, "-m", "onthedot", "schedules", "audit"],
        cwd=ROOT,
        env=clean_env(db_url),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("utf-8")
    lines = text.splitlines()
    assert len(lines) == 3, lines  # the header, `paused`, `created`
    [paused] = _assert_one_line_each(text, "paused")
    shown = "x\\r\\x1b[2K\\nWARNING onthedot event=forged user=root\\u2028\\u202eevil"
    assert paused.endswith(shown), paused


APP_SOURCE = """
import onthedot

app = onthedot.App()


@app.job(name="forge", max_attempts=1)
def forge(text: str) -> None:
    raise RuntimeError(text)
"""


def _path(folder: Path) -> str:
    return os.pathsep.join([str(folder), *filter(None, [os.environ.get("PYTHONPATH")])])


def test_a_job_error_cannot_forge_worker_log_lines(sqlite_url: str, tmp_path: Path) -> None:
    (tmp_path / "forgeapp.py").write_text(APP_SOURCE)
    app = App(sqlite_url, log_events=False)
    app.migrate()
    app.job(name="forge", max_attempts=1)(lambda text: None)
    app.resolve("forge").enqueue(FORGED)
    app.close()
    for log_format in ("text", "json"):
        done = subprocess.run(
            [sys.executable, "-m", "onthedot", "--app", "forgeapp:app", "--log-format",
             log_format, "worker", "--burst"],
            cwd=tmp_path, env={**clean_env(sqlite_url), "PYTHONPATH": _path(tmp_path)},
            capture_output=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        text = (done.stdout + done.stderr).decode("utf-8")
        [line] = _assert_one_line_each(text, "job_failed")
        if log_format == "json":
            assert json.loads(line)["error"] == f"RuntimeError: {FORGED}"
        else:
            assert "\\r\\x1b[2K\\nWARNING onthedot event=forged" in line, line
        app = App(sqlite_url, log_events=False)
        [job] = app.list_jobs(name="forge")
        app.retry_job(job.id)  # for the next format
        app.close()
    shown = subprocess.run(
        [sys.executable, "-m", "onthedot", "jobs", "show", str(job.id)],
        cwd=ROOT, env=clean_env(sqlite_url), capture_output=True, timeout=120,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    # The fields, above the traceback (a traceback is lines of its own: the message's
    # newline is one of them, its other control characters escaped).
    text = shown.stdout.decode("utf-8").partition("traceback:")[0]
    assert not [line for line in text.split("\n") if line.startswith("WARNING onthedot")]
    [error] = [line for line in text.split("\n") if line.startswith("error: ")]
    assert error == "error: RuntimeError: x\\r\\x1b[2K\\nWARNING onthedot event=forged " + (
        "user=root\\u2028\\u202eevil"
    ), error
    assert not [c for c in RAW if c in shown.stdout.decode("utf-8")], text


def test_a_job_name_with_a_control_character_is_refused(sqlite_url: str) -> None:
    app = App(sqlite_url, log_events=False)
    try:
        app.job(name="mail.send\nERROR forged")(lambda: None)
    except ValueError as exc:
        assert str(exc) == (
            "job name 'mail.send\\nERROR forged' contains the control character '\\n': "
            "use printable characters only"
        )
    else:
        raise AssertionError("registered")
