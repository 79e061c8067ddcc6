"""Conformance: the operator's job lists and counts that do not grow with history (issue 29,
item 3): a filtered page merged from one (queue, state) range each gives exactly the jobs the
filter matches, newest first, page after page; `tally_jobs` is exact from the kept counts for
queue, job name and states, capped and estimated for other filters."""

from __future__ import annotations

import itertools
from datetime import timedelta

from onthedot.domain.jobs import JobCount, JobFilter, JobState, Outcome, OutcomeKind
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, new_job

QUEUES = ("a", "b", "c")


def load(storage: Storage) -> list[tuple[int, str, str, str]]:
    """Jobs in every state across three queues and two names; (id, queue, name, state)."""
    s = storage.at(T0)
    for round_ in range(4):
        for q, name in itertools.product(QUEUES, ("x", "y")):
            s.enqueue([new_job(name, queue=q, args=[round_]) for _ in range(3)])
            claimed = s.claim_jobs("w", q, 2, 30)
            kinds = [OutcomeKind.SUCCEEDED, OutcomeKind.FAILED, OutcomeKind.CANCELLED]
            outcomes = [Outcome(c.id, kinds[(c.id + round_) % 3], attempt=1) for c in claimed]
            s.finish_jobs("w", outcomes[: 1 + round_ % 2])  # one claimed job stays running
    jobs = storage.list_jobs(JobFilter(limit=10_000))
    assert {j.state for j in jobs} == set(JobState)
    return [(j.id, j.queue, j.name, str(j.state)) for j in jobs]


def pages(storage: Storage, flt: JobFilter) -> list[int]:
    """Every id of the filter's pages, following before_id."""
    out: list[int] = []
    while True:
        page = storage.list_jobs(
            JobFilter(**{**_fields(flt), "before_id": out[-1] if out else None})
        )
        out += [j.id for j in page]
        if len(page) < flt.limit:
            return out


def _fields(flt: JobFilter) -> dict[str, object]:
    return {k: getattr(flt, k) for k in flt.__dataclass_fields__}


FILTERS = [
    JobFilter(limit=5, queue="a"),
    JobFilter(limit=5, queue="b", state=JobState.FAILED),
    JobFilter(limit=5, state=JobState.RUNNING),
    JobFilter(limit=5, state=JobState.SUCCEEDED),
    JobFilter(limit=5, states=(JobState.FAILED, JobState.CANCELLED)),
    JobFilter(limit=5, queue="c", name="y"),
    JobFilter(limit=5, queue="c", states=(JobState.QUEUED, JobState.RUNNING)),
    JobFilter(limit=5, queue="nowhere"),
    JobFilter(limit=5, name="x", state=JobState.CANCELLED),
]


def matches(flt: JobFilter, queue: str, name: str, state: str) -> bool:
    states = {str(flt.state)} if flt.state else {str(s) for s in flt.states}
    return (
        (not flt.queue or flt.queue == queue)
        and (not flt.name or flt.name == name)
        and (not states or state in states)
    )


def test_filtered_pages_are_exactly_the_matching_jobs_newest_first(storage: Storage) -> None:
    jobs = load(storage)
    for flt in FILTERS:
        expected = sorted((i for i, q, n, s in jobs if matches(flt, q, n, s)), reverse=True)
        assert pages(storage, flt) == expected, flt
        count = storage.tally_jobs(flt)
        assert (count.n, count.exact) == (len(expected), True), flt
        assert storage.count_jobs(flt) == len(expected)


def test_other_filters_are_counted_up_to_the_cap_then_estimated(storage: Storage) -> None:
    jobs = load(storage)
    sched = [storage.at(T0).enqueue([new_job("s", schedule_key="k")]) for _ in range(3)]
    assert storage.tally_jobs(JobFilter(schedule_key="k")) == storage.tally_jobs(
        JobFilter(schedule_key="k"), cap=3
    )
    assert storage.tally_jobs(JobFilter(schedule_key="k")).n == len(sched)
    beyond = storage.tally_jobs(JobFilter(schedule_key="k"), cap=2)
    # Past the cap: counted on SQLite, estimated on PostgreSQL (never below what was counted).
    assert beyond == JobCount(3) or (not beyond.exact and beyond.n >= 3)
    assert storage.tally_jobs(JobFilter(search="[")) == JobCount(len(jobs) + 3)  # a small table
    # A table over 10 x the cap: a text search is estimated on PostgreSQL (it reads every row).
    searched = storage.tally_jobs(JobFilter(search="["), cap=1)
    total = len(jobs) + len(sched)
    if searched.exact:  # SQLite: no planner estimate, so it is counted
        assert searched.n == total
    else:  # PostgreSQL: a text search reads every row: the planner's estimate, said so
        assert searched.n >= 1
        assert str(searched) == f"about {searched.n}"


def test_chart_minutes_are_kept_as_jobs_finish(storage: Storage) -> None:
    """The overview's per-minute counts: on PostgreSQL from minutes kept as jobs finish, the
    same as counting the rows, and unchanged when the jobs are pruned afterwards."""
    for second, kind in ((10, OutcomeKind.SUCCEEDED), (50, OutcomeKind.FAILED), (70, None)):
        s = storage.at(T0 + timedelta(seconds=second))
        s.enqueue([new_job("m")])
        [c] = s.claim_jobs("w", "default", 1, 30)
        outcome = Outcome(c.id, kind or OutcomeKind.SUCCEEDED, attempt=1)
        assert s.finish_jobs("w", [outcome]) == 1
    [queued] = storage.at(T0).enqueue([new_job("m")])
    assert storage.at(T0 + timedelta(seconds=80)).job_action("cancel", queued) is not None
    minute = [
        (T0, "failed", 1),
        (T0, "succeeded", 1),
        (T0 + timedelta(minutes=1), "cancelled", 1),
        (T0 + timedelta(minutes=1), "succeeded", 1),
    ]
    assert sorted(storage.finished_counts(since=T0, bucket_seconds=60)) == minute
    assert sorted(storage.finished_counts(since=T0, bucket_seconds=120)) == [
        (T0, "cancelled", 1),
        (T0, "failed", 1),
        (T0, "succeeded", 2),
    ]
    # PostgreSQL: the minutes that begin at or after `since`; SQLite: the jobs finished since.
    kept = "postgres" in type(storage).__module__
    later = storage.finished_counts(since=T0 + timedelta(seconds=1), bucket_seconds=60)
    assert sorted(later) == ([(t, s, n) for t, s, n in minute if t > T0] if kept else minute)
    # Pruned, the jobs are gone; on PostgreSQL what finished in those minutes is still said
    # (kept minutes); SQLite counts the rows (migration 0006 keeps no minutes there).
    assert storage.prune_jobs(older_than=T0 + timedelta(hours=1), limit=100) == 4
    assert sorted(storage.finished_counts(since=T0, bucket_seconds=60)) == (minute if kept else [])
    # Buckets finer than a minute count the rows (none left).
    assert storage.finished_counts(since=T0, bucket_seconds=30) == []
