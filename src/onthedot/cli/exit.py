"""The end of an `onthedot worker` process: exit without the interpreter's teardown.

Tearing down a worker's interpreter (its modules, the objects of every job it ran) took
0.1-0.2 s of CPU per process here, paid by each child before the supervisor could return, and
again by the supervisor. Once the command has returned, its connections are closed and its
threads joined, so nothing is left for the teardown to do but free memory: the process runs the
`atexit` handlers (user code's and logging's flush), flushes stdout and stderr and leaves with
`os._exit`. It falls back to the ordinary exit while a non-daemon thread the command did not
start still runs (the interpreter would wait for it)."""

from __future__ import annotations

import atexit
import os
import sys
import threading

_wanted = False


def exit_fast_when_done() -> None:
    """Ask `finish` to skip the interpreter's teardown (the command that runs says so)."""
    global _wanted
    _wanted = True


def finish(code: str | int | None) -> None:
    """Exit with `code` (a SystemExit code): at once when asked for and safe, else as usual."""
    if not _wanted or any(
        t.is_alive() and not t.daemon
        for t in threading.enumerate()
        if t is not threading.main_thread()
    ):
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed, status 1, as the interpreter does
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say there
            pass
    os._exit(status & 0xFF)
