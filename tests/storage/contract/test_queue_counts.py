"""Queue statistics come from a counts table kept by triggers (migration 0004), not from counting
the jobs: after every kind of change to the jobs they must equal an exact count of the jobs."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onthedot.domain.jobs import JobFilter, JobState, Outcome, OutcomeKind
from onthedot.domain.ledger import PlannedSlot, SyncReport, TickPlan
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, new_job, succeed
from tests.storage.contract.test_ledger import code_row, sync

States = tuple[int, int, int, int, int, int, float | None]
ORDER = ("queued", "running", "succeeded", "failed", "cancelled")


def exact(storage: Storage, now: datetime) -> tuple[dict[str, States], dict[str, int]]:
    """The statistics computed from every job row (what the counts must equal)."""
    jobs = storage.list_jobs(JobFilter(limit=10**7))
    depth: Counter[tuple[str, str]] = Counter((j.queue, str(j.state)) for j in jobs)
    stats: dict[str, States] = {}
    for queue in sorted({j.queue for j in jobs}):
        ready = [j.run_at for j in jobs if j.queue == queue and j.state is JobState.QUEUED]
        ready = [r for r in ready if r <= now]
        age = (now - min(ready)).total_seconds() if ready else None
        stats[queue] = (*(depth[queue, s] for s in ORDER), len(ready), age)  # type: ignore[assignment]
    by_name = Counter(j.name for j in jobs if j.state is JobState.QUEUED)
    return stats, dict(sorted(by_name.items()))


def check(storage: Storage, now: datetime) -> None:
    """queue_stats and queued_by_name, read at `now`, equal the exact counts."""
    s = storage.at(now)
    got = {
        q.queue: (
            q.queued,
            q.running,
            q.succeeded,
            q.failed,
            q.cancelled,
            q.ready,
            q.oldest_ready_age,
        )
        for q in s.queue_stats()
    }
    want, by_name = exact(storage, now)
    assert got == want
    assert s.queued_by_name() == by_name


def test_counts_follow_every_kind_of_change(storage: Storage) -> None:
    s0 = storage.at(T0)
    check(storage, T0)
    s0.enqueue([new_job("x", queue="a")])  # one job
    s0.enqueue([new_job("y", queue="a", priority=i % 3) for i in range(5)])  # many: COPY on PG
    s0.enqueue([new_job("x", queue="b", unique_key="k")])
    s0.enqueue([new_job("x", queue="b", unique_key="k")])  # the key is taken: nothing added
    s0.enqueue([new_job("z", queue="b", run_at=at(60))])  # queued, not ready
    s0.enqueue([new_job("z", queue="b", run_at=at(30), priority=2)])  # ready before it
    s0.enqueue([new_job("z", queue="b", run_at=at(-5), priority=-1)])
    s0.enqueue([new_job("z", queue="b", unique_key="k2"), new_job("z", queue="c")])
    check(storage, T0)
    check(storage, at(31))  # one of the future jobs is ready now
    check(storage, at(61))  # both
    claimed = storage.at(at(1)).claim_jobs("w1", "a", 4, 30)
    assert len(claimed) == 4
    check(storage, at(1))
    storage.at(at(2)).finish_jobs(
        "w1",
        [
            succeed(claimed[0].id),
            Outcome(claimed[1].id, OutcomeKind.FAILED, error="E"),
            Outcome(claimed[2].id, OutcomeKind.RETRY, error="again", retry_in=30),
        ],
    )
    check(storage, at(2))
    check(storage, at(40))
    assert storage.at(at(3)).release_jobs("w1", [claimed[3].id]) == 1  # given back
    check(storage, at(3))
    (lost,) = storage.at(at(4)).claim_jobs("w2", "c", 5, 5)
    storage.at(at(5)).heartbeat("w2", 5, held=[lost.id], started=[lost.id])  # no change of state
    check(storage, at(5))
    assert [r.id for r in storage.at(at(20)).rescue_jobs()] == [lost.id]  # a dead worker's job
    check(storage, at(20))
    queued_b = storage.list_jobs(JobFilter(queue="b", state=JobState.QUEUED))
    storage.at(at(21)).job_action("cancel", queued_b[0].id)
    check(storage, at(21))
    storage.at(at(22)).job_action("retry", queued_b[0].id)
    check(storage, at(22))
    storage.at(at(23)).job_action("cancel", queued_b[0].id)
    storage.at(at(23)).job_action("delete", queued_b[0].id)
    check(storage, at(23))
    assert storage.at(at(24)).bulk_job_action("cancel", JobFilter(queue="b")) >= 1
    check(storage, at(24))
    assert storage.at(at(25)).bulk_job_action("retry", JobFilter(queue="b")) >= 1
    check(storage, at(25))
    storage.at(at(26)).bulk_job_action("cancel", JobFilter(name="y"))
    assert storage.at(at(27)).bulk_job_action("delete", JobFilter(name="y")) >= 1
    check(storage, at(27))
    # Schedule-produced jobs (the tick's own write).
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("sch", T0, at(10)),)), ["sch"])
    with storage.at(at(30)).tick(generation=1, fence_ttl=30, limit=10) as tick:
        slot = PlannedSlot(at(10), "enqueued", new_job("tick", queue="s", schedule_key="sch"))
        tick.apply([TickPlan("sch", T0, at(10), at(20), slots=(slot,), missed=0)])
    check(storage, at(30))
    (ticked,) = storage.at(at(31)).claim_jobs("w3", "s", 5, 30)
    storage.at(at(32)).finish_jobs("w3", [succeed(ticked.id)])
    check(storage, at(32))
    # Prune removes finished jobs (and compacts the counts).
    pruned = storage.at(at(40)).prune(older_than=at(1000), workers_older_than=at(0))
    assert pruned["jobs"] >= 1
    check(storage, at(40))
    # Everything gone: no queue is listed.
    storage.at(at(41)).bulk_job_action("cancel", JobFilter())
    storage.at(at(42)).bulk_job_action("delete", JobFilter())
    storage.at(at(42)).prune(older_than=at(1000), workers_older_than=at(0))
    check(storage, at(43))
    assert storage.at(at(43)).queue_stats() == [] and storage.queued_by_name() == {}


OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                *("enqueue", "enqueue_many", "claim", "finish", "rescue", "cancel", "retry"),
                *("delete", "bulk_cancel", "bulk_retry", "bulk_delete", "prune", "release"),
            ]
        ),
        st.sampled_from(["q1", "q2"]),
        st.integers(min_value=0, max_value=4),
    ),
    max_size=12,
)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=OPS)
def test_counts_equal_an_exact_count_after_any_sequence(
    storage: Storage, ops: list[tuple[str, str, int]]
) -> None:
    # The database carries over from one example to the next: the property holds regardless.
    t = 0.0
    for op, queue, k in ops:
        t += 3
        s = storage.at(at(t))
        held = s.list_jobs(JobFilter(queue=queue, state=JobState.RUNNING, limit=k + 1))
        some = s.list_jobs(JobFilter(queue=queue, limit=k + 1))
        if op == "enqueue":
            s.enqueue([new_job(f"n{k}", queue=queue, run_at=at(t + 10 * (k % 2)), priority=k)])
        elif op == "enqueue_many":
            s.enqueue([new_job(f"n{i}", queue=queue, priority=i % 2) for i in range(k + 2)])
        elif op == "claim":
            s.claim_jobs(f"w{k % 2}", queue, k + 1, 2)
        elif op == "finish" and held:
            kinds = [OutcomeKind.SUCCEEDED, OutcomeKind.FAILED, OutcomeKind.RETRY]
            s.finish_jobs(
                held[0].worker_id or "",
                [Outcome(j.id, kinds[(j.id + k) % 3], error="e", retry_in=k) for j in held],
            )
        elif op == "rescue":
            storage.at(at(t + 5)).rescue_jobs()
        elif op == "release" and held:
            s.release_jobs(held[0].worker_id or "", [held[0].id])
        elif op in ("cancel", "retry", "delete") and some:
            try:
                s.job_action(op, some[k % len(some)].id)
            except Exception as exc:  # the job was in a state the action refuses
                assert "job" in str(exc)
        elif op.startswith("bulk_"):
            s.bulk_job_action(op[5:], JobFilter(queue=queue))
        elif op == "prune":
            s.prune(older_than=at(t - 1), workers_older_than=at(0))
        check(storage, at(t))
        check(storage, at(t + 11))
