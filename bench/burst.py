"""`python -m bench.burst [--jobs 20000] [--steady 100000] [--rounds 3] [--empty 9]`: issue 25
item 6's targets, on PostgreSQL, with the command a user runs (`onthedot worker`, defaults):

- **burst**: `--jobs` no-op jobs loaded, then `onthedot worker --burst` timed from its start to
  its exit (the interpreter's start, the app's import, the children and their shutdown
  included): jobs / wall seconds;
- **steady**: the same `onthedot worker` (no `--burst`) already up and idle, `--steady` no-op
  jobs enqueued in one COPY; from the commit to the last job's `finished_at` (both on the
  database's clock): jobs / seconds;
- **empty burst**: `onthedot worker --burst` on an empty queue, wall and CPU (median of
  `--empty` runs), on PostgreSQL and on a SQLite file.

Target: burst >= 0.8 x steady, empty burst <= 0.2 s. Rounds alternate the cells. It runs on this
checkout's onthedot (or `BENCH_SRC=/other/src`) against `BENCH_PG` (default
postgresql://postgres@127.0.0.1:5432) in a database of its own (`bench_burst`, dropped at the
end). Needs nothing but onthedot's own dependencies.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
SERVER = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
DATABASE = "bench_burst" + os.environ.get("BENCH_DB_SUFFIX", "")
URL = f"{SERVER}/{DATABASE}"


def env() -> dict[str, str]:
    out = dict(os.environ, ONTHEDOT_DATABASE_URL=URL)
    out.pop("ONTHEDOT_APP", None)
    out.pop("PYTHONDONTWRITEBYTECODE", None)  # the children run with .pyc files, as users do
    if os.environ.get("BENCH_SRC"):
        out["PYTHONPATH"] = os.environ["BENCH_SRC"]
    return out


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "onthedot", "--app", "bench.ours:cli_app", "worker", *args]


def children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def fresh() -> None:
    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    subprocess.run(
        [sys.executable, "-m", "onthedot", "migrate"], env=env(), cwd=REPO, check=True,
        capture_output=True,
    )  # fmt: skip


def load(n: int) -> None:
    """n no-op jobs, one COPY; the table vacuumed and analyzed as after a quiet moment."""
    code = (
        "import bench.ours as o, os; app = o.make_app(os.environ['ONTHEDOT_DATABASE_URL']);"
        f"app.jobs['noop'].enqueue_many([()] * {n}); app.close()"
    )
    subprocess.run([sys.executable, "-c", code], env=env(), cwd=REPO, check=True)
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE onthedot_jobs")


def clear() -> None:
    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute("DELETE FROM onthedot_jobs")
        conn.execute("VACUUM ANALYZE onthedot_jobs")


def empty_burst(runs: int, url: str = URL) -> tuple[list[float], list[float]]:
    if url == URL:
        clear()
    walls, cpus = [], []
    environment = {**env(), "ONTHEDOT_DATABASE_URL": url}
    for _ in range(runs):
        cpu0, t0 = children_cpu(), time.monotonic()
        subprocess.run(
            command("--burst"), env=environment, cwd=REPO, check=True, capture_output=True
        )
        walls.append(time.monotonic() - t0)
        cpus.append(children_cpu() - cpu0)
    return walls, cpus


def burst(n: int) -> float:
    clear()
    load(n)
    t0 = time.monotonic()
    result = subprocess.run(command("--burst"), env=env(), cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if result.returncode != 0 or left() != 0:
        raise SystemExit(f"burst failed ({result.returncode}, {left()} left): {result.stderr}")
    return n / wall


def left() -> int:
    with psycopg.connect(URL, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM onthedot_jobs WHERE state <> 'succeeded'")
        return int(row.fetchone()[0])  # type: ignore[index]


def steady(n: int) -> float:
    clear()
    proc = subprocess.Popen(
        command(), env=env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        with psycopg.connect(URL, autocommit=True) as conn:
            deadline = time.monotonic() + 60
            want = len(os.sched_getaffinity(0))
            while conn.execute("SELECT count(*) FROM onthedot_workers").fetchone()[0] < want:  # type: ignore[index]
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the workers did not start")
                time.sleep(0.05)
            time.sleep(1.0)  # idle: past the first heartbeat and the schedule sync
            load_started = conn.execute("SELECT clock_timestamp()").fetchone()[0]  # type: ignore[index]
            code = (
                "import bench.ours as o, os; app = o.make_app(os.environ['ONTHEDOT_DATABASE_URL']);"
                f"app.jobs['noop'].enqueue_many([()] * {n}); app.close()"
            )
            subprocess.run([sys.executable, "-c", code], env=env(), cwd=REPO, check=True)
            committed = conn.execute("SELECT max(created_at) FROM onthedot_jobs").fetchone()[0]  # type: ignore[index]
            assert committed >= load_started
            deadline = time.monotonic() + 600
            while left():
                if time.monotonic() > deadline:
                    raise SystemExit("the steady drain did not end")
                time.sleep(0.05)
            last = conn.execute("SELECT max(finished_at) FROM onthedot_jobs").fetchone()[0]  # type: ignore[index]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(60)
    return n / (last - committed).total_seconds()


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--steady", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--empty", type=int, default=9)
    opts = parser.parse_args()
    fresh()
    folder = tempfile.mkdtemp(prefix="bench-burst-")
    lite = f"sqlite:///{folder}/burst.db"
    bursts, steadies, walls, cpus, lite_walls, lite_cpus = [], [], [], [], [], []
    try:
        for r in range(opts.rounds):
            w, c = empty_burst(opts.empty)
            walls += w
            cpus += c
            w2, c2 = empty_burst(opts.empty, lite)
            lite_walls += w2
            lite_cpus += c2
            bursts.append(burst(opts.jobs))
            steadies.append(steady(opts.steady))
            print(
                f"round {r + 1}: burst {bursts[-1]:,.0f} jobs/s, steady {steadies[-1]:,.0f} "
                f"jobs/s, empty burst median {statistics.median(w):.3f} s",
                flush=True,
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
    ratios = [b / s for b, s in zip(bursts, steadies, strict=True)]
    rows = [
        (f"{opts.jobs:,}-job `worker --burst`, start included", spread(bursts, ",.0f"), ""),
        (f"steady drain, workers up ({opts.steady:,} jobs)", spread(steadies, ",.0f"), ""),
        ("burst / steady (per round)", spread(ratios, ".2f"), ">= 0.8"),
        ("empty `worker --burst`, wall (s)", spread(walls, ".3f"), "<= 0.2"),
        ("empty `worker --burst`, CPU (s)", spread(cpus, ".3f"), ""),
        ("empty `worker --burst` on SQLite, wall (s)", spread(lite_walls, ".3f"), "<= 0.2"),
        ("empty `worker --burst` on SQLite, CPU (s)", spread(lite_cpus, ".3f"), ""),
    ]
    print("| cell | result | target |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
