"""The end of an `onthedot worker` process: exit without the interpreter's teardown, and
without waiting forever for threads a job left behind.

Tearing down a worker's interpreter (its modules, the objects of every job it ran) took
0.1-0.2 s of CPU per process here, paid by each child before the supervisor could return, and
again by the supervisor. Once the command has returned, its connections are closed and its
threads joined, so nothing is left for the teardown to do but free memory: the process runs the
`atexit` handlers (user code's and logging's flush), flushes stdout and stderr and leaves with
`os._exit`.

A non-daemon thread the command did not start (a job's, or the app's) would keep an ordinary
exit waiting for as long as it runs, for ever if it loops: after SIGTERM the worker said
`stopped` and never exited. Such threads get what remains of the grace period (`threads_until`),
then the process leaves anyway and names them in a warning."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time

log = logging.getLogger("onthedot.worker")

_wanted = False
_deadline: float | None = None  # monotonic: how long threads left behind are waited for


def exit_fast_when_done() -> None:
    """Ask `finish` to skip the interpreter's teardown (the command that runs says so)."""
    global _wanted
    _wanted = True


def threads_until(deadline: float) -> None:
    """Wait for threads left behind until `deadline` (monotonic) at most, then leave."""
    global _deadline
    _deadline = deadline


def _left_behind() -> list[threading.Thread]:
    me = threading.current_thread()
    return [t for t in threading.enumerate() if t is not me and t.is_alive() and not t.daemon]


def _describe(thread: threading.Thread) -> str:
    target = getattr(thread, "_target", None)  # the function it runs, when it was given one
    where = getattr(target, "__qualname__", None)
    module = getattr(target, "__module__", None)
    return f"{thread.name!r} ({module}.{where})" if where and module else repr(thread.name)


def wait_for_threads(deadline: float | None) -> None:
    """Join the non-daemon threads still running until `deadline` (None: for ever, as the
    interpreter would); warn naming those still running after it."""
    for thread in _left_behind():
        thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
    left = _left_behind()
    if left:
        log.warning(
            "exiting with %d thread(s) still running that a job or the app started and did "
            "not end within the grace period: %s",
            len(left),
            ", ".join(_describe(t) for t in left),
        )


def finish(code: str | int | None) -> None:
    """Exit with `code` (a SystemExit code): at once when asked for, else as usual."""
    if not _wanted:
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed, status 1, as the interpreter does
        print(code, file=sys.stderr)
        status = 1
    leave_after_threads(status)


def leave_after_threads(status: int) -> None:
    """`leave`, once the threads left behind ended or had what remains of the grace period."""
    wait_for_threads(_deadline)
    leave(status)


def leave(status: int) -> None:
    """Run the atexit handlers, flush stdout and stderr, and end the process with `status`."""
    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe or stream: nothing more to say there
                pass
        os._exit(status & 0xFF)
