"""Cells of the large-table workloads (`bigtable`, `prune`): the operator's reads timed at size,
and the batched prune run exactly as a worker's keeper runs it (run in subprocesses)."""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from typing import Any

from bench.ours import make_app
from onthedot import JobFilter, JobState


def _timed(fn: Any, repeat: int) -> dict[str, float]:
    """First call (cold-ish) and median of the next `repeat`, in ms."""
    t = time.perf_counter()
    fn()
    first = (time.perf_counter() - t) * 1000
    rest = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        rest.append((time.perf_counter() - t) * 1000)
    return {"first_ms": first, "median_ms": statistics.median(rest), "max_ms": max(rest)}


def reads(p: dict[str, Any]) -> dict[str, Any]:
    """The reads an operator's pages and `onthedot` commands make, timed on this database."""
    app = make_app(p["url"])
    st = app.storage
    repeat = p.get("repeat", 5)
    now = st.db_now()
    failed = JobFilter(state=JobState.FAILED)
    count = getattr(app, "count_jobs", st.count_jobs)
    cases: dict[str, Any] = {
        "queue_stats()": st.queue_stats,
        "queued_by_name()": st.queued_by_name,
        "list_jobs() first page": lambda: st.list_jobs(JobFilter()),
        "list_jobs(failed) first page": lambda: st.list_jobs(failed),
        "list_jobs(queue=reports, succeeded)": lambda: st.list_jobs(
            JobFilter(queue="reports", state=JobState.SUCCEEDED)
        ),
        # What the web admin and the CLI count with: `app.count_jobs` (exact from the kept
        # counts for queue/name/state filters) where this onthedot has it; else the row count.
        "count_jobs(failed)": lambda: count(failed),
        "count_jobs(queue=default)": lambda: count(JobFilter(queue="default")),
        "count_jobs(search=boom)": lambda: count(JobFilter(search="boom")),
        "finished_counts(last 24 h, by minute)": lambda: st.finished_counts(
            since=now - timedelta(days=1), bucket_seconds=60
        ),
    }
    try:
        from onthedot.web.health import Health

        cases["overview: Health.read"] = lambda: Health.read(app, st.db_now(), 120.0)
    except ImportError:  # without the web extra
        cases["overview: queue_stats + unserved_jobs"] = lambda: (
            app.queue_stats(),
            app.unserved_jobs(),
        )
    out = {name: _timed(fn, repeat) for name, fn in cases.items()}
    app.close()
    return {"reads": out}


def pruner(p: dict[str, Any]) -> dict[str, Any]:
    """Delete every job finished before `before` (ISO) as the keeper does: `prune_jobs` batches
    of `step` rows, `pause` seconds apart; each batch's duration is one transaction's."""
    from datetime import datetime

    from onthedot.worker.maintenance import PRUNE_PAUSE, PRUNE_STEP

    app = make_app(p["url"])
    before = datetime.fromisoformat(p["before"])
    step, pause = p.get("step", PRUNE_STEP), p.get("pause", PRUNE_PAUSE)
    batches: list[float] = []
    rows = 0
    t0 = time.monotonic()
    while True:
        t = time.perf_counter()
        n = app.storage.prune_jobs(older_than=before, limit=step)
        batches.append((time.perf_counter() - t) * 1000)
        rows += n
        if n < step:
            break
        time.sleep(pause)
    end = time.monotonic()
    app.close()
    batches.sort()
    return {
        "rows": rows,
        "start": t0,
        "end": end,
        "wall_s": end - t0,
        "rows_per_s": rows / (end - t0),
        "batches": len(batches),
        "batch_p50_ms": batches[len(batches) // 2],
        "batch_p99_ms": batches[min(len(batches) - 1, int(len(batches) * 0.99))],
        "batch_max_ms": batches[-1],
    }
