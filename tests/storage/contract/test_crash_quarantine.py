"""A worker's shared claim lost with its worker: not charged, then claimed alone and charged
(domain.rescue; issue 12 item 1)."""

from __future__ import annotations

from onthedot import JobState
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, job, new_job


def test_a_shared_claim_lost_is_not_charged_and_runs_alone_after(storage: Storage) -> None:
    a, b = storage.at(T0).enqueue([new_job("q", max_attempts=1), new_job("q", max_attempts=1)])
    assert len(storage.at(T0).claim_jobs("w1", "default", 2, 5, shared=True)) == 2
    rescued = storage.at(at(6)).rescue_jobs()
    assert {(r.id, r.requeued) for r in rescued} == {(a, True), (b, True)}
    assert job(storage, a).state is JobState.QUEUED and "WorkerLost" in (
        job(storage, a).error or ""
    )

    # Solo now: a shared claim leaves them; a claim alone takes one, charged, with the allowance
    # extended by the lost execution.
    assert storage.at(at(7)).claim_jobs("w2", "default", 5, 5, shared=True) == []
    first = storage.at(at(7)).claim_alone("w2", "default", 5)
    assert first is not None and (first.id, first.attempt, first.max_attempts) == (a, 2, 2)
    (lost,) = storage.at(at(20)).rescue_jobs()
    assert (lost.id, lost.attempt, lost.requeued) == (a, 2, False)
    assert job(storage, a).state is JobState.FAILED


def test_claim_alone_finds_nothing_without_solo_jobs(storage: Storage) -> None:
    storage.at(T0).enqueue([new_job("q")])
    assert storage.at(T0).claim_alone("w", "default", 5) is None
    (claimed,) = storage.at(T0).claim_jobs("w", "default", 5, 5, shared=True)
    assert claimed.attempt == 1
