"""claim_jobs: order, readiness, limits, attempts, exclusivity, lock keys, queues."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from onthedot import JobFilter, JobState
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import (
    T0,
    at,
    job,
    new_job,
    run_threads,
    succeed,
    wait_until,
)


def test_claim_order_is_priority_then_run_at_then_id(storage: Storage) -> None:
    specs = [  # (priority, run_at offset)
        (0, 0),
        (5, -10),
        (0, -20),
        (5, -30),
        (-1, -99),
        (0, -20),
        (5, -30),
    ]
    ids = storage.at(T0).enqueue([new_job("o", priority=p, run_at=at(s)) for p, s in specs])
    expected = sorted(range(len(ids)), key=lambda i: (-specs[i][0], specs[i][1], ids[i]))
    claimed = storage.at(T0).claim_jobs("w", "default", 100, 30)
    assert [c.id for c in claimed] == [ids[i] for i in expected]
    # The same order holds one claim at a time.
    ids2 = storage.at(T0).enqueue([new_job("o", priority=p, run_at=at(s)) for p, s in specs])
    one_by_one = [storage.at(T0).claim_jobs("w", "default", 1, 30) for _ in ids2]
    assert [c[0].id for c in one_by_one] == [ids2[i] for i in expected]


def test_delayed_job_not_claimed_before_run_at(storage: Storage) -> None:
    (job_id,) = storage.at(T0).enqueue([new_job("d", run_at=at(60))])
    assert storage.at(T0).claim_jobs("w", "default", 10, 30) == []
    assert storage.at(at(59.5)).claim_jobs("w", "default", 10, 30) == []
    assert storage.at(at(30)).seconds_until_ready(["default"]) == 30.0
    claimed = storage.at(at(60)).claim_jobs("w", "default", 10, 30)
    assert [c.id for c in claimed] == [job_id]


def test_seconds_until_ready(storage: Storage) -> None:
    assert storage.at(T0).seconds_until_ready(["default"]) is None
    storage.at(T0).enqueue([new_job("s", run_at=at(50), queue="a"), new_job("s", run_at=at(20))])
    assert storage.at(T0).seconds_until_ready(["default"]) == 20.0
    assert storage.at(T0).seconds_until_ready(["a", "default"]) == 20.0
    assert storage.at(T0).seconds_until_ready(["a"]) == 50.0
    ready = storage.at(at(25)).seconds_until_ready(["default"])
    assert ready is not None and ready <= 0
    assert storage.at(T0).seconds_until_ready(["nothing"]) is None


def test_limit_respected_and_no_job_twice(storage: Storage) -> None:
    ids = storage.at(T0).enqueue([new_job("l", args=[i]) for i in range(10)])
    first = storage.at(T0).claim_jobs("w1", "default", 4, 30)
    second = storage.at(T0).claim_jobs("w2", "default", 4, 30)
    third = storage.at(T0).claim_jobs("w1", "default", 4, 30)
    assert [len(first), len(second), len(third)] == [4, 4, 2]
    assert [c.id for c in first + second + third] == ids
    assert storage.at(T0).claim_jobs("w3", "default", 4, 30) == []
    assert {job(storage, c.id).worker_id for c in second} == {"w2"}


def test_claim_counts_an_attempt_and_returns_the_job(storage: Storage) -> None:
    (job_id,) = storage.at(T0).enqueue(
        [
            new_job(
                "c",
                args=[1, {"a": None}],
                kwargs={"k": "v"},
                queue="q",
                max_attempts=4,
                timeout=1.5,
            )
        ],
    )
    (claimed,) = storage.at(at(1)).claim_jobs("w1", "q", 5, 30)
    assert (claimed.id, claimed.name, claimed.queue) == (job_id, "c", "q")
    assert (claimed.args, claimed.kwargs) == ([1, {"a": None}], {"k": "v"})
    assert (claimed.attempt, claimed.max_attempts, claimed.timeout) == (1, 4, 1.5)
    assert claimed.schedule_key is None and claimed.slot is None
    running = job(storage, job_id)
    assert running.state is JobState.RUNNING and running.attempts == 1
    assert (running.worker_id, running.started_at) == ("w1", at(1))

    storage.at(at(2)).finish_jobs("w1", [_retry(job_id)])
    (again,) = storage.at(at(2)).claim_jobs("w2", "q", 5, 30)
    assert again.attempt == 2 and job(storage, job_id).attempts == 2


def _retry(job_id: int) -> Outcome:
    return Outcome(job_id, OutcomeKind.RETRY, error="E: again", retry_in=0)


def test_queue_isolation(storage: Storage) -> None:
    a = storage.at(T0).enqueue([new_job("i", queue="a") for _ in range(3)])
    b = storage.at(T0).enqueue([new_job("i", queue="b", priority=9) for _ in range(2)])
    assert [c.id for c in storage.at(T0).claim_jobs("w", "a", 10, 30)] == a
    assert storage.at(T0).claim_jobs("w", "a", 10, 30) == []
    assert storage.at(T0).claim_jobs("w", "c", 10, 30) == []
    assert [c.id for c in storage.at(T0).claim_jobs("w", "b", 10, 30)] == b


def test_concurrent_claims_never_share_a_job(
    storage: Storage, other_storages: Callable[[int], Sequence[Storage]]
) -> None:
    """Separate connections (as separate processes would have) claim in a tight race."""
    n_jobs, n_threads = 600, 4
    ids = storage.at(T0).enqueue([new_job("race", args=[i]) for i in range(n_jobs)])
    stores = other_storages(n_threads)

    def claim_all(i: int) -> list[int]:
        rng = random.Random(i)
        got: list[int] = []
        while True:
            batch = stores[i].at(T0).claim_jobs(f"w{i}", "default", rng.randint(1, 4), 30)
            if not batch:
                return got
            got.extend(c.id for c in batch)

    claimed = run_threads(n_threads, claim_all)
    every = [j for got in claimed for j in got]
    assert len(every) == len(set(every)), "a job was handed to two workers"
    assert sorted(every) == ids
    assert storage.count_jobs(JobFilter(state=JobState.RUNNING)) == n_jobs
    for i, got in enumerate(claimed):
        assert {job(storage, j).worker_id for j in got[:5]} <= {f"w{i}"}


def test_lock_key_serializes(storage: Storage) -> None:
    a1, a2, free, b1, a3 = storage.at(T0).enqueue(
        [
            new_job("s", lock_key="a"),
            new_job("s", lock_key="a"),
            new_job("s"),
            new_job("s", lock_key="b"),
            new_job("s", lock_key="a"),
        ],
    )
    assert [c.id for c in storage.at(T0).claim_jobs("w", "default", 10, 30)] == [a1, free, b1]
    assert storage.at(T0).claim_jobs("w", "default", 10, 30) == []
    storage.at(at(1)).finish_jobs("w", [succeed(a1)])
    assert [c.id for c in storage.at(at(1)).claim_jobs("w", "default", 10, 30)] == [a2]
    storage.at(at(2)).release_jobs("w", [a2])  # released: still the next of its key
    assert [c.id for c in storage.at(at(2)).claim_jobs("w2", "default", 10, 30)] == [a2]
    storage.at(at(3)).finish_jobs("w2", [succeed(a2)])
    assert [c.id for c in storage.at(at(3)).claim_jobs("w", "default", 10, 30)] == [a3]


def test_lock_key_under_concurrent_claims(
    storage: Storage, other_storages: Callable[[int], Sequence[Storage]]
) -> None:
    keys = ["k0", "k1", "k2"]
    jobs = [new_job("s", lock_key=keys[i % 3], args=[i]) for i in range(45)]
    ids = storage.at(T0).enqueue(jobs)
    key_of = {job_id: keys[i % 3] for i, job_id in enumerate(ids)}
    stores = other_storages(4)
    held: set[str] = set()
    guard = threading.Lock()
    overlaps: list[str] = []
    done: list[int] = []

    def work(i: int) -> None:
        idle = 0
        while idle < 200 and len(done) < len(ids):
            batch = stores[i].at(T0).claim_jobs(f"w{i}", "default", 3, 30)
            idle = 0 if batch else idle + 1
            with guard:
                for claimed in batch:
                    key = key_of[claimed.id]
                    if key in held:
                        overlaps.append(key)
                    held.add(key)
                    done.append(claimed.id)
            # Let go of the keys before finishing: another worker may claim a key only after
            # its finish, so any key found held above was handed out twice by the database.
            with guard:
                for claimed in batch:
                    held.discard(key_of[claimed.id])
            stores[i].at(T0).finish_jobs(f"w{i}", [succeed(c.id) for c in batch])

    run_threads(4, work)
    assert overlaps == []
    assert sorted(done) == ids
    assert storage.count_jobs(JobFilter(state=JobState.SUCCEEDED)) == len(ids)


def test_verbs_on_the_database_clock(storage: Storage) -> None:
    """No fixed time: every verb reads the database clock (PostgreSQL now(), SQLite clock)."""
    start = storage.db_now()
    assert start.utcoffset() == timedelta(0)
    assert abs(start - datetime.now(UTC)) < timedelta(minutes=5)
    ready, later = storage.enqueue(
        [new_job("db", args=[1]), new_job("db", run_at=start + timedelta(hours=1))]
    )
    assert start <= job(storage, ready).run_at <= storage.db_now()
    wait = storage.seconds_until_ready(["default"])
    assert wait is not None and wait <= 0
    (claimed,) = storage.claim_jobs("w1", "default", 10, 30)
    assert claimed.id == ready
    until = storage.seconds_until_ready(["default"])
    assert until is not None and 3000 < until <= 3600
    storage.finish_jobs("w1", [Outcome(ready, OutcomeKind.RETRY, error="E", retry_in=0)])
    again = job(storage, ready)
    assert again.state is JobState.QUEUED and start <= again.run_at <= storage.db_now()
    (reclaimed,) = storage.claim_jobs("w1", "default", 10, 0)  # a lease that ends at once
    rescued = wait_until(storage.rescue_jobs, "the zero lease to expire")
    assert [r.id for r in rescued] == [reclaimed.id]
    storage.claim_jobs("w1", "default", 10, 30)
    assert storage.finish_jobs("w1", [succeed(ready)]) == 1
    done = job(storage, ready)
    assert done.finished_at is not None and start <= done.finished_at <= storage.db_now()
    assert job(storage, later).state is JobState.QUEUED
    stats = {s.queue: s for s in storage.queue_stats()}["default"]
    assert (stats.queued, stats.ready, stats.succeeded) == (1, 0, 1)


def test_queued_by_name_counts_only_queued_jobs(storage: Storage) -> None:
    assert storage.queued_by_name() == {}
    storage.at(T0).enqueue([new_job("a"), new_job("a"), new_job("b"), new_job("c")])
    storage.at(at(1)).claim_jobs("w", "default", 1, 30)  # one `a` now runs: not queued
    assert storage.queued_by_name() == {"a": 1, "b": 1, "c": 1}


def test_a_paused_queue_is_checked_in_the_claim_itself(storage: Storage) -> None:
    """`queues pause` holds every claim that starts after it returns, whatever a worker's
    cached list of paused queues says (it was re-read only every 2 s: a job enqueued just
    after the pause ran)."""
    # A job lost beside others (a shared claim rescued) is claimed alone after: `solo`.
    (solo,) = storage.at(T0).enqueue([new_job("s", queue="mail")])
    assert len(storage.at(T0).claim_jobs("w0", "mail", 1, 5, shared=True)) == 1
    assert len(storage.at(at(6)).rescue_jobs()) == 1
    (mail,) = storage.at(at(6)).enqueue([new_job("m", queue="mail")])
    (other,) = storage.at(at(6)).enqueue([new_job("o", queue="other")])
    storage.set_queue_paused("mail", True, "ops")
    assert storage.at(at(7)).claim_jobs("w", "mail", 10, 30) == []
    assert storage.at(at(7)).claim_alone("w", "mail", 30) is None
    assert [c.id for c in storage.at(at(7)).claim_jobs("w", "other", 10, 30)] == [other]
    storage.set_queue_paused("mail", False, "ops")
    assert [c.id for c in storage.at(at(8)).claim_jobs("w", "mail", 10, 30, shared=True)] == [mail]
    claimed = storage.at(at(8)).claim_alone("w2", "mail", 30)
    assert claimed is not None and claimed.id == solo
