"""Limits under crashes (issue 27): 4 worker processes x `-c 8`, SIGKILLed at random and
restarted, run jobs under `concurrency=3` per tenant (10 tenants) and a shared rate. The
checker proves, from each attempt's own records and the database's rescue records, that no
tenant ever had more than 3 running at once (a killed worker's job counted until its rescue),
that no window of claims exceeded the rate beyond the burst, that every job finished, and that
no attempt ran twice."""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from onthedot import JobFilter, JobState
from onthedot.config import parse_database_url
from tests.conftest import drop_pg_schema, new_pg_schema_url
from tests.torture import limits_app
from tests.torture.harness import ChaosLog, Fleet, wait_for

APP = "tests.torture.limits_app:app"
JOBS = 240
TENANTS = 10
CHAOS_SECONDS = 14.0


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/limits.db"
        return
    found, schema = new_pg_schema_url()
    yield found
    drop_pg_schema(schema)


def rows(url: str, sql: str) -> list[tuple[Any, ...]]:
    cfg = parse_database_url(url)
    if cfg.backend == "sqlite":
        assert cfg.path is not None
        with sqlite3.connect(cfg.path, timeout=30) as conn:
            return list(conn.execute(sql).fetchall())
    with psycopg.connect(cfg.url) as conn:
        return list(conn.execute(sql).fetchall())


def most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    now = most = 0
    for _, step in edges:  # an end at the instant of a start comes first (-1 < 1)
        now += step
        most = max(most, now)
    return most


def worst_window(claims: list[float]) -> float:
    """The largest excess of starts over `burst + rate x window` over every window of claims."""
    claims.sort()
    worst = -float("inf")
    for i in range(len(claims)):
        for j in range(i, len(claims)):
            allowed = limits_app.BURST + limits_app.RATE * (claims[j] - claims[i])
            worst = max(worst, (j - i + 1) - allowed)
    return worst


def test_limits_hold_while_workers_are_killed(
    url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    client = limits_app.make_app(url, log_events=False)
    client.migrate()
    limits_app.create_table(url)
    work = client.jobs["limited"]
    ids = [work.enqueue(n, n % TENANTS) for n in range(JOBS)]
    chaos = ChaosLog()
    fleet = Fleet(url, tmp_path, chaos, lease=2.0, app=APP)
    rng = random.Random(27)
    try:
        for _ in range(4):
            fleet.start("-c", "8", "--no-scheduler")
        end = time.monotonic() + CHAOS_SECONDS
        while time.monotonic() < end:
            time.sleep(rng.uniform(1.0, 2.5))
            victim = rng.choice(fleet.running())
            fleet.kill(victim)
            fleet.start("-c", "8", "--no-scheduler")

        def unfinished() -> int:
            return client.storage.count_jobs(JobFilter(state=JobState.QUEUED)) + (
                client.storage.count_jobs(JobFilter(state=JobState.RUNNING))
            )

        wait_for(lambda: unfinished() == 0, "every job to finish", 120)
        fleet.stop_all()
    finally:
        chaos.dump(tmp_path / "chaos.json")
        fleet.close()
        client.close()
    states = {client.get_job(i).state for i in ids}  # type: ignore[union-attr]
    assert states == {JobState.SUCCEEDED}
    runs = rows(
        url, f"SELECT job_id, attempt, tenant, claimed, started, ended, runs FROM {limits_app.RUNS}"
    )
    assert all(r[6] == 1 for r in runs), "an attempt ran twice"
    # A killed attempt holds its slot until its rescue: the instant in its job's error list.
    rescued: dict[tuple[int, int], float] = {}
    for job_id, errors in rows(url, "SELECT id, errors FROM onthedot_jobs"):
        for e in json.loads(errors) if isinstance(errors, str) else errors or []:
            if "lost" in str(e.get("error", "")).lower():
                at = datetime.fromisoformat(e["at"].replace("Z", "+00:00")).timestamp()
                rescued[(job_id, e["attempt"])] = at
    spans: dict[int, list[tuple[float, float]]] = defaultdict(list)
    killed = 0
    for job_id, attempt, tenant, _claimed, started, ended, _ in runs:
        if ended is None:
            killed += 1
            ended = rescued[(job_id, attempt)]
        spans[tenant].append((started, ended))
    most = {t: most_at_once(s) for t, s in spans.items()}
    assert max(most.values()) <= limits_app.CONCURRENCY, most
    claims = [r[3] for r in runs if r[3] is not None]
    excess = worst_window(claims)
    assert excess <= 1e-6, f"a window of claims exceeded rate x window + burst by {excess}"
    record_result.update(
        backend=url.split(":", 1)[0],
        jobs=JOBS,
        attempts=len(runs),
        killed_workers=chaos.count("kill"),
        killed_attempts=killed,
        most_running_per_tenant=max(most.values()),
        worst_window_excess=round(excess, 3),
    )
