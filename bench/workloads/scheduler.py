"""Workload 4: the scheduler with 1k / 10k / 100k every-minute schedules.

- idle: one scheduler loop iteration (one tick, which also returns the next due instant) while
  nothing is due;
- burst: every schedule is due at the same instant; two scheduler processes (every worker
  ticks; there is no leader) tick together until nothing is due. Time until every slot is
  enqueued, then duplicates (two jobs for one slot) and misses (a slot without a job) are
  counted in the database: both must be 0. Once more at the largest N with every schedule's
  spec distinct (an interval from its own anchor), so no timing evaluation is shared.

A manual clock stands in for the database clock (the storage verbs take `now`), so the burst
happens on cue instead of at the next minute boundary; the code path is the same.
"""

from __future__ import annotations

from bench.harness import CellFailed, kill_group, log, result_of, run_cell, spawn
from bench.plan import Context
from bench.systems import OURS


def run(ctx: Context) -> None:
    if not ctx.wants(OURS):
        return
    for r in range(ctx.sizes.rounds):
        for n in ctx.sizes.schedules:
            label = f"{n:,} schedules"
            idle = ctx.results.cell("scheduler", "idle tick", OURS.key, label, "ms", higher=False)
            burst = ctx.results.cell("scheduler", "burst", OURS.key, label, "s", higher=False)
            log(f"scheduler n={n} round {r + 1}")
            try:
                url = ctx.fresh_url(OURS)
                sync = run_cell("onthedot", "sched_sync", {"url": url, "n": n}, timeout=900)
                res = run_cell(
                    "onthedot",
                    "sched_idle",
                    {"url": url, "n": n, "profile": ctx.profile(f"sched-idle-{n}")},
                    timeout=900,
                )
                idle.add(
                    res["wall_ms"],
                    cpu_ms=res["cpu_ms"],
                    p99_ms=res["wall_p99_ms"],
                    sync_s=sync["sync_s"],
                )
                b = _burst(ctx, url, n)
                burst.add(b.pop("seconds"), **b)
            except CellFailed as exc:
                log(f"  failed: {exc}")
                idle.errors.append(str(exc))
        # The same burst at the largest N with every spec distinct: nothing shared to memoize.
        n = max(ctx.sizes.schedules)
        label = f"{n:,} schedules, distinct specs"
        burst = ctx.results.cell("scheduler", "burst", OURS.key, label, "s", higher=False)
        log(f"scheduler n={n} distinct specs round {r + 1}")
        try:
            url = ctx.fresh_url(OURS)
            run_cell("onthedot", "sched_sync", {"url": url, "n": n, "distinct": True}, timeout=900)
            b = _burst(ctx, url, n, distinct=True)
            burst.add(b.pop("seconds"), **b)
        except CellFailed as exc:
            log(f"  failed: {exc}")
            burst.errors.append(str(exc))


def _burst(
    ctx: Context, url: str, n: int, procs: int = 2, distinct: bool = False
) -> dict[str, float]:
    import subprocess

    tag = f"sched-burst-{n}" + ("-distinct" if distinct else "")
    params = {"url": url, "n": n, "distinct": distinct, "profile": ctx.profile(tag)}
    ps = [spawn("onthedot", "sched_burst", params, stdin=subprocess.PIPE) for _ in range(procs)]
    try:
        for p in ps:
            assert p.stdout is not None
            line = p.stdout.readline()
            if "READY" not in line:
                raise CellFailed(f"scheduler process did not start: {line!r}")
        for p in ps:
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        outs = [result_of(p, timeout=900) for p in ps]
    finally:
        for p in ps:
            kill_group(p)
    seconds = max(o["end"] for o in outs) - min(o["start"] for o in outs)
    check = run_cell("onthedot", "sched_verify", {"url": url, "n": n}, timeout=120)
    return {
        "seconds": seconds,
        "slots_per_s": n / seconds,
        "duplicates": check["duplicates"],
        "misses": check["misses"],
        "enqueued": sum(o["slots"] for o in outs),
        "cpu_us_per_slot": sum(o["cpu_s"] for o in outs) / n * 1e6,
    }
