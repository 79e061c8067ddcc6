"""Operator verbs: get/list/count, queue stats, retry/cancel/delete (one and in bulk), pausing."""

from __future__ import annotations

import pytest

from onthedot import InvalidJobState, Job, JobFilter, JobNotFound, JobState
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, job, new_job, succeed

MISSING = 987_654


def retry(storage: Storage, job_id: int) -> Job:
    retried = storage.job_action("retry", job_id)
    assert retried is not None
    return retried


def cancel(storage: Storage, job_id: int) -> Job:
    cancelled = storage.job_action("cancel", job_id)
    assert cancelled is not None
    return cancelled


def delete(storage: Storage, job_id: int) -> bool:
    """True if deleted, False if there was no such job (as `App.delete_job`)."""
    try:
        assert storage.job_action("delete", job_id) is None
    except JobNotFound:
        return False
    return True


def _in_state(storage: Storage, state: JobState, **fields: object) -> int:
    """A job of queue `st-<state>` brought into `state`."""
    queue = f"st-{state}"
    (job_id,) = storage.at(T0).enqueue([new_job("op", queue=queue, **fields)])  # type: ignore[arg-type]
    if state is JobState.QUEUED:
        return job_id
    storage.at(T0).claim_jobs("w1", queue, 1, 30)
    outcome = {
        JobState.SUCCEEDED: succeed(job_id, 1),
        JobState.FAILED: Outcome(job_id, OutcomeKind.FAILED, error="Boom: failed"),
        JobState.CANCELLED: Outcome(job_id, OutcomeKind.CANCELLED, error="cancelled"),
    }.get(state)
    if outcome is not None:
        storage.at(at(1)).finish_jobs("w1", [outcome])
    assert job(storage, job_id).state is state
    return job_id


def test_get_job_of_unknown_id(storage: Storage) -> None:
    assert storage.get_job(MISSING) is None


@pytest.mark.parametrize("state", [JobState.FAILED, JobState.CANCELLED])
def test_retry_job(storage: Storage, state: JobState) -> None:
    job_id = _in_state(storage, state, max_attempts=1)
    retried = retry(storage.at(at(100)), job_id)
    assert (retried.id, retried.state, retried.attempts, retried.run_at) == (
        job_id,
        JobState.QUEUED,
        0,
        at(100),
    )
    assert retried.finished_at is None and retried.worker_id is None
    assert retried.errors == job(storage, job_id).errors  # the history is kept
    (claimed,) = storage.at(at(100)).claim_jobs("w2", f"st-{state}", 1, 30)
    assert claimed.attempt == 1  # fresh attempts


def test_retry_job_refused(storage: Storage) -> None:
    for state in (JobState.QUEUED, JobState.RUNNING, JobState.SUCCEEDED):
        job_id = _in_state(storage, state)
        with pytest.raises(InvalidJobState) as info:
            retry(storage.at(at(2)), job_id)
        assert str(info.value) == (
            f"job {job_id} is {state}: only failed or cancelled jobs can be retried"
        )
        assert job(storage, job_id).state is state


def test_operator_verbs_on_unknown_job(storage: Storage) -> None:
    with pytest.raises(JobNotFound, match=f"^no job with id {MISSING}$"):
        retry(storage.at(T0), MISSING)
    with pytest.raises(JobNotFound, match=f"^no job with id {MISSING}$"):
        cancel(storage.at(T0), MISSING)
    assert delete(storage, MISSING) is False


def test_job_action_unknown(storage: Storage) -> None:
    job_id = _in_state(storage, JobState.QUEUED)
    with pytest.raises(ValueError) as info:
        storage.job_action("pause", job_id)
    assert str(info.value) == "unknown job action 'pause': use retry, cancel or delete"
    assert job(storage, job_id).state is JobState.QUEUED


def test_cancel_job(storage: Storage) -> None:
    queued = _in_state(storage, JobState.QUEUED)
    cancelled = cancel(storage.at(at(5)), queued)
    assert (cancelled.state, cancelled.finished_at) == (JobState.CANCELLED, at(5))
    assert storage.at(at(6)).claim_jobs("w", f"st-{JobState.QUEUED}", 1, 30) == []

    running = _in_state(storage, JobState.RUNNING)
    requested = cancel(storage.at(at(5)), running)
    assert (requested.state, requested.cancel_requested) == (JobState.RUNNING, True)
    assert requested.finished_at is None
    again = cancel(storage.at(at(6)), running)  # asking twice is harmless
    assert again.cancel_requested and again.state is JobState.RUNNING


def test_cancel_job_refused_when_finished(storage: Storage) -> None:
    for state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
        job_id = _in_state(storage, state)
        with pytest.raises(InvalidJobState) as info:
            cancel(storage.at(at(2)), job_id)
        assert str(info.value) == (
            f"job {job_id} is already {state}: only queued or running jobs can be cancelled"
        )
        assert job(storage, job_id).state is state


def test_delete_job(storage: Storage) -> None:
    for state in (JobState.QUEUED, JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED):
        job_id = _in_state(storage, state)
        assert delete(storage, job_id) is True
        assert storage.get_job(job_id) is None
        assert delete(storage, job_id) is False
    running = _in_state(storage, JobState.RUNNING)
    with pytest.raises(InvalidJobState, match=f"^job {running} is running: cancel it first"):
        delete(storage, running)
    assert job(storage, running).state is JobState.RUNNING


@pytest.fixture
def population(storage: Storage) -> dict[str, list[int]]:
    """A mix of jobs: names, queues, states, arguments and errors to filter on."""
    made: dict[str, list[int]] = {}
    made["mail"] = storage.at(T0).enqueue(
        [new_job("send_mail", args=[f"user{i}@example.com"], queue="mail") for i in range(7)],
    )
    made["report"] = storage.at(T0).enqueue(
        [new_job("report", kwargs={"region": r}) for r in ("north", "south", "east")]
    )
    made["sched"] = storage.at(T0).enqueue(
        [new_job("report", schedule_key="nightly", kwargs={"region": "west"})]
    )
    # Fail two mail jobs with distinct errors, succeed one.
    claimed = storage.at(T0).claim_jobs("w1", "mail", 3, 30)
    a, b, c = (x.id for x in claimed)
    storage.at(at(1)).finish_jobs(
        "w1",
        [
            Outcome(a, OutcomeKind.FAILED, error="SMTPError: mailbox full"),
            Outcome(b, OutcomeKind.FAILED, error="TimeoutError: slow relay"),
            succeed(c),
        ],
    )
    made["failed"] = [a, b]
    return made


def _ids(storage: Storage, **filters: object) -> list[int]:
    return [j.id for j in storage.list_jobs(JobFilter(**filters))]  # type: ignore[arg-type]


def test_list_and_count_filters(storage: Storage, population: dict[str, list[int]]) -> None:
    every = sorted(population["mail"] + population["report"] + population["sched"])
    assert _ids(storage) == every[::-1]  # newest first
    assert storage.count_jobs(JobFilter()) == len(every)
    cases: list[tuple[dict[str, object], list[int]]] = [
        ({"state": JobState.FAILED}, population["failed"]),
        ({"queue": "mail"}, population["mail"]),
        ({"queue": "mail", "state": JobState.QUEUED}, population["mail"][3:]),
        ({"name": "report"}, population["report"] + population["sched"]),
        ({"name": "report", "queue": "mail"}, []),
        ({"schedule_key": "nightly"}, population["sched"]),
        ({"search": "user4@"}, [population["mail"][4]]),  # in args
        ({"search": "south"}, [population["report"][1]]),  # in kwargs
        ({"search": "mailbox full"}, [population["failed"][0]]),  # in the error
        ({"search": "Error:"}, population["failed"]),
        ({"search": "no such text"}, []),
        ({"search": "example.com", "state": JobState.SUCCEEDED}, [population["mail"][2]]),
        ({"states": (JobState.FAILED,)}, population["failed"]),
        (
            {"queue": "mail", "states": (JobState.FAILED, JobState.SUCCEEDED)},
            population["mail"][:3],
        ),
        (
            {"schedule_key": "nightly", "states": (JobState.QUEUED, JobState.RUNNING)},
            population["sched"],
        ),
        ({"schedule_key": "nightly", "states": (JobState.RUNNING,)}, []),
    ]
    for filters, expected in cases:
        assert _ids(storage, **filters) == sorted(expected, reverse=True), filters
        assert storage.count_jobs(JobFilter(**filters)) == len(expected), filters  # type: ignore[arg-type]


def test_keyset_pagination(storage: Storage, population: dict[str, list[int]]) -> None:
    everything = _ids(storage, limit=100)
    pages: list[list[int]] = []
    before: int | None = None
    while page := _ids(storage, limit=3, before_id=before):
        pages.append(page)
        before = page[-1]
    assert [len(p) for p in pages] == [3, 3, 3, 2]
    assert [i for p in pages for i in p] == everything
    # Pagination composes with filters; count_jobs ignores before_id and limit.
    mail = _ids(storage, queue="mail", limit=2, before_id=population["mail"][5])
    assert mail == [population["mail"][4], population["mail"][3]]
    assert storage.count_jobs(JobFilter(queue="mail", limit=2, before_id=mail[-1])) == 7


def test_queue_stats(storage: Storage) -> None:
    assert storage.at(T0).queue_stats() == []
    storage.at(T0).enqueue(
        [new_job("q", queue="a", run_at=at(-30)), new_job("q", queue="a", run_at=at(-10))],
    )
    storage.at(T0).enqueue([new_job("q", queue="a", run_at=at(60))])  # queued, not ready
    storage.at(T0).enqueue([new_job("q", queue="b") for _ in range(4)])
    b = storage.at(T0).claim_jobs("w", "b", 4, 30)
    storage.at(at(1)).finish_jobs(
        "w",
        [
            succeed(b[0].id),
            Outcome(b[1].id, OutcomeKind.FAILED, error="E"),
            Outcome(b[2].id, OutcomeKind.CANCELLED),
        ],
    )
    storage.set_queue_paused("b", True, "ops")
    storage.set_queue_paused("idle", True, "ops")  # paused with no jobs: still listed

    stats = {s.queue: s for s in storage.at(T0).queue_stats()}
    assert list(stats) == ["a", "b", "idle"]
    a, qb, idle = stats["a"], stats["b"], stats["idle"]
    assert (a.queued, a.running, a.succeeded, a.failed, a.cancelled, a.ready) == (3, 0, 0, 0, 0, 2)
    assert a.oldest_ready_age == 30.0 and not a.paused
    assert (qb.queued, qb.running, qb.succeeded, qb.failed, qb.cancelled) == (0, 1, 1, 1, 1)
    assert (qb.ready, qb.oldest_ready_age, qb.paused) == (0, None, True)
    assert (idle.queued, idle.ready, idle.oldest_ready_age, idle.paused) == (0, 0, None, True)
    later = {s.queue: s for s in storage.at(at(70)).queue_stats()}["a"]
    assert (later.ready, later.oldest_ready_age) == (3, 100.0)
    assert a.to_json()["ready"] == 2


def test_pause_and_resume_queues(storage: Storage) -> None:
    assert storage.paused_queues() == set()
    storage.set_queue_paused("mail", True, "alice")
    storage.set_queue_paused("mail", True, "bob")  # idempotent
    storage.set_queue_paused("reports", True, "alice")
    assert storage.paused_queues() == {"mail", "reports"}
    storage.set_queue_paused("mail", False, "alice")
    storage.set_queue_paused("never-paused", False, "alice")
    assert storage.paused_queues() == {"reports"}
    stats = {s.queue: s.paused for s in storage.at(T0).queue_stats()}
    assert stats == {"reports": True}


def test_bulk_retry_cancel_delete(storage: Storage, population: dict[str, list[int]]) -> None:
    # retry: only failed/cancelled jobs among the matches.
    assert storage.at(at(50)).bulk_job_action("retry", JobFilter(queue="mail")) == 2
    for job_id in population["failed"]:
        j = job(storage, job_id)
        assert (j.state, j.attempts, j.run_at, j.finished_at) == (JobState.QUEUED, 0, at(50), None)
    assert job(storage, population["mail"][2]).state is JobState.SUCCEEDED

    # cancel: only queued jobs; running ones are left alone.
    (running,) = storage.at(at(50)).claim_jobs("w", "default", 1, 30)
    assert storage.at(at(60)).bulk_job_action("cancel", JobFilter(name="report")) == 3
    assert job(storage, running.id).state is JobState.RUNNING
    cancelled = JobFilter(state=JobState.CANCELLED)
    assert {j.finished_at for j in storage.list_jobs(cancelled)} == {at(60)}
    assert storage.count_jobs(cancelled) == 3

    # delete: everything matching except running jobs.
    assert storage.bulk_job_action("delete", JobFilter(search="south")) == 1
    assert storage.get_job(population["report"][1]) is None
    assert storage.bulk_job_action("delete", JobFilter()) == 11 - 1 - 1
    assert _ids(storage) == [running.id]
    with pytest.raises(ValueError, match="unknown bulk action 'purge'"):
        storage.bulk_job_action("purge", JobFilter())


def test_finished_counts(storage: Storage) -> None:
    ids = storage.at(T0).enqueue([new_job("c") for _ in range(3)])
    storage.at(T0).claim_jobs("w", "default", 3, 30)
    storage.at(at(3600 * 2 + 5)).finish_jobs(
        "w",
        [succeed(ids[0]), succeed(ids[1]), Outcome(ids[2], OutcomeKind.FAILED, error="E")],
    )
    counts = storage.finished_counts(since=T0)
    assert sorted(counts) == [(at(7200), "failed", 1), (at(7200), "succeeded", 2)]
    assert storage.finished_counts(since=at(7206)) == []


def test_retry_refused_while_the_unique_key_is_taken_again(storage: Storage) -> None:
    (first,) = storage.at(T0).enqueue([new_job("u", unique_key="k")])
    storage.at(T0).claim_jobs("w", "default", 1, 30)
    storage.at(at(1)).finish_jobs("w", [Outcome(first, OutcomeKind.FAILED, error="E")])
    (second,) = storage.at(at(2)).enqueue([new_job("u", unique_key="k")])
    with pytest.raises(InvalidJobState) as info:
        retry(storage.at(at(3)), first)
    assert str(info.value) == (
        f"job {first} cannot be retried: job {second} with its unique_key 'k' is queued or running"
    )
    assert job(storage, first).state is JobState.FAILED
    # A bulk retry skips it (and retries the rest) instead of failing as a whole.
    (plain,) = storage.at(at(3)).enqueue([new_job("u")])
    storage.at(at(3)).claim_jobs("w", "default", 5, 30)
    storage.at(at(4)).finish_jobs(
        "w",
        [
            Outcome(second, OutcomeKind.FAILED, error="E"),
            Outcome(plain, OutcomeKind.FAILED, error="E"),
        ],
    )
    # Now `first` and `second` are both failed with key "k": only the newest is retried.
    assert storage.at(at(5)).bulk_job_action("retry", JobFilter(state=JobState.FAILED)) == 2
    states = [job(storage, i).state for i in (first, second, plain)]
    assert states == [JobState.FAILED, JobState.QUEUED, JobState.QUEUED]
    assert storage.at(at(6)).bulk_job_action("retry", JobFilter()) == 0
    with pytest.raises(InvalidJobState, match=f"job {second} with its unique_key"):
        retry(storage.at(at(7)), first)
