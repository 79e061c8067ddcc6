"""Schedule health's verbs, called directly (on SQLite, PostgreSQL and through PgBouncer):
health rows made with their ledger rows, the evaluation transaction, problems raised once,
alerts claimed by one caller, pruning."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from onthedot.domain.jobs import JobFilter
from onthedot.domain.ledger import PlannedSlot, SyncReport, TickPlan
from onthedot.domain.watch import (
    Cause,
    Explanation,
    NewProblem,
    ProblemKind,
    Resolution,
    WatchDecision,
)
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, new_job, run_threads
from tests.storage.contract.test_ledger import code_row, dynamic_row, sync

LATE = Explanation(Cause.NO_LIVE_WORKER, "no live worker runs the scheduler", {"workers": 0})


def late(slot_at: float) -> NewProblem:
    return NewProblem(at(slot_at), ProblemKind.LATE, LATE)


def test_a_ledger_row_gets_a_health_row_checked_at_its_first_slot(storage: Storage) -> None:
    s = storage.at(T0)
    assert storage.health_states() == []
    sync(s, 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    s.upsert_dynamic(dynamic_row("dyn", T0, at(60)))
    states = storage.health_states()
    assert [(h.key, h.check_at) for h in states] == [("a", at(10)), ("dyn", at(60))]
    assert states[0].durations == () and states[0].overrides is None
    assert [h.key for h in storage.health_states(["dyn", "missing"])] == ["dyn"]
    # An update of the runtime schedule keeps its health row (and what it learned).
    storage.at(at(1)).upsert_dynamic(dynamic_row("dyn", at(1), at(61)))
    assert [h.key for h in storage.health_states()] == ["a", "dyn"]
    storage.delete_schedule("dyn", cancel_queued=True)
    assert [h.key for h in storage.health_states()] == ["a"]


def test_idle_tick_reports_the_earliest_health_check(storage: Storage) -> None:
    s = storage.at(T0)
    sync(s, 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    s.upsert_dynamic(dynamic_row("dyn", T0, at(5)))
    with s.tick(generation=1, fence_ttl=30, limit=10) as tick:
        assert tick.done is not None and tick.done.idle and tick.done.watch_at == at(5)


def test_operator_overrides_and_recheck(storage: Storage) -> None:
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("a", T0, at(100)),)), ["a"])
    s = storage.at(at(2))
    assert s.set_expectations("a", {"grace": "5m", "deadline": None}, actor="ops", note="why")
    (h,) = storage.health_states(["a"])
    assert h.overrides == {"grace": "5m", "deadline": None}
    assert (h.overrides_by, h.overrides_note, h.overrides_at) == ("ops", "why", at(2))
    assert h.check_at == at(2)  # checked now, with the new expectations
    assert not s.set_expectations("missing", {"grace": "1m"}, actor="ops")
    assert storage.at(at(3)).set_expectations("a", None, actor="ops")
    (h,) = storage.health_states(["a"])
    assert h.overrides is None and h.overrides_by == "ops"
    # recheck moves a later check to now, never a due one later.
    with storage.at(at(3)).watch(limit=10) as tx:
        (facts,) = tx.facts
        tx.apply([WatchDecision("a", replace(facts.state, check_at=at(500)))], alerts=False)
    assert storage.at(at(4)).recheck_health(["a", "missing"]) == 1
    assert storage.health_states(["a"])[0].check_at == at(4)
    assert storage.at(at(9)).recheck_health(["a"]) == 0


def test_watch_reads_due_rows_with_their_unsettled_slots(storage: Storage) -> None:
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("b", T0, at(900)),)), ["b"])
    with storage.at(at(10)).tick(generation=1, fence_ttl=30, limit=10) as tick:
        slot = PlannedSlot(at(10), "enqueued", new_job("work", schedule_key="a", slot=at(10)))
        tick.apply([TickPlan("a", T0, at(10), at(20), slots=(slot,))])
    (job_id,) = [j.id for j in storage.list_jobs(JobFilter())]
    storage.at(at(11)).claim_jobs("w1", "default", 1, 30)
    with storage.at(at(12)).watch(limit=10) as tx:
        assert tx.now == at(12)
        (facts,) = tx.facts  # "b" is not due
        assert facts.state.key == "a" and facts.row.cursor == at(10)
        (fact,) = facts.slots
        assert (fact.slot, fact.outcome, fact.job_id, fact.state) == (
            at(10),
            "enqueued",
            job_id,
            "running",
        )
        assert fact.started_at == at(11) and fact.attempts == 1 and fact.queue == "default"
        assert facts.newest is not None and facts.newest.state == "running"
        assert facts.open == ()
    # A settled slot (watch_slot at or after it) is not read again.
    with storage.at(at(12)).watch(limit=10) as tx:
        (facts,) = tx.facts
        tx.apply(
            [WatchDecision("a", replace(facts.state, watch_slot=at(10), check_at=at(30)))],
            alerts=False,
        )
    assert [f.slots for f in storage.health_facts(["a"])] == [()]
    assert [f.state.key for f in storage.health_facts()] == ["a", "b"]


def test_a_problem_is_raised_once_and_resolved_once(storage: Storage) -> None:
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    s = storage.at(at(20))
    with s.watch(limit=10) as tx:
        (facts,) = tx.facts
        state = replace(facts.state, check_at=at(30))
        done = tx.apply([WatchDecision("a", state, opened=(late(10),))], alerts=True)
    ((problem),) = done
    assert (problem.key, problem.slot, problem.kind, problem.cause) == (
        "a",
        at(10),
        ProblemKind.LATE,
        "no_live_worker",
    )
    assert problem.open and problem.opened_at == at(20) and problem.facts == {"workers": 0}
    # The same (schedule, slot, kind) again: nothing new.
    with storage.at(at(30)).watch(limit=10) as tx:
        (facts,) = tx.facts
        (open_,) = facts.open
        assert (open_.id, open_.kind) == (problem.id, ProblemKind.LATE)
        again = WatchDecision("a", facts.state, opened=(late(10),))
        assert tx.apply([again], alerts=True) == []
    # Refreshed, then resolved once.
    why = Explanation(Cause.BACKLOG, "waiting behind 3 ready jobs", {"ready": 3})
    with storage.at(at(31)).watch(limit=10) as tx:
        (facts,) = tx.facts
        tx.apply([WatchDecision("a", facts.state, refreshed=((open_, why),))], alerts=False)
    (listed,) = storage.list_problems(key="a")
    assert (listed.cause, listed.detail, listed.facts) == ("backlog", why.detail, {"ready": 3})
    with storage.at(at(40)).watch(limit=10) as tx:
        (facts,) = tx.facts
        resolve = (Resolution(open_, "job 1 started"),)
        (resolved,) = tx.apply([WatchDecision("a", facts.state, resolved=resolve)], alerts=True)
        assert tx.apply([WatchDecision("a", facts.state, resolved=resolve)], alerts=True) == []
    assert (resolved.resolved_at, resolved.resolution) == (at(40), "job 1 started")
    assert storage.list_problems() == []
    assert [p.id for p in storage.list_problems(open_only=False)] == [problem.id]
    assert storage.list_problems(key="b", open_only=False) == []
    # Two alerts to deliver: the problem, and its recovery.
    alerts = storage.at(at(41)).claim_alerts("w1", limit=10, hold=60)
    assert [(a.event, a.problem.id) for a in alerts] == [
        ("problem", problem.id),
        ("recovered", problem.id),
    ]


def test_schedulers_evaluating_at_once_never_share_a_row(
    storage: Storage, other_storages: Callable[[int], Sequence[Storage]]
) -> None:
    rows = tuple(code_row(f"k{i}", T0, at(10)) for i in range(20))
    sync(storage.at(T0), 1, SyncReport(inserts=rows), [r.key for r in rows])
    storages = other_storages(4)

    def evaluate(i: int) -> list[str]:
        seen: list[str] = []
        with storages[i].at(at(20)).watch(limit=5) as tx:
            for f in tx.facts:
                seen.append(f.state.key)
            decisions = [
                WatchDecision(f.state.key, replace(f.state, check_at=at(99)), opened=(late(10),))
                for f in tx.facts
            ]
            tx.apply(decisions, alerts=False)
        return seen

    seen = [k for keys in run_threads(4, evaluate) for k in keys]
    assert len(seen) == len(set(seen)) == 20
    assert len(storage.list_problems()) == 20


def test_alerts_are_claimed_by_one_caller_and_retried(storage: Storage) -> None:
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    with storage.at(at(20)).watch(limit=10) as tx:
        (facts,) = tx.facts
        (problem,) = tx.apply([WatchDecision("a", facts.state, opened=(late(10),))], alerts=True)
    s = storage.at(at(21))
    (alert,) = s.claim_alerts("w1", limit=10, hold=60)
    assert (alert.event, alert.attempts, alert.problem.id) == ("problem", 0, problem.id)
    assert s.claim_alerts("w2", limit=10, hold=60) == []  # held by w1
    assert not s.finish_alert(alert.id, "w2", error=None, retry_at=None)  # not w2's
    assert s.finish_alert(alert.id, "w1", error="HTTP 500", retry_at=at(50))
    assert storage.at(at(49)).claim_alerts("w2", limit=10, hold=60) == []  # not due yet
    (again,) = storage.at(at(50)).claim_alerts("w2", limit=10, hold=60)
    assert again.attempts == 1
    # w2 dies holding it: the claim expires and w3 gets it; w2's late answer is refused.
    (third,) = storage.at(at(111)).claim_alerts("w3", limit=10, hold=60)
    assert third.id == alert.id
    assert not storage.at(at(112)).finish_alert(alert.id, "w2", error=None, retry_at=None)
    assert storage.at(at(112)).finish_alert(alert.id, "w3", error=None, retry_at=None)
    assert storage.at(at(999)).claim_alerts("w4", limit=10, hold=60) == []  # sent: done
    # Given up (an error, no retry): never claimed again either.
    with storage.at(at(200)).watch(limit=10) as tx:
        (facts,) = tx.facts
        (open_,) = facts.open
        tx.apply([WatchDecision("a", facts.state, resolved=(Resolution(open_, "x"),))], alerts=True)
    (recovered,) = storage.at(at(201)).claim_alerts("w1", limit=10, hold=60)
    assert recovered.event == "recovered" and not recovered.problem.open
    assert storage.at(at(202)).finish_alert(recovered.id, "w1", error="refused", retry_at=None)
    assert storage.at(at(999)).claim_alerts("w1", limit=10, hold=60) == []


def test_prune_health_deletes_resolved_problems_and_finished_alerts(storage: Storage) -> None:
    keys = ["a", "b"]
    rows = tuple(code_row(k, T0, at(10)) for k in keys)
    sync(storage.at(T0), 1, SyncReport(inserts=rows), keys)
    with storage.at(at(20)).watch(limit=10) as tx:
        decisions = [WatchDecision(f.state.key, f.state, opened=(late(10),)) for f in tx.facts]
        tx.apply(decisions, alerts=True)
    with storage.at(at(30)).watch(limit=10) as tx:
        (a,) = [f for f in tx.facts if f.state.key == "a"]
        tx.apply(
            [WatchDecision("a", a.state, resolved=(Resolution(a.open[0], "ok"),))], alerts=True
        )
    for alert in storage.at(at(31)).claim_alerts("w", limit=10, hold=60):
        storage.at(at(31)).finish_alert(alert.id, "w", error=None, retry_at=None)
    # Alerts by their creation (20: the two problems, 30: a's recovery), problems by their end.
    assert storage.prune_health(older_than=at(30)) == {"problems": 0, "alerts": 2}
    assert storage.prune_health(older_than=at(40)) == {"problems": 1, "alerts": 1}
    assert [p.key for p in storage.list_problems(open_only=False)] == ["b"]


def test_ping_targets_are_the_pings_last_applied(storage: Storage) -> None:
    keys = ["a", "b"]
    sync(storage.at(T0), 1, SyncReport(inserts=tuple(code_row(k, T0, at(10)) for k in keys)), keys)
    assert storage.ping_targets() == {}
    with storage.at(at(10)).watch(limit=10) as tx:
        decisions = [
            WatchDecision(f.state.key, replace(f.state, ping="https://hc.example/a"))
            for f in tx.facts
            if f.state.key == "a"
        ]
        tx.apply(decisions, alerts=False)
    assert storage.ping_targets() == {"a": "https://hc.example/a"}


def test_a_problem_found_after_the_fact_is_opened_resolved(storage: Storage) -> None:
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    over = NewProblem(at(10), ProblemKind.LATE, LATE, resolution="job 3 started at 90")
    with storage.at(at(95)).watch(limit=10) as tx:
        (facts,) = tx.facts
        (problem,) = tx.apply([WatchDecision("a", facts.state, opened=(over,))], alerts=True)
    assert (problem.opened_at, problem.resolved_at) == (at(95), at(95))
    assert problem.resolution == "job 3 started at 90" and not problem.open
    assert storage.list_problems() == []
    alerts = storage.at(at(96)).claim_alerts("w", limit=10, hold=60)
    assert [a.event for a in alerts] == ["problem", "recovered"]  # both told, in that order
    (state,) = storage.health_states(["a"])
    assert (state.watch_slot, state.decided_slot, state.fingerprint) == (T0, T0, "fp1")
