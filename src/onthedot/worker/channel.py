"""What a supervised worker process tells its supervisor, over one pipe all children share.

Each message is one line, written with a single `os.write` below `PIPE_BUF` bytes (so lines of
different children never interleave): `<process index> TAB <kind> [TAB <fields>...]`.

- `started <worker id>`: the worker registered and runs jobs from now on (before that, a death
  is a failure to start, after it a crash during work);
- `beat`: sent every `PULSE` seconds by a thread of its own; it stops while one thread holds
  the GIL (a long call into C), which is what the supervisor's watchdog looks for;
- `job <id> <seconds left> <attempt> <max attempts> <queue> <name>` when a job with a
  timeout starts, `done <id>` when it ends: the jobs the watchdog may charge a `JobTimeout`;
- `stopped <jobs finished> <reason>` as it exits; `fatal <one line>` for an error no restart
  can fix (the supervisor stops the tree with that line).

`Channel` is the child's side, `parse` the supervisor's.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

ENV_FD = "ONTHEDOT_SUPERVISOR_FD"  # the pipe's write end, in a child started as a new program
ENV_INDEX = "ONTHEDOT_WORKER_INDEX"  # a child's number, 0 to processes - 1
PULSE = 0.25  # seconds between beats
_MAX_LINE = 3500  # below PIPE_BUF (4096 on Linux, 512 at least by POSIX; Linux and macOS: 4096+)


@dataclass(frozen=True, slots=True)
class Message:
    index: int
    kind: str  # started, beat, job, done, stopped, fatal
    fields: tuple[str, ...]


def parse(line: str) -> Message | None:
    """A line read from the pipe, or None when it is not one of ours."""
    index, _, rest = line.partition("\t")
    kind, _, tail = rest.partition("\t")
    if not index.isdigit() or not kind:
        return None
    if kind in ("fatal", "started", "done"):
        fields: tuple[str, ...] = (tail,)
    elif kind == "stopped":
        jobs, _, reason = tail.partition("\t")
        fields = (jobs, reason)
    elif kind == "job":
        fields = tuple(tail.split("\t", 5))
        if len(fields) != 6:
            return None
    else:
        fields = ()
    return Message(int(index), kind, fields)


def _clean(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


class Channel:
    """A child's end of the pipe (`fd`), as process `index`."""

    def __init__(self, fd: int, index: int) -> None:
        self.fd = fd
        self.index = index
        self._stop = threading.Event()

    @classmethod
    def from_environment(cls) -> Channel | None:
        """The channel of a child started as a new program (None when not supervised). The
        pipe's variable is taken out of the environment: a program a job starts is not one."""
        fd, index = os.environ.pop(ENV_FD, ""), os.environ.get(ENV_INDEX, "0")
        if not fd.isdigit() or not index.isdigit():
            return None
        return cls(int(fd), int(index))

    def _send(self, kind: str, *fields: str) -> None:
        line = "\t".join((str(self.index), kind, *fields))[:_MAX_LINE] + "\n"
        try:
            os.write(self.fd, line.encode("utf-8", "replace"))
        except OSError:
            pass  # the supervisor is gone: this process dies with it (or finishes alone)

    def started(self, worker_id: str) -> None:
        self._send("started", _clean(worker_id))

    def job_started(
        self, job_id: int, seconds_left: float, attempt: int, max_attempts: int, queue: str,
        name: str,
    ) -> None:  # fmt: skip
        self._send(
            "job", str(job_id), f"{seconds_left:.3f}", str(attempt), str(max_attempts),
            _clean(queue), _clean(name),
        )  # fmt: skip

    def job_ended(self, job_id: int) -> None:
        self._send("done", str(job_id))

    def stopped(self, reason: str, jobs: int) -> None:
        self._send("stopped", str(jobs), _clean(reason))

    def fatal(self, line: str) -> None:
        self._send("fatal", _clean(line))

    def beat(self) -> None:
        self._send("beat")

    def start_pulse(self) -> None:
        """Beat every `PULSE` seconds on a daemon thread, until `stop_pulse`."""

        def pulse() -> None:
            while not self._stop.wait(PULSE):
                self.beat()

        self.beat()
        threading.Thread(target=pulse, name="onthedot-pulse", daemon=True).start()

    def stop_pulse(self) -> None:
        self._stop.set()
