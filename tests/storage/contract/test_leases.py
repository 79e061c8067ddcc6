"""Leases and workers: heartbeat, rescue, worker rows, maintenance turns, pruning."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from onthedot import JobFilter, JobState
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.domain.rescue import Lease
from onthedot.storage.interface import Storage, WorkerInfo
from tests.storage.contract.conftest import T0, at, job, new_job, run_threads, succeed


def _worker(worker_id: str, **fields: object) -> WorkerInfo:
    info = {"hostname": "host-a", "pid": 4242, "queues": ("default",), "concurrency": 4}
    info.update(fields)
    return WorkerInfo(id=worker_id, **info)  # type: ignore[arg-type]


def test_heartbeat_extends_leases(storage: Storage) -> None:
    mine = storage.at(T0).enqueue([new_job("h"), new_job("h")])
    (theirs,) = storage.at(T0).enqueue([new_job("h", queue="other")])
    storage.at(T0).claim_jobs("w1", "default", 2, 10)  # leased until T0+10
    storage.at(T0).claim_jobs("w2", "other", 1, 10)
    beat = storage.at(at(8)).heartbeat("w1", 10)  # w1's leases: until T0+18
    assert (sorted(beat.renewed), beat.cancel) == (mine, frozenset())
    rescued = storage.at(at(12)).rescue_jobs()
    assert [r.id for r in rescued] == [theirs]
    assert storage.at(at(17.5)).rescue_jobs() == []
    assert {job(storage, i).state for i in mine} == {JobState.RUNNING}
    assert sorted(r.id for r in storage.at(at(18.5)).rescue_jobs()) == mine


def test_heartbeat_returns_cancel_requests(storage: Storage) -> None:
    a, b = storage.at(T0).enqueue([new_job("h"), new_job("h")])
    storage.at(T0).claim_jobs("w1", "default", 2, 30)
    assert storage.at(at(1)).heartbeat("w1", 30).cancel == set()
    storage.at(at(2)).job_action("cancel", b)
    assert job(storage, b).cancel_requested and job(storage, b).state is JobState.RUNNING
    assert storage.at(at(3)).heartbeat("w1", 30).cancel == {b}
    assert storage.at(at(3)).heartbeat("w2", 30).renewed == set()
    storage.at(at(4)).finish_jobs("w1", [Outcome(b, OutcomeKind.CANCELLED)])
    beat = storage.at(at(5)).heartbeat("w1", 30)
    assert (beat.renewed, beat.cancel) == ({a}, set())  # b is finished: no longer renewed
    assert job(storage, b).state is JobState.CANCELLED and not job(storage, b).cancel_requested
    assert job(storage, a).state is JobState.RUNNING


def test_rescue_requeues_or_fails(storage: Storage) -> None:
    again, last = storage.at(T0).enqueue(
        [new_job("r", max_attempts=2), new_job("r", max_attempts=1)]
    )
    storage.at(T0).claim_jobs("w1", "default", 2, 5)
    assert storage.at(at(5)).rescue_jobs() == []  # the lease runs until T0+5 inclusive
    rescued = {r.id: r for r in storage.at(at(6)).rescue_jobs()}
    assert set(rescued) == {again, last}
    assert (rescued[again].name, rescued[again].attempt, rescued[again].requeued) == ("r", 1, True)
    assert (rescued[last].attempt, rescued[last].requeued) == (1, False)

    requeued = job(storage, again)
    assert (requeued.state, requeued.run_at, requeued.finished_at) == (JobState.QUEUED, at(6), None)
    assert requeued.error is not None and requeued.error.startswith("WorkerLost")
    assert [(e["attempt"], e["worker_id"]) for e in requeued.errors] == [(1, "w1")]
    assert "WorkerLost" in requeued.errors[0]["error"]
    failed = job(storage, last)
    assert (failed.state, failed.finished_at) == (JobState.FAILED, at(6))
    assert failed.error is not None and failed.error.startswith("WorkerLost")

    # The requeued job runs its second (and last) attempt; losing that one fails it for good.
    (claimed,) = storage.at(at(7)).claim_jobs("w2", "default", 5, 5)
    assert (claimed.id, claimed.attempt) == (again, 2)
    (second,) = storage.at(at(20)).rescue_jobs()
    assert (second.id, second.attempt, second.requeued) == (again, 2, False)
    assert len(job(storage, again).errors) == 2
    assert storage.at(at(100)).rescue_jobs() == []


def test_ending_leases_lists_what_a_rescuer_watches(storage: Storage) -> None:
    a, b, c = storage.at(T0).enqueue([new_job("r"), new_job("r"), new_job("r")])
    storage.at(T0).claim_jobs("w1", "default", 1, 10)  # a: until T0+10
    storage.at(at(4)).claim_jobs("w2", "default", 1, 10)  # b: until T0+14
    assert storage.at(at(1)).ending_leases(5) == []
    assert storage.at(at(6)).ending_leases(5) == [Lease(a, at(10))]
    assert storage.at(at(12)).ending_leases(5) == [Lease(a, at(10)), Lease(b, at(14))]
    assert storage.at(at(12)).ending_leases(5, limit=1) == [Lease(a, at(10))]
    storage.at(at(8)).heartbeat("w1", 10)  # a: until T0+18
    assert storage.at(at(12)).ending_leases(5) == [Lease(b, at(14))]
    assert job(storage, c).state is JobState.QUEUED  # never listed: not running


def test_rescue_of_watched_leases_skips_those_renewed_since(storage: Storage) -> None:
    a, b, c = storage.at(T0).enqueue([new_job("r"), new_job("r"), new_job("r")])
    storage.at(T0).claim_jobs("w1", "default", 3, 10)  # until T0+10
    seen = storage.at(at(11)).ending_leases(0)
    assert seen == [Lease(a, at(10)), Lease(b, at(10)), Lease(c, at(10))]
    storage.at(at(12)).heartbeat("w1", 10, held=[b])  # b renewed after it was seen
    # c was seen, but is not among those handed over: only `only` is rescued.
    rescued = storage.at(at(13)).rescue_jobs(only=seen[:2])
    assert [r.id for r in rescued] == [a]
    assert [job(storage, i).state for i in (a, b, c)] == [
        JobState.QUEUED,
        JobState.RUNNING,
        JobState.RUNNING,
    ]
    # Not rescued while its lease has not ended by the storage's clock, even if handed over.
    assert storage.at(at(5)).rescue_jobs(only=[Lease(c, at(10))]) == []
    assert [r.id for r in storage.at(at(13)).rescue_jobs(only=[Lease(c, at(10))])] == [c]
    assert storage.at(at(13)).rescue_jobs(only=[]) == []


def test_rescue_respects_limit(storage: Storage) -> None:
    ids = storage.at(T0).enqueue([new_job("r") for _ in range(5)])
    storage.at(T0).claim_jobs("w1", "default", 5, 1)
    first = storage.at(at(2)).rescue_jobs(limit=3)
    rest = storage.at(at(2)).rescue_jobs(limit=3)
    assert (len(first), len(rest)) == (3, 2)
    assert sorted(r.id for r in first + rest) == ids


def test_concurrent_rescue_is_idempotent(
    storage: Storage, other_storages: Callable[[int], Sequence[Storage]]
) -> None:
    ids = storage.at(T0).enqueue([new_job("r") for _ in range(300)])
    storage.at(T0).claim_jobs("w1", "default", 300, 1)
    stores = other_storages(4)

    def rescue(i: int) -> list[int]:
        got: list[int] = []
        while batch := stores[i].at(at(5)).rescue_jobs(limit=25):
            got.extend(r.id for r in batch)
        return got

    results = run_threads(4, rescue)
    every = [j for got in results for j in got]
    assert len(every) == len(set(every)), "a job was rescued twice"
    assert sorted(every) == ids
    assert {len(job(storage, i).errors) for i in ids[::50]} == {1}
    assert storage.count_jobs(JobFilter(state=JobState.QUEUED)) == 300


def test_worker_rows(storage: Storage) -> None:
    assert storage.at(T0).list_workers() == []
    storage.at(T0).register_worker(_worker("w1", queues=("a", "b"), scheduler=False))
    storage.at(at(10)).register_worker(_worker("w2", generation=3, pid=7))
    (job_id,) = storage.at(T0).enqueue([new_job("x")])
    storage.at(at(10)).claim_jobs("w1", "default", 1, 30)

    w2, w1 = storage.at(at(15)).list_workers()  # newest first
    assert (w1.id, w1.hostname, w1.pid, w1.queues, w1.concurrency) == (
        "w1",
        "host-a",
        4242,
        ("a", "b"),
        4,
    )
    assert (w1.scheduler, w1.generation, w1.stopping, w1.running_jobs) == (False, 0, False, 1)
    assert (w1.started_at, w1.heartbeat_at, w1.heartbeat_age) == (T0, T0, 15.0)
    assert (w2.id, w2.pid, w2.generation, w2.scheduler, w2.running_jobs) == ("w2", 7, 3, True, 0)
    assert w2.heartbeat_age == 5.0
    assert w1.to_json()["queues"] == ["a", "b"]

    storage.at(at(14)).heartbeat("w1", 30)
    storage.deregister_worker("w1", stopping=True)
    w1 = next(w for w in storage.at(at(15)).list_workers() if w.id == "w1")
    assert (w1.heartbeat_at, w1.heartbeat_age, w1.stopping) == (at(14), 1.0, True)

    # Registering again (a restart under the same id) clears `stopping`.
    storage.at(at(20)).register_worker(_worker("w1", generation=4))
    w1 = next(w for w in storage.at(at(20)).list_workers() if w.id == "w1")
    assert (w1.stopping, w1.generation, w1.heartbeat_at) == (False, 4, at(20))

    storage.deregister_worker("w1")
    storage.deregister_worker("nobody")
    assert [w.id for w in storage.at(at(20)).list_workers()] == ["w2"]
    assert job(storage, job_id).state is JobState.RUNNING  # deregistering leaves jobs to rescue


def test_acquire_maintenance(storage: Storage) -> None:
    assert storage.at(T0).acquire_maintenance("prune", 60, "w1")
    assert not storage.at(T0).acquire_maintenance("prune", 60, "w2")
    assert not storage.at(at(59.9)).acquire_maintenance("prune", 60, "w1")
    assert storage.at(at(1)).acquire_maintenance("rescue", 60, "w2")  # tasks are independent
    assert storage.at(at(60)).acquire_maintenance("prune", 60, "w2")
    assert not storage.at(at(61)).acquire_maintenance("prune", 60, "w1")
    assert storage.at(at(500)).acquire_maintenance("prune", 60, "w1")


def test_acquire_maintenance_one_winner_per_interval(
    storage: Storage, other_storages: Callable[[int], Sequence[Storage]]
) -> None:
    stores = other_storages(6)
    for round_no in range(5):
        now = at(round_no * 10)
        wins = run_threads(
            6, lambda i, now=now: stores[i].at(now).acquire_maintenance("tick", 10, f"w{i}")
        )
        assert sum(wins) == 1, f"round {round_no}: {wins}"


def test_prune_deletes_only_old_finished_jobs_and_old_workers(storage: Storage) -> None:
    done_old, failed_old, cancelled_old, done_new, running, queued_old = storage.at(T0).enqueue(
        [new_job("p", queue=q) for q in ("a", "b", "c", "d", "e", "zz")]
    )
    for q in "abc":
        storage.at(T0).claim_jobs("w", q, 1, 10_000)
    storage.at(at(10)).finish_jobs(
        "w",
        [
            succeed(done_old),
            Outcome(failed_old, OutcomeKind.FAILED, error="E"),
            Outcome(cancelled_old, OutcomeKind.CANCELLED),
        ],
    )
    storage.at(T0).claim_jobs("w", "d", 1, 10_000)
    storage.at(at(100)).finish_jobs("w", [succeed(done_new)])
    storage.at(T0).claim_jobs("w", "e", 1, 10_000)
    storage.at(T0).register_worker(_worker("old"))
    storage.at(at(100)).register_worker(_worker("young"))

    counts = storage.prune(older_than=at(50), workers_older_than=at(50))
    assert counts["jobs"] == 3 and counts["workers"] == 1
    for gone in (done_old, failed_old, cancelled_old):
        assert storage.get_job(gone) is None
    assert job(storage, done_new).state is JobState.SUCCEEDED
    assert job(storage, running).state is JobState.RUNNING
    assert job(storage, queued_old).state is JobState.QUEUED
    assert [w.id for w in storage.at(at(100)).list_workers()] == ["young"]
    again = storage.prune(older_than=at(50), workers_older_than=at(50))
    assert (again["jobs"], again["workers"]) == (0, 0)
    # Finishing exactly at the cut-off is not "before" it.
    assert storage.prune(older_than=at(100), workers_older_than=T0)["jobs"] == 0
    assert storage.prune(older_than=at(100.001), workers_older_than=T0)["jobs"] == 1


def test_workers_and_maintenance_on_the_database_clock(storage: Storage) -> None:
    start = storage.db_now()
    storage.register_worker(_worker("w1"))
    storage.heartbeat("w1", 30)
    (row,) = storage.list_workers()
    assert start <= row.started_at <= row.heartbeat_at <= storage.db_now()
    assert 0 <= row.heartbeat_age < 300
    assert storage.acquire_maintenance("task", 3600, "w1")
    assert not storage.acquire_maintenance("task", 3600, "w2")
    assert storage.prune(older_than=start, workers_older_than=start)["workers"] == 0
    assert storage.prune(older_than=start, workers_older_than=storage.db_now())["workers"] == 1


def test_prune_jobs_deletes_a_bounded_batch_oldest_first(storage: Storage) -> None:
    ids = storage.at(T0).enqueue([new_job("p") for _ in range(5)])
    for i, job_id in enumerate(ids):  # finished at T0+40, T0+30, ... T0+0: newest id oldest
        storage.at(T0).claim_jobs("w", "default", 1, 10_000)
        storage.at(at(40 - 10 * i)).finish_jobs("w", [succeed(job_id)])
    assert storage.prune_jobs(older_than=at(35), limit=2) == 2
    assert [storage.get_job(i) is None for i in ids] == [False, False, False, True, True]
    assert storage.prune_jobs(older_than=at(35), limit=2) == 2
    assert storage.prune_jobs(older_than=at(35), limit=2) == 0  # the one left is younger
    assert storage.get_job(ids[0]) is not None
    with pytest.raises(ValueError, match="limit must be a positive int"):
        storage.prune_jobs(older_than=at(35), limit=0)
