"""How the supervisor starts a worker process, and the handle it keeps on it.

- `fork_child`: the child is a copy of the supervisor, which has imported onthedot and loaded
  the app already (as gunicorn's `--preload`), so it runs jobs within milliseconds. Used where
  the platform allows it: POSIX with `os.fork`, not macOS (whose system libraries are not safe
  to use after a fork; CPython's multiprocessing does not fork there either), and only while
  the supervisor runs no other thread (a thread holding a lock at the fork would leave that
  lock held in the child for good).
- `spawn_child`: the child is a new interpreter running the same `onthedot ... worker`
  command with `--processes 1`; it imports everything again (~0.3 s or more).

Either way the child is the leader of a process group of its own (a terminal's Ctrl-C reaches
it once, through the supervisor) and gets SIGKILL if the supervisor dies (Linux).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

ENV_START = "ONTHEDOT_WORKER_START"  # "spawn": start children as new interpreters


def fork_possible() -> str | None:
    """Why children cannot be forked here, or None when they can."""
    if os.environ.get(ENV_START, "").strip().lower() == "spawn":
        return f"${ENV_START}=spawn"
    if not hasattr(os, "fork") or sys.platform == "darwin":
        return f"no safe fork on {sys.platform}"
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    if others:
        return f"threads running in the supervisor ({', '.join(sorted(others)[:5])})"
    return None


@dataclass
class Child:
    """A started worker process."""

    pid: int
    popen: subprocess.Popen[bytes] | None = None  # a spawned child (None: forked)
    pidfd: int | None = None  # readable once the child exited (Linux 5.3+); None: polled
    returncode: int | None = None  # as subprocess: -N for signal N

    def poll(self) -> int | None:
        """Its return code once it exited (reaped), else None."""
        if self.returncode is not None:
            return self.returncode
        if self.popen is not None:
            self.returncode = self.popen.poll()
        else:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 255 << 8  # reaped elsewhere: its status is lost
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        if self.returncode is not None:
            self.close()
        return self.returncode

    def wait(self) -> int:
        """Block until it exited; its return code."""
        while self.poll() is None:
            if self.popen is not None:
                self.popen.wait()
            else:
                try:
                    _, status = os.waitpid(self.pid, 0)
                except ChildProcessError:
                    status = 255 << 8
                self.returncode = os.waitstatus_to_exitcode(status)
        assert self.returncode is not None
        return self.returncode

    def signal(self, signum: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass  # exited; reaped at the next poll

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def fork_child(
    run: Callable[[], int], *, leave: Callable[[int], None], close_fds: Sequence[int] = ()
) -> Child:
    """Fork; the child closes `close_fds`, runs `run()` and ends with `leave(code)` (what
    `run` returned; 1 and the traceback if it raised), never returning here."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # else what the supervisor buffered is written by every child too
        except (OSError, ValueError):
            pass
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return Child(pid, pidfd=_pidfd(pid))
    code = 1
    try:
        os.setpgid(0, 0)
        _die_with_parent()
        if os.getppid() != parent:  # the supervisor died before the line above
            os._exit(1)
        for fd in close_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)  # the worker installs its own once it runs
        code = run()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        traceback.print_exc()
    try:
        leave(code)
    finally:
        os._exit(code & 0xFF)  # whatever `leave` did, this child never returns to the caller


def spawn_child(argv: Sequence[str], env: Mapping[str, str], pass_fds: Sequence[int]) -> Child:
    """Start `argv` as a new program."""
    popen = subprocess.Popen(
        list(argv),
        env=dict(env),
        pass_fds=tuple(pass_fds),
        process_group=0,
        preexec_fn=_die_with_parent,
    )
    return Child(popen.pid, popen=popen, pidfd=_pidfd(popen.pid))


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
    """In the child: SIGKILL when the supervisor dies (Linux `PR_SET_PDEATHSIG`)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))
        except (OSError, AttributeError):
            pass
