"""finish_jobs and release_jobs: outcomes persisted only by the worker that holds the job."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from onthedot import JobState
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, job, new_job, succeed


def _running(storage: Storage, n: int = 1, worker: str = "w1", **fields: Any) -> list[int]:
    ids = storage.at(T0).enqueue([new_job("f", **fields) for _ in range(n)])
    claimed = storage.at(T0).claim_jobs(worker, "default", n, 30)
    assert sorted(c.id for c in claimed) == ids
    return ids


def test_succeeded_without_result(storage: Storage) -> None:
    (job_id,) = _running(storage)
    assert storage.at(at(5)).finish_jobs("w1", [succeed(job_id)]) == 1
    j = job(storage, job_id)
    assert (j.state, j.finished_at, j.result, j.error, j.attempts) == (
        JobState.SUCCEEDED,
        at(5),
        None,
        None,
        1,
    )
    assert j.errors == [] and j.started_at == T0
    assert storage.at(at(6)).finish_jobs("w1", [succeed(job_id)]) == 0  # already finished
    assert job(storage, job_id).finished_at == at(5)


RESULTS: list[Any] = [{"total": 3, "items": [1, "a", None, 2.5]}, "text", 0, False, [], "ünï ✓"]


def test_succeeded_with_json_result(storage: Storage) -> None:
    ids = _running(storage, len(RESULTS))
    outcomes = [succeed(i, r) for i, r in zip(ids, RESULTS, strict=True)]
    assert storage.at(at(1)).finish_jobs("w1", outcomes) == len(RESULTS)
    for job_id, result in zip(ids, RESULTS, strict=True):
        j = job(storage, job_id)
        assert j.state is JobState.SUCCEEDED
        assert j.result == result and type(j.result) is type(result)


def test_retry_then_fail_keeps_an_error_history(storage: Storage) -> None:
    (job_id,) = _running(storage, max_attempts=3)
    retry = Outcome(
        job_id, OutcomeKind.RETRY, error="ValueError: one", traceback="tb1", retry_in=30
    )
    assert storage.at(at(10)).finish_jobs("w1", [retry]) == 1
    j = job(storage, job_id)
    assert j.state is JobState.QUEUED
    assert j.run_at == at(40) and j.finished_at is None
    assert (j.error, j.traceback, j.attempts) == ("ValueError: one", "tb1", 1)
    assert _history(j.errors) == [(1, at(10), "ValueError: one", "w1")]
    assert storage.at(at(39)).claim_jobs("w2", "default", 1, 30) == []

    (again,) = storage.at(at(40)).claim_jobs("w2", "default", 1, 30)
    assert again.attempt == 2
    retry2 = Outcome(job_id, OutcomeKind.RETRY, error="KeyError: two", retry_in=0.25)
    storage.at(at(50)).finish_jobs("w2", [retry2])
    assert job(storage, job_id).run_at == at(50.25)

    storage.at(at(51)).claim_jobs("w3", "default", 1, 30)
    fail = Outcome(job_id, OutcomeKind.FAILED, error="OSError: three", traceback="tb3")
    assert storage.at(at(60)).finish_jobs("w3", [fail]) == 1
    j = job(storage, job_id)
    assert (j.state, j.finished_at, j.attempts) == (JobState.FAILED, at(60), 3)
    assert (j.error, j.traceback) == ("OSError: three", "tb3")
    assert _history(j.errors) == [
        (1, at(10), "ValueError: one", "w1"),
        (2, at(50), "KeyError: two", "w2"),
        (3, at(60), "OSError: three", "w3"),
    ]


def _history(errors: list[dict[str, Any]]) -> list[tuple[int, datetime, str, str]]:
    """(attempt, at, error, worker_id) of each history entry; `at` is an ISO-8601 instant."""
    parsed = []
    for e in errors:
        when = datetime.fromisoformat(str(e["at"]).replace("Z", "+00:00"))
        parsed.append((e["attempt"], when, e["error"], e["worker_id"]))
    return parsed


@pytest.mark.parametrize(
    ("kind", "state"),
    [(OutcomeKind.FAILED, JobState.FAILED), (OutcomeKind.CANCELLED, JobState.CANCELLED)],
)
def test_failed_and_cancelled(storage: Storage, kind: OutcomeKind, state: JobState) -> None:
    (job_id,) = _running(storage)
    assert storage.at(at(3)).finish_jobs("w1", [Outcome(job_id, kind, error="Stop: here")]) == 1
    j = job(storage, job_id)
    assert (j.state, j.finished_at, j.error) == (state, at(3), "Stop: here")
    assert len(j.errors) == 1
    assert storage.at(at(4)).claim_jobs("w1", "default", 5, 30) == []


def test_a_batch_of_mixed_outcomes(storage: Storage) -> None:
    a, b, c, d, e = _running(storage, 5)
    outcomes = [
        succeed(a),
        succeed(b, {"ok": True}),
        Outcome(c, OutcomeKind.RETRY, error="E: c", retry_in=5),
        Outcome(d, OutcomeKind.FAILED, error="E: d"),
        Outcome(e, OutcomeKind.CANCELLED),
        succeed(999_999),  # unknown ids are ignored
    ]
    assert storage.at(at(1)).finish_jobs("w1", outcomes) == 5
    states = [job(storage, i).state for i in (a, b, c, d, e)]
    assert states == [
        JobState.SUCCEEDED,
        JobState.SUCCEEDED,
        JobState.QUEUED,
        JobState.FAILED,
        JobState.CANCELLED,
    ]
    assert job(storage, b).result == {"ok": True}
    assert job(storage, e).errors == []  # no error given, no history entry
    assert storage.at(at(1)).finish_jobs("w1", []) == 0


def test_only_the_holder_can_finish(storage: Storage) -> None:
    (job_id,) = _running(storage, worker="w1")
    assert storage.at(at(1)).finish_jobs("w2", [succeed(job_id)]) == 0
    failed = Outcome(job_id, OutcomeKind.FAILED, error="E: x")
    assert storage.at(at(1)).finish_jobs("w2", [failed]) == 0
    assert job(storage, job_id).state is JobState.RUNNING


def test_a_rescued_job_cannot_be_finished_by_its_lost_worker(storage: Storage) -> None:
    (job_id,) = _running(storage, worker="w1")  # leased until T0+30
    rescued = storage.at(at(31)).rescue_jobs()
    assert [r.id for r in rescued] == [job_id]
    assert storage.at(at(32)).finish_jobs("w1", [succeed(job_id, "late")]) == 0
    j = job(storage, job_id)
    assert j.state is JobState.QUEUED and j.result is None

    storage.at(at(33)).claim_jobs("w2", "default", 1, 30)
    for outcome in (succeed(job_id), Outcome(job_id, OutcomeKind.RETRY, error="E", retry_in=1)):
        assert storage.at(at(34)).finish_jobs("w1", [outcome]) == 0
    assert job(storage, job_id).worker_id == "w2"
    assert storage.at(at(35)).finish_jobs("w2", [succeed(job_id)]) == 1


def test_release_requeues_without_counting_the_attempt(storage: Storage) -> None:
    a, b, c = _running(storage, 3, max_attempts=1)
    assert storage.at(at(1)).release_jobs("w2", [a]) == 0  # not its job
    assert storage.at(at(1)).release_jobs("w1", [a, b, 424242]) == 2
    for job_id in (a, b):
        j = job(storage, job_id)
        assert (j.state, j.attempts, j.worker_id, j.started_at) == (JobState.QUEUED, 0, None, None)
    assert job(storage, c).state is JobState.RUNNING
    assert storage.at(at(1)).release_jobs("w1", []) == 0
    # max_attempts=1: a released job still gets its one attempt.
    again = storage.at(at(2)).claim_jobs("w3", "default", 5, 30)
    assert sorted(x.id for x in again) == [a, b]
    assert {x.attempt for x in again} == {1}
    assert storage.at(at(3)).release_jobs("w1", [a]) == 0  # w3 holds it now
