"""Exactly once across processes: several scheduler processes over one database, ticking
through the same random times, enqueue every slot in (first sight, last tick] exactly once."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from onthedot import App, ManualClock
from onthedot.testing import tick
from tests.scheduler.helpers import history, job_slots, utc
from tests.scheduler.slot_rules import (
    SlotRule,
    every,
    every_minute,
    range_step,
    seconds_list,
    step,
    tick_times,
)

PROCESSES = 3
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0


def scenario(seed: int) -> tuple[list[tuple[str, SlotRule, str]], list[int]]:
    rng = random.Random(seed)
    rules = [
        every(rng.randint(1, 5)),
        step(rng.randint(2, 9)),
        seconds_list(rng.sample(range(60), 4)),
        range_step(rng.randint(0, 30), rng.randint(2, 11)),
        every_minute(),
    ]
    zones = ["UTC", "America/New_York", "Australia/Lord_Howe", "Europe/Paris", "UTC"]
    keyed = [
        (f"proc-{i}", rule, zone) for i, (rule, zone) in enumerate(zip(rules, zones, strict=True))
    ]
    gaps = [rng.choice([0, rng.randint(1, 900), rng.randint(900, 9000)]) for _ in range(40)]
    return keyed, gaps


@pytest.mark.parametrize("seed", [20241103])
def test_scheduler_processes_enqueue_every_slot_exactly_once(db_url: str, seed: int) -> None:
    keyed, gaps = scenario(seed)
    start = utc(2024, 11, 3, 5, 59) + timedelta(milliseconds=seed % 1000)
    times = tick_times(start, gaps)
    app = App(db_url, clock=ManualClock(start), log_events=False, lease=2.0)
    app.job(name="work")(lambda: None)
    for key, rule, zone in keyed:
        app.schedule(key, rule.text, "work", timezone=zone, catchup="all", catchup_window="1d")
    app.migrate()
    try:
        assert tick(app) == []  # first sight at `start`
        procs = []
        for index in range(PROCESSES):
            config = {
                "url": db_url,
                "start": start.isoformat(),
                "times": [t.isoformat() for t in times],
                "specs": [[key, rule.text, zone] for key, rule, zone in keyed],
                "index": f"{index}-{uuid.uuid4().hex[:6]}",
            }
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tests.scheduler.tick_process", json.dumps(config)],
                    cwd=ROOT,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        try:
            for proc in procs:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                assert line.strip() == "ready", (line, proc.stderr and proc.stderr.read())
            for proc in procs:  # all at once: they contend from the first tick
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()
            for proc in procs:
                out, err = proc.communicate(timeout=TIMEOUT)
                assert proc.returncode == 0, err
                assert out.strip() == f"done {len(times)}"
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert tick(app, times[-1]) == []
        for key, rule, _ in keyed:
            expected = rule.slots(start, times[-1])
            assert expected, key  # the scenario is long enough for every rule to fire
            assert history(app, key) == [(s, "enqueued") for s in expected], key
            assert job_slots(app, key) == expected, key
    finally:
        app.close()
