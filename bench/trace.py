"""Where an idle enqueue -> start goes: onthedot's path split into its parts, beside the SQL
floor's (INSERT + NOTIFY, a LISTENer claims by DELETE), as in the latency workload.

    python -m bench.trace [--n 1000] [--rounds 1]

Marks are `time.perf_counter()` (CLOCK_MONOTONIC, one clock for every process) taken in the
producer and, through wrappers around a few of the worker's methods, in a real worker process
(`app.worker(concurrency=4)`, its defaults otherwise). The wrappers cost a few µs per mark.
They name private methods: a diagnostic, not a benchmark; the numbers the docs quote come from
`python -m bench`. Uses a database of its own, `bench_trace` (dropped and created).
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import psycopg

from bench.floors import CLAIM_DELETE, ENQUEUE_NOTIFY, SCHEMA
from bench.jobs import percentile

SERVER = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
URL = f"{SERVER}/bench_trace"
Marks = dict[str, list[float]]


def _now() -> float:
    return time.perf_counter()


def _mark(marks: Marks, key: str) -> None:
    marks.setdefault(key, []).append(_now())


def onthedot_worker(port: int, out: str) -> None:
    """A worker whose claim, hand-off and job start leave marks in `out` when it stops."""
    import onthedot
    from onthedot.storage.sql import decode
    from onthedot.storage.sql import jobs as sql_jobs
    from onthedot.worker import claimer, executor

    marks: Marks = {}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    app = onthedot.App(URL, log_events=False)

    @app.job(name="lat")
    def lat(sample: int) -> None:
        _mark(marks, "job")
        sock.sendto(str(sample).encode(), ("127.0.0.1", port))

    def around(owner: Any, name: str, before: str, after: str, when: Any = None) -> None:
        inner = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            hit = when is None or when(*args)
            if hit and before:
                _mark(marks, before)
            result = inner(*args, **kwargs)
            if hit and (after != "wake" or result):
                _mark(marks, after)
            return result

        setattr(owner, name, wrapper)

    around(claimer.Claimer, "_wait", "", "wake")  # marked only when woken by an announcement
    around(
        sql_jobs.JobVerbs, "_run", "sent", "answered", lambda _s, _c, name, *a: name == "claim_jobs"
    )
    around(decode, "claimed", "decode", "decoded")
    around(executor.Executors, "run_one", "run", "")
    worker = app.worker(concurrency=4, install_signals=True, scheduler=False)
    print("READY", flush=True)
    worker.run()
    app.close()
    with open(out, "w") as handle:
        json.dump(marks, handle)


def floor_worker(port: int, out: str) -> None:
    """The floor's consumer (bench.floors.serve) with marks."""
    marks: Marks = {}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    stop = False

    def on_term(*_: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    with (
        psycopg.connect(URL, autocommit=True) as conn,
        psycopg.connect(URL, autocommit=True) as listen,
    ):
        listen.execute("LISTEN floor")
        print("READY", flush=True)
        while not stop:
            woken = False
            for _ in listen.notifies(timeout=0.2, stop_after=1):
                woken = True
            if woken:
                _mark(marks, "wake")
            _mark(marks, "sent")
            rows = conn.execute(CLAIM_DELETE, (10,), prepare=True).fetchall()
            _mark(marks, "answered")
            for r in rows:
                _mark(marks, "job")
                sock.sendto(str(r[2][0]).encode(), ("127.0.0.1", port))
    with open(out, "w") as handle:
        json.dump(marks, handle)


def _last(values: list[float], t: float) -> float:
    """The latest mark at or before `t`."""
    k = bisect.bisect_right(values, t) - 1
    if k < 0:
        raise ValueError("no mark before the sample")
    return values[k]


def _split(
    system: str, produced: list[tuple[float, float, float]], m: Marks
) -> list[dict[str, float]]:
    rows = []
    for t0, t1, seen in produced:
        job = _last(m["job"], seen)
        # onthedot's claim is answered before its executor runs the job; the floor runs it inline
        run = job if system == "floor" else _last(m["run"], job)
        answered = _last(m["answered"], run)
        sent = _last(m["sent"], answered)
        wake = _last(m["wake"], sent)
        parts = {
            "enqueue call": t1 - t0,
            "enqueue -> worker woken": wake - t0,
            "woken -> claim sent": sent - wake,
            "claim statement": answered - sent,
            "claimed -> job running": job - answered,
        }
        if system != "floor":
            decode = _last(m["decode"], run)
            decoded = _last(m["decoded"], run)
            parts["  rows fetched, connection back"] = decode - answered
            parts["  decoded"] = decoded - decode
            parts["  buffered, executor woken"] = run - decoded
            parts["  executor -> job function"] = job - run
        parts["job running -> producer"] = seen - job
        parts["total"] = seen - t0
        rows.append(parts)
    return rows


def trace(system: str, n: int) -> list[dict[str, float]]:
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    probe.settimeout(30)
    out = tempfile.mktemp(prefix=f"trace-{system}-", suffix=".json")
    cmd = [
        sys.executable,
        "-m",
        "bench.trace",
        "--worker",
        system,
        str(probe.getsockname()[1]),
        out,
    ]
    worker = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert worker.stdout is not None
    worker.stdout.readline()
    time.sleep(1.0)
    produced = []
    try:
        if system == "floor":
            conn = psycopg.connect(URL, autocommit=True)

            def enqueue(i: int) -> None:
                conn.execute(ENQUEUE_NOTIFY, (json.dumps([i]),), prepare=True)

        else:
            import onthedot

            app = onthedot.App(URL, log_events=False)
            lat = app.job(name="lat")(lambda sample: None)
            enqueue = lat.enqueue
        for i in range(-50, n):
            time.sleep(0.005 + (i % 7) * 0.001)  # as the latency workload: the worker idles
            t0 = _now()
            enqueue(i)
            t1 = _now()
            while int(probe.recvfrom(64)[0]) != i:
                pass
            if i >= 0:
                produced.append((t0, t1, _now()))
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)
    with open(out) as handle:
        marks = json.load(handle)
    os.unlink(out)
    return _split(system, produced, marks)


def _fresh_database() -> None:
    import onthedot

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS bench_trace")
        conn.execute("CREATE DATABASE bench_trace")
    app = onthedot.App(URL, log_events=False)
    app.migrate()
    app.close()
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(SCHEMA)


def _report(system: str, rows: list[dict[str, float]]) -> None:
    print(f"{system}: {len(rows)} samples, ms")
    for key in rows[0]:
        values = [r[key] * 1000 for r in rows]
        p50, p90, p99 = (percentile(values, q) for q in (50, 90, 99))
        print(f"  {key:34s} p50 {p50:6.3f}  p90 {p90:6.3f}  p99 {p99:6.3f}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        system, port, out = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        (floor_worker if system == "floor" else onthedot_worker)(port, out)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="samples per system and round")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    _fresh_database()
    for r in range(args.rounds):
        for system in ("floor", "onthedot"):
            print(f"-- round {r + 1}")
            _report(system, trace(system, args.n))


if __name__ == "__main__":
    main()
