"""Shared machinery of the benchmark: databases, subprocess cells, CPU accounting, statistics.

Everything here runs in the orchestrator (the process started by `python -m bench`), which
itself runs on the benchmark's own virtualenv `bench/.venv`.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
VENV = BENCH / ".venv"
PG_BASE = os.environ.get("BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def pg_url(db: str) -> str:
    return f"{PG_BASE}/{db}"


def admin() -> psycopg.Connection[Any]:
    return psycopg.connect(pg_url("postgres"), autocommit=True)


def fresh_database(name: str) -> str:
    """Drop and create database `name`; return its URL."""
    with admin() as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    return pg_url(name)


def drop_database(name: str) -> None:
    with admin() as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


_KEEP = ("version", "migration", "generations")


def reset_database(url: str) -> None:
    """Empty every table (TRUNCATE leaves no dead tuples), keep schema bookkeeping, then
    CHECKPOINT so a cell does not pay for the previous one's dirty pages."""
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT quote_ident(schemaname) || '.' || quote_ident(tablename)"
                " FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
            )
            if not any(k in r[0] for k in _KEEP)
        ]
        if tables:
            conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        conn.execute("VACUUM ANALYZE")
        conn.execute("CHECKPOINT")


def wait_no_backends(db: str, timeout: float = 10.0) -> None:
    """Wait until no client of `db` is connected (so their statistics are flushed)."""
    deadline = time.monotonic() + timeout
    with admin() as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (db,),
            ).fetchone()
            if row is None or row[0] == 0:
                return
            time.sleep(0.02)


# -- database statistics -----------------------------------------------------------------
@dataclass
class DbStats:
    xacts: int
    statements: int | None
    rows: int  # tuples inserted + updated + deleted
    wal: int  # cluster-wide WAL bytes (other users of the server add to it)


def has_pg_stat_statements() -> bool:
    with admin() as conn:
        row = conn.execute("SHOW shared_preload_libraries").fetchone()
    return bool(row and "pg_stat_statements" in row[0])


def db_stats(db: str) -> DbStats:
    with admin() as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        r = conn.execute(
            "SELECT xact_commit + xact_rollback, tup_inserted + tup_updated + tup_deleted,"
            " pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
            " FROM pg_stat_database WHERE datname = %s",
            (db,),
        ).fetchone()
        assert r is not None
        calls = None
        if has_pg_stat_statements():
            try:
                c = conn.execute(
                    "SELECT sum(calls)::bigint FROM pg_stat_statements s JOIN pg_database d"
                    " ON d.oid = s.dbid WHERE d.datname = %s",
                    (db,),
                ).fetchone()
                calls = int(c[0] or 0) if c else None
            except psycopg.Error:
                calls = None
    return DbStats(int(r[0]), calls, int(r[1]), int(r[2]))


# -- CPU accounting ------------------------------------------------------------------------
def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _process_tree(roots: Iterable[int]) -> set[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        ppid = int(data[data.rindex(b")") + 2 :].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(parents.get(pid, []))
    return seen


class CpuSampler:
    """Samples the CPU time of process trees (the system under test) and of the PostgreSQL
    backends serving one database, every `period` seconds, so a window [t0, t1] chosen after
    the fact can be read off by interpolation."""

    def __init__(
        self, db: str | None, server_pids: Sequence[int] = (), period: float = 0.05
    ) -> None:
        self.db = db
        self.roots: list[int] = []
        self.period = period
        self.samples: list[tuple[float, float, float]] = []  # (monotonic, worker s, pg s)
        self._last: dict[int, int] = {}
        self._kind: dict[int, str] = dict.fromkeys(server_pids, "pg")  # e.g. Redis
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._lock = threading.Lock()

    def add_root(self, pid: int) -> None:
        with self._lock:
            self.roots.append(pid)
            self._kind[pid] = "worker"

    def start(self) -> CpuSampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _discover(self, conn: psycopg.Connection[Any] | None) -> None:
        with self._lock:
            roots = list(self.roots)
        found = {pid: "worker" for pid in _process_tree(roots)}
        if conn is not None and self.db:
            for (pid,) in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (self.db,),
            ):
                found[pid] = "pg"
        with self._lock:
            for pid, kind in found.items():
                self._kind.setdefault(pid, kind)

    def _run(self) -> None:
        conn = admin() if self.db else None
        next_discovery = 0.0
        try:
            while True:
                now = time.monotonic()
                if now >= next_discovery:
                    self._discover(conn)
                    next_discovery = now + 0.2
                with self._lock:
                    kinds = dict(self._kind)
                for pid in kinds:
                    ticks = _cpu_ticks(pid)
                    if ticks is not None:
                        self._last[pid] = ticks
                worker = sum(t for p, t in self._last.items() if kinds[p] == "worker")
                pg = sum(t for p, t in self._last.items() if kinds[p] == "pg")
                self.samples.append((time.monotonic(), worker / CLK_TCK, pg / CLK_TCK))
                if self._stop.wait(self.period):
                    break
        finally:
            if conn is not None:
                conn.close()

    def at(self, t: float) -> tuple[float, float]:
        """(worker CPU s, PostgreSQL CPU s) at monotonic time t, interpolated."""
        s = self.samples
        if not s:
            return 0.0, 0.0
        if t <= s[0][0]:
            return 0.0, 0.0  # before the first sample nothing of the cell had run yet
        for a, b in itertools.pairwise(s):
            if a[0] <= t <= b[0]:
                f = (t - a[0]) / (b[0] - a[0]) if b[0] > a[0] else 0.0
                return a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])
        return s[-1][1], s[-1][2]


# -- subprocess cells ------------------------------------------------------------------------
def python() -> str:
    return str(VENV / "bin" / "python")


def cell_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # $BENCH_SRC: another checkout's src/ (an A/B against main without switching branches)
    env["PYTHONPATH"] = f"{os.environ.get('BENCH_SRC') or REPO / 'src'}{os.pathsep}{REPO}"
    env.pop("OPENBLAS_CORETYPE", None)
    # A user's installed onthedot has its .pyc files; without them every process of a cell
    # (each `onthedot worker` child too) compiles onthedot again at start (~0.1 s of CPU).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


def spawn(system: str, action: str, params: dict[str, Any], **popen: Any) -> subprocess.Popen[str]:
    """Start `python -m bench.cell SYSTEM ACTION PARAMS` on the benchmark's venv."""
    return subprocess.Popen(
        [python(), "-m", "bench.cell", system, action, json.dumps(params)],
        cwd=REPO,
        env=cell_env(popen.pop("env", None)),
        stdout=subprocess.PIPE,
        stderr=popen.pop("stderr", subprocess.PIPE),
        text=True,
        start_new_session=True,
        **popen,
    )


def result_of(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """Wait for a cell and parse the JSON line it printed last."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        raise CellFailed(f"timed out after {timeout:.0f}s; stderr tail: {tail(err)}") from None
    lines = [line for line in (out or "").splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise CellFailed(f"exit {proc.returncode}; stderr tail: {tail(err)}")
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    if result:
        log(
            "  "
            + " ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()
            )
        )
    return result


def run_cell(system: str, action: str, params: dict[str, Any], timeout: float) -> dict[str, Any]:
    return result_of(spawn(system, action, params), timeout)


def kill_group(proc: subprocess.Popen[Any], sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def tail(text: str | None, n: int = 1500) -> str:
    return (text or "")[-n:].strip()


class CellFailed(RuntimeError):
    pass


def run_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="onthedot-bench-"))


def first_marks(path: Path) -> list[float]:
    """Monotonic times at which each worker process ran its first job (see bench.jobs)."""
    return [float(p.read_text()) for p in path.glob("first-*") if p.read_text().strip()]


def last_marks(path: Path) -> list[float]:
    """Monotonic times at which each worker process finished its last real-work job."""
    return [float(p.read_text()) for p in path.glob("last-*") if p.read_text().strip()]


def job_window(path: Path, n: int) -> dict[str, float]:
    """`n` jobs over the window from the first job's start to the last one's finish (for the
    real-work jobs, which mark both): what the workers did, without their start and exit."""
    first, last = first_marks(path), last_marks(path)
    if not first or not last or max(last) <= min(first):
        return {}
    return {"job_window_rate": n / (max(last) - min(first))}


# -- results ---------------------------------------------------------------------------------
@dataclass
class Cell:
    """All repetitions of one (workload, metric, system, config)."""

    workload: str
    metric: str
    system: str
    config: str
    unit: str
    higher_is_better: bool = True
    values: list[float] = field(default_factory=list)
    extra: dict[str, list[Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def add(self, value: float, **extra: Any) -> None:
        self.values.append(value)
        for k, v in extra.items():
            self.extra.setdefault(k, []).append(v)

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    def extra_median(self, key: str) -> float | None:
        vals = [v for v in self.extra.get(key, []) if isinstance(v, int | float)]
        return statistics.median(vals) if vals else None

    def to_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "metric": self.metric,
            "system": self.system,
            "config": self.config,
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "values": self.values,
            "extra": self.extra,
            "errors": self.errors,
        }


class Results:
    def __init__(self) -> None:
        self.cells: dict[tuple[str, str, str, str], Cell] = {}

    def cell(
        self, workload: str, metric: str, system: str, config: str, unit: str, higher: bool = True
    ) -> Cell:
        key = (workload, metric, system, config)
        if key not in self.cells:
            self.cells[key] = Cell(workload, metric, system, config, unit, higher)
        return self.cells[key]

    def find(
        self, workload: str, metric: str, system: str, config: str | None = None
    ) -> Cell | None:
        for c in self.cells.values():
            if (c.workload, c.metric, c.system) == (workload, metric, system) and (
                config is None or c.config == config
            ):
                return c
        return None

    def of(self, workload: str) -> list[Cell]:
        return [c for c in self.cells.values() if c.workload == workload]


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
