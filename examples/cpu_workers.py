"""CPU-bound jobs on every core, from Python: one worker process per core.

The executor threads of one worker share its process's GIL, so CPU-bound jobs need processes
to use more than one core. `onthedot worker` starts one per core on PostgreSQL (`--processes N`
on either database); this does the same for a program that starts its workers itself:

    python examples/cpu_workers.py 40     # enqueue 40 jobs, drain them on every core, exit
    python examples/cpu_workers.py 40 3   # ... with 3 worker processes

Each process is a whole worker (its own connections, claimer and executor): the database
hands every job to exactly one of them. One thread each (`concurrency=1`): on pure computation
more threads in one process only share its GIL (docs/jobs.md, CPU-bound jobs, has numbers).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Sequence

import onthedot

app = onthedot.App()  # sqlite:///onthedot.db unless ONTHEDOT_DATABASE_URL says otherwise


@app.job(name="example.checksum")
def checksum(rounds: int) -> dict[str, int]:
    """Pure-Python CPU work; returns the result and the process that computed it."""
    total = 0
    for i in range(rounds):
        total = (total * 31 + i) % 1_000_003
    return {"checksum": total, "pid": os.getpid()}


def _work(burst: bool) -> None:
    # Runs in a fresh interpreter (spawn): this module was imported again there, so the App
    # and its connections belong to this process alone.
    app.worker(concurrency=1, burst=burst).run()


def run_workers(processes: int | None = None, burst: bool = False) -> list[int]:
    """Start `processes` worker processes (default: one per usable core), wait for them and
    return their exit codes. Ctrl-C reaches every child (same process group): each stops
    gracefully."""
    count = processes or len(os.sched_getaffinity(0))
    spawn = multiprocessing.get_context("spawn")  # not fork: nothing inherited from here
    children = [spawn.Process(target=_work, args=(burst,)) for _ in range(count)]
    for child in children:
        child.start()
    for child in children:
        child.join()
    return [child.exitcode or 0 for child in children]


def main(argv: Sequence[str]) -> int:
    jobs = int(argv[0]) if argv else 40
    processes = int(argv[1]) if len(argv) > 1 else None
    app.migrate()  # what `onthedot migrate` does (SQLite creates its schema by itself)
    checksum.enqueue_many([[1_000_000] for _ in range(jobs)])  # ~0.1 s of CPU each
    app.close()  # the parent's connections are not needed by the children
    codes = run_workers(processes, burst=True)
    print(f"{len(codes)} worker process(es) drained {jobs} job(s); exit codes {codes}")
    return max(codes)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
