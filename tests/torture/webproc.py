"""Real `onthedot` processes for the web-security torture tests: `onthedot web` on a free
port (waited for with a deadline, never a sleep), and plain runs of other commands."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 60.0
APP = "tests.torture.web_app:app"


def clean_env(db_url: str, **extra: str) -> dict[str, str]:
    """The test's environment without any ONTHEDOT_WEB_* setting, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_WEB_")}
    env.update(ONTHEDOT_DATABASE_URL=db_url, PYTHONUNBUFFERED="1", **extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class WebProcess:
    proc: subprocess.Popen[bytes]
    url: str
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextmanager
def serve_web(
    db_url: str, tmp: Path, *args: str, host: str = "127.0.0.1", **env: str
) -> Iterator[WebProcess]:
    """`onthedot --app tests.web.devapp:app web --host HOST --port FREE ARGS`, up and
    answering; killed afterwards."""
    port = free_port()
    log = tmp / f"web-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "onthedot", "--app", APP, "web", "--host", host,
             "--port", str(port), *args],
            cwd=ROOT, env=clean_env(db_url, **env), stdout=out, stderr=out,
        )  # fmt: skip
    shown = f"[{host}]" if ":" in host else host
    web = WebProcess(proc, f"http://{shown}:{port}", log)
    try:
        deadline = time.monotonic() + DEADLINE
        while True:
            assert proc.poll() is None, f"onthedot web exited: {web.output()}"
            try:
                httpx.get(web.url + "/static/app.css", timeout=5)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"onthedot web did not answer: {web.output()}") from None
                time.sleep(0.05)
        yield web
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
