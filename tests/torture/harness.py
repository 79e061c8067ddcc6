"""Real worker processes for the torture tests, the chaos log, and the producer.

Workers run `python -m onthedot --app tests.torture.chaos_app:app worker`, each with its output
in a log file. Every start and kill goes into a `ChaosLog` (wall-clock times), from which
`alive_spans` derives when at least one worker was up.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import pytest

from onthedot import App
from onthedot.domain.errors import OnthedotError
from tests import waiting

ROOT = Path(__file__).resolve().parents[2]
APP = "tests.torture.chaos_app:app"
DEADLINE = 60.0


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
    """Poll `predicate` every 50 ms until it is truthy; fail the test after `timeout`."""
    return waiting.wait_for(predicate, what, timeout, every=0.05)


def worker_env(url: str, *, lease: float = 2.0, offset: float = 0.0) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("ONTHEDOT_APP", None)
    env.update(
        ONTHEDOT_DATABASE_URL=url,
        ONTHEDOT_TEST_LEASE=str(lease),
        ONTHEDOT_TEST_CLOCK_OFFSET=str(offset),
        PYTHONUNBUFFERED="1",
    )
    return env


@dataclass
class Proc:
    popen: subprocess.Popen[bytes]
    log: Path
    handle: IO[bytes]
    offset: float
    started: float  # wall clock
    ended: float | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        return self.popen.poll() is None


@dataclass
class ChaosLog:
    """What the chaos loop did, with wall-clock times."""

    events: list[tuple[float, str, int]] = field(default_factory=list)

    def add(self, what: str, pid: int = 0) -> None:
        self.events.append((time.time(), what, pid))

    def dump(self, path: Path) -> None:
        """Write the log as lines `ISO-time what pid` (kept next to the worker logs)."""
        lines = [f"{datetime.fromtimestamp(t, UTC).isoformat()} {w} {p}" for t, w, p in self.events]
        path.write_text("\n".join(lines) + "\n")

    def count(self, what: str) -> int:
        return sum(1 for _, w, _ in self.events if w == what)


class Fleet:
    """Worker processes on one database; every one still running is killed at teardown."""

    def __init__(
        self, url: str, tmp: Path, chaos: ChaosLog, *, lease: float = 2.0, app: str = APP
    ) -> None:
        self.url = url
        self.app = app
        self.tmp = tmp
        self.chaos = chaos
        self.lease = lease
        self.procs: list[Proc] = []

    def start(self, *args: str, offset: float = 0.0, env: dict[str, str] | None = None) -> Proc:
        log = self.tmp / f"worker-{len(self.procs)}.log"
        handle = log.open("wb")
        command = [sys.executable, "-m", "onthedot", "--app", self.app, "worker", "-c", "4"]
        command += ["--processes", "1", *args]
        popen = subprocess.Popen(
            command,
            cwd=ROOT,
            env={**worker_env(self.url, lease=self.lease, offset=offset), **(env or {})},
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        proc = Proc(popen, log, handle, offset, time.time())
        self.procs.append(proc)
        self.chaos.add("start", proc.pid)
        return proc

    def wait_started(self, proc: Proc, timeout: float = DEADLINE) -> None:
        """Wait until the worker logged `event=worker_started` (connected, threads running)."""

        def started() -> bool:
            if not proc.alive():
                pytest.fail(f"worker {proc.pid} exited early:\n{proc.output()[-3000:]}")
            return "event=worker_started" in proc.output()

        wait_for(started, f"worker {proc.pid} to start", timeout)

    def running(self) -> list[Proc]:
        return [p for p in self.procs if p.ended is None and p.alive()]

    def kill(self, proc: Proc) -> None:
        proc.popen.send_signal(signal.SIGKILL)
        proc.popen.wait(30)
        proc.ended = time.time()
        self.chaos.add("kill", proc.pid)

    def final_drain(self, unfinished: Callable[[], int]) -> None:
        """After `stop_all`: slot jobs enqueued by the last ticks before the stop stay queued,
        as they should; one worker without a scheduler (nothing new is enqueued) runs them and
        whatever else is left, then stops."""
        self.start("--no-scheduler")
        wait_for(lambda: unfinished() == 0, "the final drain", 90)
        self.stop_all()

    def stop_all(self, timeout: float = DEADLINE) -> None:
        """SIGTERM every running worker and wait: each must exit 0 (graceful)."""
        procs = self.running()
        for proc in procs:  # a worker that has not yet installed its handlers dies of SIGTERM
            self.wait_started(proc)
            proc.popen.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                code = proc.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                pytest.fail(f"worker {proc.pid} ignored SIGTERM for {timeout}s:\n{proc.output()}")
            proc.ended = time.time()
            self.chaos.add("stop", proc.pid)
            assert code == 0, f"worker {proc.pid} exited {code}:\n{proc.output()[-3000:]}"

    def killed_pids(self) -> set[int]:
        return {pid for _, what, pid in self.chaos.events if what == "kill"}

    def alive_spans(self, ready: dict[int, float]) -> list[tuple[float, float]]:
        """Wall-clock spans when at least one worker was up: from the moment it recorded itself
        ready (`ready`: pid -> time) until it was killed or stopped."""
        now = time.time()
        spans = sorted((ready[p.pid], p.ended or now) for p in self.procs if p.pid in ready)
        merged: list[tuple[float, float]] = []
        for start, end in spans:
            if start >= end:
                continue
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

    def logs(self) -> str:
        return "\n".join(p.output() for p in self.procs)

    def close(self) -> None:
        for proc in self.procs:
            if proc.alive():
                proc.popen.kill()
                proc.popen.wait(30)
            proc.handle.close()


class Producer(threading.Thread):
    """Enqueues a steady stream of `chaos.work` jobs until stopped. Some fail once or twice and
    are retried, a few always fail, some run long (so kills catch them mid-run). An enqueue
    that raises (the database went away) is retried with the same unique key, and its n is
    noted as ambiguous: it may have committed before the error."""

    def __init__(self, client: App, seed: int, every: float = 0.1) -> None:
        super().__init__(name="torture-producer", daemon=True)
        self.client = client
        self.rng = random.Random(seed)
        self.every = every
        self.produced: dict[int, int] = {}
        self.ambiguous: set[int] = set()
        self.errors: list[str] = []
        self.halt = threading.Event()

    def _job(self) -> tuple[int, int]:
        roll = self.rng.random()
        if roll < 0.15:
            return self.rng.randint(1, 2), self.rng.randint(20, 200)  # fails, then succeeds
        if roll < 0.20:
            return 99, 20  # always fails
        if roll < 0.40:
            return 0, self.rng.randint(800, 2500)  # long: likely to be killed mid-run
        return 0, self.rng.randint(10, 200)

    def run(self) -> None:
        n = 0
        work = self.client.jobs["chaos.work"]
        while not self.halt.is_set():
            fail_times, ms = self._job()
            while True:
                try:
                    self.produced[n] = work.enqueue(n, fail_times, ms, unique_key=f"n{n}")
                    break
                except OnthedotError as exc:
                    self.ambiguous.add(n)
                    self.errors.append(str(exc))
                    time.sleep(0.2)  # keep trying even after halt: n must exist
            n += 1
            self.halt.wait(self.every)
