"""Several worker processes under one supervisor (`onthedot worker --processes N`).

The supervisor starts `processes` children, each the same `onthedot ... worker` command run with
`--processes 1` (a whole worker with its own claimer, executors and scheduler: the ledger makes
several schedulers safe), and then only watches them:

- a child that dies (a signal, or a non-zero exit) while the supervisor is not stopping is
  started again after a backoff (0.5 s doubling to 30 s, back to 0.5 s once a child has run a
  minute), logged as a `WorkerProcessRestarted` event; a slot whose child keeps failing at
  start (`GIVE_UP` times in a row within `QUICK` seconds each) is given up;
- SIGTERM/SIGINT are forwarded to every child (the first: a graceful drain, a second: stop at
  once), and the supervisor waits for all of them. Children run in their own process group,
  so a terminal's Ctrl-C reaches them once, through the supervisor; they get SIGKILL if the
  supervisor itself is killed (Linux);
- a child that exits 0 is done (a burst child found the queues empty, or it was told to stop);
  the supervisor returns when every child is done. A child killed by the very signal the
  supervisor forwarded is done too, and counts as a clean stop: it was still starting (its
  own handlers, installed before its first claim, were not in place yet), so it held no job.

Each child writes `reason<TAB>attempts run` to the pipe named by `$ONTHEDOT_SUPERVISOR_FD` as
it exits, so the supervisor can report the total.
"""

from __future__ import annotations

import ctypes
import logging
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType

from onthedot.observability.events import Event, WorkerProcessRestarted

log = logging.getLogger("onthedot.worker")

ENV_INDEX = "ONTHEDOT_WORKER_INDEX"  # a child's number, 0 to processes - 1
ENV_FD = "ONTHEDOT_SUPERVISOR_FD"
BACKOFF_FIRST, BACKOFF_CAP, STEADY = 0.5, 30.0, 60.0
QUICK, GIVE_UP = 5.0, 5


@dataclass
class Slot:
    index: int
    popen: subprocess.Popen[bytes] | None = None
    started: float = 0.0  # monotonic
    restart_at: float | None = None  # monotonic: when to start it again
    backoff: float = BACKOFF_FIRST
    quick_failures: int = 0
    done: bool = False
    code: int = 0
    pidfd: int | None = None  # readable once the child exited (Linux); None: polled

    def reaped(self) -> None:
        self.popen = None
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


@dataclass(frozen=True)
class Summary:
    code: int  # the supervisor's exit code: 0, or the first failing child's
    jobs: int  # jobs the children finished (as they reported)
    reasons: tuple[str, ...]  # why each child stopped (as it reported)
    restarts: int


@dataclass
class Supervisor:
    command: Sequence[str]  # the child's argv (ends with `worker ... --processes 1`)
    processes: int
    emit: Callable[[Event], None]
    env: dict[str, str] | None = None
    slots: list[Slot] = field(default_factory=list)
    restarts: int = 0
    _signals: list[int] = field(default_factory=list)
    _forwarded: set[int] = field(default_factory=set)  # the signals passed on to the children
    _unreported: list[str] = field(default_factory=list)  # why children that could not say stopped
    _stopping: bool = False

    def run(self) -> Summary:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        env = dict(os.environ if self.env is None else self.env)
        env[ENV_FD] = str(write_fd)
        reports: list[str] = []
        previous = self._install_signals()
        try:
            self.slots = [Slot(i) for i in range(self.processes)]
            for slot in self.slots:
                self._start(slot, env, write_fd)
            while not all(slot.done for slot in self.slots):
                self._forward_signals()
                self._step(env, write_fd)
                reports.extend(_read_lines(read_fd))
                # A child's exit wakes the loop at once (its pidfd turns readable), so a burst
                # ends when its last child does, not up to a poll interval later.
                exits = [s.pidfd for s in self.slots if s.pidfd is not None]
                select.select([read_fd, *exits], [], [], 0.05)
            reports.extend(_read_lines(read_fd))
        finally:
            for slot in self.slots:
                if slot.pidfd is not None:  # a child still running: the caller is unwinding
                    os.close(slot.pidfd)
                    slot.pidfd = None
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            os.close(write_fd)
            os.close(read_fd)
        jobs, reasons = 0, list(self._unreported)
        for line in reports:
            reason, _, count = line.rpartition("\t")
            reasons.append(reason)
            jobs += int(count) if count.isdigit() else 0
        code = next((s.code for s in self.slots if s.code), 0)
        return Summary(code, jobs, tuple(reasons), self.restarts)

    # -- children -----------------------------------------------------------------------------
    def _start(self, slot: Slot, env: dict[str, str], write_fd: int) -> None:
        slot.popen = subprocess.Popen(
            list(self.command),
            env={**env, ENV_INDEX: str(slot.index)},
            pass_fds=(write_fd,),
            process_group=0,
            preexec_fn=_die_with_parent,
        )
        slot.started = time.monotonic()
        slot.restart_at = None
        slot.pidfd = _pidfd(slot.popen.pid)

    def _step(self, env: dict[str, str], write_fd: int) -> None:
        now = time.monotonic()
        stopping = bool(self._signals) or self._stopping
        for slot in self.slots:
            if slot.done:
                continue
            if slot.popen is None:
                if stopping:
                    slot.done = True
                elif slot.restart_at is not None and now >= slot.restart_at:
                    self._start(slot, env, write_fd)
                continue
            code = slot.popen.poll()
            if code is None:
                continue
            slot.reaped()
            if code == 0 or stopping:
                slot.done, slot.code = True, _exit_status(code)
                if -code in self._forwarded:  # still starting: it held no job
                    slot.code = 0
                    self._unreported.append(f"signal {signal.Signals(-code).name} while starting")
                continue
            self._failed(slot, code, now)

    def _failed(self, slot: Slot, code: int, now: float) -> None:
        lived = now - slot.started
        if lived >= STEADY:
            slot.backoff = BACKOFF_FIRST
        slot.quick_failures = slot.quick_failures + 1 if lived < QUICK else 0
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        if slot.quick_failures >= GIVE_UP:
            log.error(
                "worker process %d failed %d times in a row at start (%s); not restarted",
                slot.index,
                slot.quick_failures,
                how,
            )
            slot.done, slot.code = True, _exit_status(code)
            return
        self.restarts += 1
        self.emit(WorkerProcessRestarted(process=slot.index, exit=how, delay=slot.backoff))
        slot.restart_at = now + slot.backoff
        slot.backoff = min(slot.backoff * 2, BACKOFF_CAP)

    # -- signals ------------------------------------------------------------------------------
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
                sum(1 for s in self.slots if s.popen is not None),
            )
            for slot in self.slots:
                if slot.popen is not None and slot.popen.poll() is None:
                    slot.popen.send_signal(signum)


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


def _pidfd(pid: int) -> int | None:
    """A descriptor that turns readable when process `pid` exits (Linux 5.3+), or None."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the supervisor dies (Linux `PR_SET_PDEATHSIG`)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))
        except (OSError, AttributeError):
            pass


def report_to_supervisor(reason: str, jobs: int) -> None:
    """In a child: tell the supervisor why it stopped and how many jobs it finished."""
    fd = os.environ.get(ENV_FD)
    if not fd or not fd.isdigit():
        return
    try:
        os.write(int(fd), f"{reason.replace(chr(10), ' ')}\t{jobs}\n".encode())
    except OSError:
        pass
