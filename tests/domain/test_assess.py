"""The evaluation rules of schedule health, pure: facts built by hand, no database."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from onthedot.domain.assess import assess
from onthedot.domain.expectations import Expectations
from onthedot.domain.expected import Subject
from onthedot.domain.ledger import LedgerRow
from onthedot.domain.specs import parse_spec
from onthedot.domain.watch import HealthState, OpenProblem, ProblemKind, SlotFact, WatchFacts

T0 = datetime(2030, 1, 1, tzinfo=UTC)
S = timedelta(seconds=1)
SUBJECT = Subject(
    "k", parse_spec("every 60s"), ZoneInfo("UTC"), Expectations(grace=timedelta(seconds=10))
)


def facts(
    *slots: SlotFact,
    cursor: datetime,
    watch: datetime = T0,
    open_: tuple[OpenProblem, ...] = (),
    **state: object,
) -> WatchFacts:
    row = LedgerRow("k", "code", "fp", "every 60s", "UTC", cursor, cursor + 60 * S)
    health = HealthState(
        "k", watch_slot=watch, decided_slot=state.pop("decided", watch), fingerprint="fp"
    )
    return WatchFacts(replace(health, **state), row, tuple(slots), open=open_)  # type: ignore[arg-type]


def job(
    slot_s: int, state: str = "queued", started_s: float | None = None, **kw: object
) -> SlotFact:
    started = None if started_s is None else T0 + started_s * S
    return SlotFact(T0 + slot_s * S, "enqueued", T0 + slot_s * S, job_id=slot_s, state=state,
                    name="work", queue="default", started_at=started, **kw)  # type: ignore[arg-type]  # fmt: skip


def test_on_time_runs_settle_and_teach_the_last_success() -> None:
    done = job(60, "succeeded", 61, finished_at=T0 + 64 * S)
    result = assess(facts(done, cursor=T0 + 60 * S), SUBJECT, T0 + 75 * S)
    assert result.opened == () and result.resolved == ()
    state = result.state
    assert (state.watch_slot, state.decided_slot) == (T0 + 60 * S, T0 + 60 * S)
    assert (state.last_success_slot, state.durations) == (T0 + 60 * S, (3.0,))
    assert state.check_at == T0 + 130 * S  # the next slot plus its grace
    assert state.expect == {"grace": "10s"}


def test_a_slot_is_not_judged_before_its_grace_is_over() -> None:
    result = assess(facts(job(60), cursor=T0 + 60 * S), SUBJECT, T0 + 69 * S)
    assert result.opened == () and result.state.check_at == T0 + 70 * S
    assert result.state.watch_slot == T0  # not settled


def test_one_incident_is_never_raised_twice() -> None:
    # Slot 60's job stays queued (a lock, a priority) while slot 120's job started late:
    # the incident at 60 was raised and resolved by that start; nothing new is found in it.
    first = assess(facts(job(60), cursor=T0 + 60 * S), SUBJECT, T0 + 71 * S)
    ((finding),) = first.opened
    assert (finding.kind, finding.entry.slot, finding.resolution) == (
        ProblemKind.LATE,
        T0 + 60 * S,
        None,
    )
    problem = OpenProblem(1, T0 + 60 * S, ProblemKind.LATE, "backlog", T0 + 71 * S)
    later = facts(
        job(60),
        job(120, "running", 140),
        cursor=T0 + 120 * S,
        open_=(problem,),
        decided=first.state.decided_slot,
    )
    second = assess(later, SUBJECT, T0 + 150 * S)
    assert [(p.id, text) for p, text in second.resolved] == [
        (1, "job 120 of slot 2030-01-01T00:02:00Z started at 2030-01-01T00:02:20Z")
    ]
    assert second.opened == ()
    assert second.state.decided_slot == T0 + 120 * S  # judged up to the start that ended it
    third = assess(replace(later, state=second.state, open=()), SUBJECT, T0 + 160 * S)
    assert third.opened == ()  # nothing before the frontier is judged again
    forgetful = replace(later, state=replace(second.state, decided_slot=T0), open=())
    assert [f.entry.slot for f in assess(forgetful, SUBJECT, T0 + 160 * S).opened] == [
        T0 + 60 * S
    ]  # what the frontier prevents: the same incident raised again


def test_slots_coalesced_within_their_grace_are_fine() -> None:
    # A tick 61 s late folded slot 60 into 120, whose job started within 60's grace (90 s).
    subject = replace(SUBJECT, expect=Expectations(grace=timedelta(seconds=90)))
    done = job(120, "succeeded", 122, finished_at=T0 + 123 * S)
    result = assess(facts(done, cursor=T0 + 120 * S), subject, T0 + 200 * S)
    assert result.opened == ()
    assert result.state.decided_slot == T0 + 119 * S  # the gap judged; 120 not before 210
    assert result.state.watch_slot == T0 + 119 * S


def test_a_retry_waiting_for_its_backoff_has_started() -> None:
    retry = job(60, "queued", 61, attempts=1, max_attempts=3, run_at=T0 + 90 * S, error="E")
    result = assess(facts(retry, cursor=T0 + 60 * S), SUBJECT, T0 + 75 * S)
    assert result.opened == ()


def test_a_timing_change_restarts_what_is_watched() -> None:
    old = facts(job(60), cursor=T0 + 500 * S)
    old = replace(old, state=replace(old.state, fingerprint="old"))
    result = assess(old, SUBJECT, T0 + 505 * S)
    assert result.opened == ()  # slot 60 belonged to the old timing
    assert result.state.watch_slot == T0 + 500 * S and result.state.fingerprint == "fp"


def test_a_removed_schedule_is_not_watched_and_its_problems_end() -> None:
    problem = OpenProblem(7, T0 + 60 * S, ProblemKind.LATE, "paused", T0 + 71 * S)
    gone = facts(cursor=T0 + 60 * S, open_=(problem,))
    gone = replace(gone, row=replace(gone.row, removed_at=T0 + 80 * S))
    result = assess(gone, SUBJECT, T0 + 90 * S)
    assert result.unwatched and result.state.check_at is None
    assert result.resolved == ((problem, "the schedule was removed"),)


def test_more_rows_than_a_page_judge_no_tail() -> None:
    rows = [
        job(60 * i, "succeeded", 60 * i + 1, finished_at=T0 + (60 * i + 2) * S)
        for i in range(1, 101)
    ]
    result = assess(facts(*rows, cursor=T0 + 9000 * S), SUBJECT, T0 + 9001 * S)
    assert result.opened == ()  # slot 6060 and later are read once these are settled
    assert result.state.watch_slot == T0 + 6000 * S
