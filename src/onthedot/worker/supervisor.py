"""Worker processes under one supervisor, behaving as one worker (`onthedot worker`).

The supervisor starts `processes` children (forked from it where the platform allows, see
`children.py`), each a whole worker with its own claimer, executors and scheduler (the ledger
makes several schedulers safe), hears from them over one pipe (`channel.py`), and:

- restarts a child that crashed during work (a signal, or a non-zero exit after it reported
  `started`) after a backoff (0.5 s doubling to 30 s, back to 0.5 s once a child has run a
  minute), as a `WorkerProcessRestarted` event;
- stops the whole tree, with that child's line and a non-zero exit, when a child reports an
  error no restart can fix (`fatal`: a bad option, an old schema, a refused connection, ...)
  or fails to start `GIVE_UP` times in a row (the slot is given up: the tree does not run
  short-handed);
- kills a child that stopped beating while it held the GIL (see `watchdog.py`): past a job's
  timeout, the job is charged a `JobTimeout`; near its lease, before another worker could
  rescue its jobs and run them a second time beside it;
- forwards SIGTERM/SIGINT to every child (the first: a graceful drain, a second: stop at once)
  and waits for all of them. A child killed by the very signal the supervisor forwarded was
  still starting (its own handlers not in place yet), so it held no job: a clean stop.

A child that exits 0 is done (a burst found the queues empty, or it was told to stop); the
supervisor returns when every child is done. It runs no thread of its own (its HTTP endpoint
is served from its loop), so that forking a child stays safe.
"""

from __future__ import annotations

import logging
import os
import select
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Protocol

from onthedot.clock import REAL, backoff_delay
from onthedot.observability.events import Event, WorkerProcessKilled, WorkerProcessRestarted
from onthedot.worker.channel import Message, parse
from onthedot.worker.children import Child
from onthedot.worker.watchdog import ChildWatch, Overran

log = logging.getLogger("onthedot.worker")

BACKOFF_FIRST, BACKOFF_CAP, STEADY = 0.5, 30.0, 60.0
GIVE_UP = 5  # failed starts in a row


class Endpoint(Protocol):
    """An HTTP endpoint the supervisor's loop serves (`observability/tree.py`)."""

    def fileno(self) -> int: ...

    def handle(self) -> None: ...


# (index, the pipe's write end, descriptors a forked child must close) -> the started child
Starter = Callable[[int, int, Sequence[int]], Child]


@dataclass
class Slot:
    index: int
    child: Child | None = None
    started: float = 0.0  # monotonic
    working: bool = False  # the child said `started`: a death from now on is a crash
    restart_at: float | None = None  # monotonic: when to start it again
    quick_exits: int = 0  # exits in a row before a steady run: the restart backoff's count
    failed_starts: int = 0
    restarts: int = 0
    done: bool = False
    code: int = 0
    watch: ChildWatch = field(default_factory=ChildWatch)


@dataclass(frozen=True)
class Summary:
    code: int  # the supervisor's exit code: 0, or why the tree stopped (1) / a child's status
    jobs: int  # jobs the children finished (as they reported)
    reasons: tuple[str, ...]  # why each child stopped (as it reported)
    restarts: int
    failure: str | None = None  # the one line saying why the tree stopped, if it failed


@dataclass
class Supervisor:
    start: Starter
    processes: int
    emit: Callable[[Event], None]
    lease: float = 30.0
    on_overrun: Callable[[str, list[Overran]], None] | None = None  # charge JobTimeout
    endpoint: Endpoint | None = None
    slots: list[Slot] = field(default_factory=list)
    restarts: int = 0
    failure: str | None = None
    _signals: list[int] = field(default_factory=list)
    _forwarded: set[int] = field(default_factory=set)
    _reports: list[tuple[str, int]] = field(default_factory=list)
    _stopping: bool = False
    _write_fd: int = -1
    _read_fd: int = -1
    _loop_at: float = 0.0

    def run(self) -> Summary:
        self._read_fd, self._write_fd = os.pipe()
        os.set_blocking(self._read_fd, False)
        previous = self._install_signals()
        self._loop_at = REAL.monotonic()
        try:
            self.slots = [Slot(i) for i in range(self.processes)]
            for slot in self.slots:
                self._start(slot)
            while not all(slot.done for slot in self.slots):
                self._forward_signals()
                self._read()
                self._step()
                self._check_watch()
                self._wait(0.05)
            self._read()
        finally:
            for slot in self.slots:
                if slot.child is not None:  # still running: the caller is unwinding
                    slot.child.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            os.close(self._write_fd)
            os.close(self._read_fd)
        return self._summary()

    def _summary(self) -> Summary:
        reasons = [reason for reason, _ in self._reports]
        jobs = sum(count for _, count in self._reports)
        code = 1 if self.failure else next((s.code for s in self.slots if s.code), 0)
        return Summary(code, jobs, tuple(reasons), self.restarts, self.failure)

    # -- what the endpoint reports --------------------------------------------------------
    def problem(self) -> str | None:
        """Why the tree is not live (for /healthz), or None."""
        if self.failure:
            return f"stopping: {self.failure}"
        now = REAL.monotonic()
        for slot in self.slots:
            if slot.done:
                continue
            if slot.child is None:
                return f"worker process {slot.index} is not running (restarting)"
            silent = slot.watch.silent_for(now)
            if slot.working and silent > max(2.0, self.lease / 3):
                return f"worker process {slot.index}: no heartbeat for {silent:.1f}s"
        return None

    def states(self) -> dict[str, int]:
        """How many slots are in each state (for the metrics)."""
        counts = {"running": 0, "starting": 0, "restarting": 0, "stopped": 0}
        for slot in self.slots:
            if slot.done:
                counts["stopped"] += 1
            elif slot.child is None:
                counts["restarting"] += 1
            else:
                counts["running" if slot.working else "starting"] += 1
        return counts

    # -- children -------------------------------------------------------------------------
    def _start(self, slot: Slot) -> None:
        others = [s.child.pidfd for s in self.slots if s.child is not None and s.child.pidfd]
        close = [self._read_fd, *others]
        if self.endpoint is not None:
            close.append(self.endpoint.fileno())
        slot.child = self.start(slot.index, self._write_fd, close)
        slot.started = REAL.monotonic()
        slot.working = False
        slot.restart_at = None
        slot.watch = ChildWatch(since=slot.started)

    def _step(self) -> None:
        now = REAL.monotonic()
        stopping = self._stopping or bool(self._signals)
        for slot in self.slots:
            if slot.done:
                continue
            if slot.child is None:
                if stopping:
                    slot.done = True
                elif slot.restart_at is not None and now >= slot.restart_at:
                    self._start(slot)
                continue
            code = slot.child.poll()
            if code is None:
                continue
            slot.child = None
            self._exited(slot, code, now, stopping)

    def _exited(self, slot: Slot, code: int, now: float, stopping: bool) -> None:
        if code == 0 or stopping:
            slot.done, slot.code = True, _exit_status(code)
            if -code in self._forwarded:  # still starting: it held no job
                slot.code = 0
                self._reports.append((f"signal {signal.Signals(-code).name} while starting", 0))
            return
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        if not slot.working:
            slot.failed_starts += 1
            if slot.failed_starts >= GIVE_UP:
                slot.done, slot.code = True, _exit_status(code)
                self._fail(
                    f"worker process {slot.index} failed to start {slot.failed_starts} times in "
                    f"a row ({how}); the slot is given up, so the tree stops (see the lines "
                    "above for the cause)"
                )
                return
        elif now - slot.started >= STEADY:
            slot.quick_exits = 0
        self.restarts += 1
        slot.restarts += 1
        delay = backoff_delay(slot.quick_exits, first=BACKOFF_FIRST, cap=BACKOFF_CAP)
        self.emit(WorkerProcessRestarted(process=slot.index, exit=how, delay=delay))
        slot.restart_at = now + delay
        slot.quick_exits += 1

    def _fail(self, line: str) -> None:
        """Stop the tree: an error no restart fixes. The first reason is the one reported."""
        if self.failure is None:
            self.failure = line
            log.error("%s", line)
        if not self._stopping:
            self._stopping = True
            for slot in self.slots:
                if slot.child is not None:
                    slot.child.signal(signal.SIGTERM)

    # -- messages -------------------------------------------------------------------------
    def _read(self) -> None:
        for line in _read_lines(self._read_fd):
            message = parse(line)
            if message is not None and message.index < len(self.slots):
                self._heard(self.slots[message.index], message)

    def _heard(self, slot: Slot, message: Message) -> None:
        now = REAL.monotonic()
        kind, fields = message.kind, message.fields
        slot.watch.beat(now)
        if kind == "started":
            slot.working, slot.failed_starts = True, 0
            slot.watch.worker_id = fields[0]
        elif kind == "job":
            slot.watch.job_started(now, fields)
        elif kind == "done":
            slot.watch.job_ended(fields[0])
        elif kind == "stopped":
            self._reports.append((fields[1], int(fields[0]) if fields[0].isdigit() else 0))
        elif kind == "fatal":
            self._fail(fields[0])

    # -- the watchdog ---------------------------------------------------------------------
    def _check_watch(self) -> None:
        now = REAL.monotonic()
        if now - self._loop_at > 1.0:
            # The supervisor itself did not run (stopped, starved): it cannot tell who was
            # silent, so every child gets a fresh start.
            for slot in self.slots:
                slot.watch.beat(now)
        self._loop_at = now
        for slot in self.slots:
            if slot.child is None or not slot.working:
                continue
            verdict = slot.watch.verdict(now, self.lease)
            if verdict is not None:
                self._kill(slot, verdict.reason, verdict.overran)

    def _kill(self, slot: Slot, reason: str, overran: list[Overran]) -> None:
        child = slot.child
        assert child is not None
        self.emit(WorkerProcessKilled(process=slot.index, pid=child.pid, reason=reason))
        child.signal(signal.SIGKILL)
        child.wait()  # dead before its jobs are charged: no late outcome can follow
        if overran and self.on_overrun is not None and slot.watch.worker_id:
            self.on_overrun(slot.watch.worker_id, overran)
        slot.watch.forget_jobs()

    # -- signals ----------------------------------------------------------------------------
    def _install_signals(self) -> dict[int, signal.Handlers | Callable[..., object] | int | None]:
        def handler(signum: int, frame: FrameType | None) -> None:
            self._signals.append(signum)

        return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}

    def _forward_signals(self) -> None:
        while self._signals:
            signum = self._signals.pop(0)
            self._stopping = True
            self._forwarded.add(signum)
            log.info(
                "signal %s: forwarded to %d worker process(es)",
                signal.Signals(signum).name,
                sum(1 for s in self.slots if s.child is not None),
            )
            for slot in self.slots:
                if slot.child is not None:
                    slot.child.signal(signum)

    def _wait(self, timeout: float) -> None:
        # A child's exit wakes the loop at once (its pidfd turns readable), so a burst ends
        # when its last child does, not up to a poll interval later.
        fds = [self._read_fd]
        fds += [s.child.pidfd for s in self.slots if s.child is not None and s.child.pidfd]
        endpoint = self.endpoint
        if endpoint is not None:
            fds.append(endpoint.fileno())
        try:
            ready, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:  # pragma: no cover - PEP 475 retries; a handler may raise
            return
        if endpoint is not None and endpoint.fileno() in ready:
            endpoint.handle()


def _exit_status(code: int) -> int:
    """A child's return code as a shell exit status (a signal N as 128 + N)."""
    return 128 - code if code < 0 else code


def _read_lines(fd: int) -> list[str]:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return [line for line in b"".join(chunks).decode(errors="replace").splitlines() if line]
