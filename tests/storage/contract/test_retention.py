"""Conformance: the verbs behind retention per state and per job (docs/retention.md):
`finished_groups`, `prune_finished` (one bounded batch of one job name and final state, oldest
first) and `count_finished`, on SQLite, PostgreSQL and PgBouncer."""

from __future__ import annotations

from datetime import timedelta

import pytest

from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.domain.retention import PruneRule
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, new_job

DAY = 86400.0


def finish(storage: Storage, name: str, kind: OutcomeKind, n: int, day: float) -> list[int]:
    """n jobs of `name` finished with `kind` on day `day` after T0, one second apart."""
    ids = []
    for i in range(n):
        then = storage.at(at(day * DAY + i))
        [job_id] = then.enqueue([new_job(name, queue=name)])
        [claimed] = then.claim_jobs("w", name, 1, 30)
        assert then.finish_jobs("w", [Outcome(claimed.id, kind, attempt=1)]) == 1
        ids.append(job_id)
    return ids


def test_groups_count_and_prune_one_name_and_state(storage: Storage) -> None:
    ok = finish(storage, "chatty", OutcomeKind.SUCCEEDED, 5, 0)
    bad = finish(storage, "chatty", OutcomeKind.FAILED, 2, 0)
    other = finish(storage, "report", OutcomeKind.SUCCEEDED, 3, 0)
    young = finish(storage, "chatty", OutcomeKind.SUCCEEDED, 1, 2)
    [queued] = storage.at(T0).enqueue([new_job("chatty", queue="idle")])
    assert storage.finished_groups() == [
        ("chatty", "failed"),
        ("chatty", "succeeded"),
        ("report", "succeeded"),
    ]
    rule = PruneRule("chatty", "succeeded", T0 + timedelta(days=1))
    assert storage.count_finished(rule) == 5
    # One batch: at most `limit`, oldest first.
    assert storage.prune_finished(rule, limit=3) == 3
    assert [storage.get_job(i) is None for i in ok] == [True, True, True, False, False]
    assert storage.count_finished(rule) == 2
    assert storage.prune_finished(rule, limit=3) == 2  # fewer than the limit: none left
    assert storage.prune_finished(rule, limit=3) == 0
    # Nothing of another state, another name, after the cut-off, or unfinished went.
    for kept in [*bad, *other, *young, queued]:
        assert storage.get_job(kept) is not None
    assert storage.finished_groups() == [
        ("chatty", "failed"),
        ("chatty", "succeeded"),
        ("report", "succeeded"),
    ]
    assert storage.prune_finished(PruneRule("chatty", "failed", at(3 * DAY)), limit=10) == 2
    assert ("chatty", "failed") not in storage.finished_groups()


def test_the_cut_off_is_strict(storage: Storage) -> None:
    [first, second] = finish(storage, "j", OutcomeKind.CANCELLED, 2, 0)
    job = storage.get_job(second)
    assert job is not None and job.finished_at is not None
    rule = PruneRule("j", "cancelled", job.finished_at)
    assert storage.count_finished(rule) == 1
    assert storage.prune_finished(rule, limit=10) == 1
    assert storage.get_job(first) is None and storage.get_job(second) is not None


def test_a_rule_for_a_state_that_is_not_final_deletes_nothing(storage: Storage) -> None:
    [queued] = storage.at(T0).enqueue([new_job("j")])
    rule = PruneRule("j", "queued", at(DAY))
    assert storage.count_finished(rule) == 0
    assert storage.prune_finished(rule, limit=10) == 0
    assert storage.get_job(queued) is not None


@pytest.mark.parametrize("limit", [0, -1, True, 2.5])
def test_a_bad_limit_is_refused(storage: Storage, limit: object) -> None:
    with pytest.raises(ValueError, match="limit must be a positive int"):
        storage.prune_finished(PruneRule("j", "failed", T0), limit=limit)  # type: ignore[arg-type]
