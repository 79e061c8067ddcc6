"""`onthedot worker` leaves without the interpreter's teardown (cli/exit.py), yet what the
teardown would have done for the user still happens: their atexit handlers run, buffered output
reaches the pipe, a non-daemon thread of theirs is waited for, and the exit status is kept. And
the command imports only what it needs: a worker on SQLite never imports asyncio."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ONTHEDOT = str(Path(sys.executable).parent / "onthedot")

APP = """
import atexit, os, pathlib, sys, threading, time
import onthedot

app = onthedot.App()
out = pathlib.Path(__file__).parent

@app.job(name="hello")
def hello() -> None:
    print("printed by the job")  # stdout is a pipe: block-buffered, flushed only at exit

atexit.register(lambda: (out / "atexit-ran").write_text("yes"))
atexit.register(lambda: (out / "asyncio").write_text(str("asyncio" in sys.modules)))

def late() -> None:
    time.sleep(0.5)
    (out / "thread-done").write_text("yes")

if os.environ.get("EXITAPP_THREAD"):
    threading.Thread(target=late).start()  # non-daemon: the exit has to wait for it
"""


def run(tmp_path: Path, thread: bool = False) -> subprocess.CompletedProcess[str]:
    (tmp_path / "exitapp.py").write_text(APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    env["PYTHONPATH"] = str(tmp_path)
    if thread:
        env["EXITAPP_THREAD"] = "1"
    db = f"sqlite:///{tmp_path / 'jobs.db'}"
    base = [ONTHEDOT, "--app", "exitapp:app", "--database", db]
    subprocess.run([*base, "enqueue", "hello"], env=env, check=True, capture_output=True)
    return subprocess.run(
        [*base, "worker", "--burst"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_worker_exit_runs_atexit_and_flushes_output(tmp_path: Path) -> None:
    result = run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "printed by the job" in result.stdout
    assert "1 attempt(s) ran: 1 succeeded" in result.stderr
    assert (tmp_path / "atexit-ran").read_text() == "yes"


def test_a_sqlite_worker_does_not_import_asyncio(tmp_path: Path) -> None:
    """asyncio costs ~50 ms of every start where the driver does not import it anyway (SQLite);
    only the async API needs it, and a running event loop has imported it already."""
    result = run(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "1 attempt(s) ran: 1 succeeded" in result.stderr
    assert (tmp_path / "asyncio").read_text() == "False"


def test_worker_exit_waits_for_a_non_daemon_thread(tmp_path: Path) -> None:
    result = run(tmp_path, thread=True)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "thread-done").read_text() == "yes"
    assert (tmp_path / "atexit-ran").read_text() == "yes"


@pytest.mark.parametrize(("code", "status", "stderr"), [("3", 3, ""), ("'bad input'", 1, "bad")])
def test_fast_exit_keeps_the_status(code: str, status: int, stderr: str) -> None:
    script = (
        "from onthedot.cli.exit import exit_fast_when_done, finish\n"
        f"exit_fast_when_done()\nprint('out', end='')\nfinish({code})\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == status
    assert result.stdout == "out"
    assert stderr in result.stderr
