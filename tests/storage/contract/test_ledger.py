"""The ledger verbs, called directly: generations, the sync and tick transactions, ledger rows,
runtime schedules and operator state (on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import datetime

from onthedot.domain.jobs import JobFilter, JobState
from onthedot.domain.ledger import LedgerRow, PlannedSlot, SyncReport, TickPlan
from onthedot.storage.interface import OperatorPatch, Storage, WorkerInfo
from tests.storage.contract.conftest import T0, at, job, new_job

ACTIVE = (JobState.QUEUED, JobState.RUNNING)


def slots(storage: Storage, key: str, start: datetime, end: datetime) -> set[datetime]:
    """The slot instants of `key`'s history in [start, end]."""
    return {h.slot for h in storage.slot_history(key, start=start, end=end, limit=None)}


def oldest(storage: Storage, key: str) -> datetime | None:
    """The oldest slot still in `key`'s history."""
    history = storage.slot_history(key, limit=None)
    return history[-1].slot if history else None


def code_row(key: str, cursor: datetime, next_due: datetime | None) -> LedgerRow:
    return LedgerRow(key, "code", "fp1", "every 10s", "UTC", cursor, next_due)


def dynamic_row(key: str, cursor: datetime, next_due: datetime | None, **kw: object) -> LedgerRow:
    definition = {"job": "work", "overlap": "allow", **kw}
    return LedgerRow(
        key, "dynamic", "fpd", "every 60s", "UTC", cursor, next_due, definition=definition
    )


def sync(storage: Storage, generation: int, report: SyncReport, keys: list[str]) -> bool:
    """Run one sync transaction applying `report`; True unless fenced."""
    with storage.sync_declared(generation=generation, fence_ttl=30, keys=keys) as tx:
        if tx.fenced:
            return False
        tx.apply(report)
        return True


def test_code_generation_is_stable_per_hash_and_grows(storage: Storage) -> None:
    first = storage.code_generation("hash-a")
    assert storage.code_generation("hash-a") == first
    second = storage.code_generation("hash-b")
    assert second > first
    assert storage.code_generation("hash-a") == first


def test_sync_inserts_restarts_and_removes_code_rows(storage: Storage) -> None:
    s = storage.at(T0)
    with s.sync_declared(generation=1, fence_ttl=30, keys=["a"]) as tx:
        assert not tx.fenced and tx.rows == [] and tx.now == T0
        tx.apply(SyncReport(inserts=(code_row("a", T0, at(10)), code_row("b", T0, at(10)))))
    row = next(iter(storage.list_schedule_rows(["a"])), None)
    assert row is not None and row.source == "code" and row.generation == 1
    assert (row.cursor, row.next_due_at, row.created_at) == (T0, at(10), T0)
    assert storage.count_live_code_rows(["a", "b", "c"]) == 2
    with storage.at(at(5)).sync_declared(generation=2, fence_ttl=30, keys=["a"]) as tx:
        assert [r.key for r in tx.rows] == ["a", "b"]
        restarted = LedgerRow(
            "a", "code", "fp2", "every 20s", "UTC", at(5), at(20), repaired_reason="timing changed"
        )
        tx.apply(SyncReport(restarts=(restarted,), removals=("b",)))
    a = next(iter(storage.list_schedule_rows(["a"])), None)
    assert a is not None and (a.fingerprint, a.spec, a.next_due_at) == ("fp2", "every 20s", at(20))
    assert a.repaired_reason == "timing changed" and a.generation == 2
    b = next(iter(storage.list_schedule_rows(["b"])), None)
    assert b is not None and b.removed_at == at(5) and b.next_due_at is None
    assert storage.count_live_code_rows(["a", "b"]) == 1
    assert [r.key for r in storage.list_schedule_rows()] == ["a", "b"]
    assert [r.key for r in storage.list_schedule_rows(["b", "a", "missing"])] == ["a", "b"]
    assert storage.list_schedule_rows(["missing"]) == []
    assert storage.list_schedule_rows([]) == []


def test_sync_and_tick_are_fenced_by_a_newer_live_scheduler(storage: Storage) -> None:
    s = storage.at(T0)
    assert sync(s, 1, SyncReport(inserts=(code_row("a", at(-20), at(-10)),)), ["a"])
    s.register_worker(WorkerInfo("new", "h", 1, ("default",), 1, scheduler=True, generation=2))
    assert not sync(s, 1, SyncReport(removals=("a",)), ["a"])
    with s.tick(generation=1, fence_ttl=30, limit=10) as tick:
        assert tick.done is not None and tick.done.fenced
    with s.tick(generation=1, fence_ttl=30, limit=10, expect_due=True) as tick:
        assert tick.done is not None and tick.done.fenced and tick.done.rows == 0
    row = next(iter(storage.list_schedule_rows(["a"])), None)
    assert row is not None and row.removed_at is None  # nothing written while fenced


def test_idle_tick_reports_the_next_due_instant(storage: Storage) -> None:
    s = storage.at(T0)
    with s.tick(generation=1, fence_ttl=30, limit=10) as tick:
        assert tick.done is not None and tick.done.idle and tick.done.next_due_at is None
    sync(s, 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    with s.tick(generation=1, fence_ttl=30, limit=10) as tick:
        assert tick.done is not None and tick.done.idle
        assert (tick.done.now, tick.done.next_due_at) == (T0, at(10))


def test_tick_writes_slots_jobs_and_the_ledger_row_once(storage: Storage) -> None:
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    s = storage.at(at(12))
    with s.tick(generation=1, fence_ttl=30, limit=10) as tick:
        assert tick.done is None and tick.now == at(12)
        (due,) = list(tick.due_rows())
        assert (due.key, due.cursor, due.next_due_at) == ("a", T0, at(10))
        slot = PlannedSlot(at(10), "enqueued", new_job("work", schedule_key="a", slot=at(10)))
        result = tick.apply([TickPlan("a", T0, at(10), at(20), slots=(slot,), missed=0)])
    assert result.rows == 1 and result.conflicts == []
    ((key, slot_at, outcome, job_id),) = result.recorded
    assert (key, slot_at, outcome) == ("a", at(10), "enqueued") and job_id is not None
    assert job(storage, job_id).schedule_key == "a"
    row = next(iter(storage.list_schedule_rows(["a"])), None)
    assert row is not None and (row.cursor, row.next_due_at) == (at(10), at(20))
    assert (row.last_slot, row.last_outcome, row.last_job_id) == (at(10), "enqueued", job_id)
    assert storage.count_jobs(JobFilter(schedule_key="a", states=ACTIVE)) == 1
    # The same slot again (another scheduler's stale plan): a conflict, no second job.
    storage.at(T0).update_operator_state("a", OperatorPatch(next_due_at=at(10)))
    with s.tick(generation=1, fence_ttl=30, limit=10) as tick:
        again = PlannedSlot(at(10), "enqueued", new_job("work", schedule_key="a", slot=at(10)))
        result = tick.apply([TickPlan("a", at(10), at(10), at(20), slots=(again,))])
    assert result.recorded == [] and result.conflicts == [("a", at(10))]
    assert storage.count_jobs(JobFilter(schedule_key="a", states=ACTIVE)) == 1


def test_runtime_schedules_upsert_and_delete(storage: Storage) -> None:
    s = storage.at(T0)
    s.upsert_dynamic(dynamic_row("dyn", T0, at(60)))
    row = next(iter(storage.list_schedule_rows(["dyn"])), None)
    assert row is not None and row.source == "dynamic" and row.definition is not None
    assert row.definition["job"] == "work" and row.next_due_at == at(60)
    storage.at(at(5)).upsert_dynamic(dynamic_row("dyn", at(5), at(65), note="changed"))
    row = next(iter(storage.list_schedule_rows(["dyn"])), None)
    assert row is not None and row.next_due_at == at(65) and row.updated_at == at(5)
    assert row.definition is not None and row.definition["note"] == "changed"
    # A code row of the same key is never replaced by a runtime definition.
    sync(s, 1, SyncReport(inserts=(code_row("code", T0, at(10)),)), ["code"])
    s.upsert_dynamic(dynamic_row("code", T0, at(99)))
    code = next(iter(storage.list_schedule_rows(["code"])), None)
    assert code is not None and code.source == "code" and code.next_due_at == at(10)
    queued, running = s.enqueue([new_job("work", schedule_key="dyn") for _ in range(2)])
    s.claim_jobs("w1", "default", 1, 30)
    assert storage.count_jobs(JobFilter(schedule_key="dyn", states=ACTIVE)) == 2
    assert storage.delete_schedule("dyn", cancel_queued=True) == 1
    assert next(iter(storage.list_schedule_rows(["dyn"])), None) is None
    states = {job(storage, queued).state, job(storage, running).state}
    assert states == {JobState.CANCELLED, JobState.RUNNING}


def test_operator_patch_changes_only_its_fields(storage: Storage) -> None:
    sync(storage.at(T0), 1, SyncReport(inserts=(code_row("a", T0, at(10)),)), ["a"])
    s = storage.at(at(3))
    patch = OperatorPatch(
        paused=True,
        paused_until=at(100),
        paused_by="ops",
        pause_note="n",
        paused_at=at(3),
        next_due_at=at(100),
    )
    row = s.update_operator_state("a", patch)
    assert row is not None and row.paused and row.paused_until == at(100)
    assert (row.paused_by, row.pause_note, row.paused_at) == ("ops", "n", at(3))
    assert row.cursor == T0 and row.updated_at == at(3)
    row = s.update_operator_state(
        "a",
        OperatorPatch(
            paused=False,
            paused_until=None,
            missed_total=4,
            cursor=at(50),
            last_missed_from=at(10),
            last_missed_to=at(40),
        ),
    )
    assert row is not None and not row.paused and row.paused_until is None
    assert row.paused_by == "ops" and row.next_due_at == at(100)  # kept
    assert (row.missed_total, row.cursor) == (4, at(50))
    assert (row.last_missed_from, row.last_missed_to) == (at(10), at(40))
    assert next(iter(storage.list_schedule_rows(["a"])), None) == row
    assert s.update_operator_state("nope", OperatorPatch(paused=True)) is None


def test_slot_history_verbs(storage: Storage) -> None:
    from onthedot.domain.ledger import SlotRecord

    records = [
        SlotRecord("k", at(10), "skipped_operator", recorded_at=at(1), actor="ops", note="x"),
        SlotRecord("k", at(20), "manual", recorded_at=at(2), actor="ops"),
    ]
    inserted = storage.record_slots(records, [None, new_job("work", schedule_key="k", slot=at(20))])
    assert [(r.slot, r.outcome, r.recorded_at) for r in inserted] == [
        (at(10), "skipped_operator", at(1)),
        (at(20), "manual", at(2)),
    ]
    assert inserted[0].job_id is None and inserted[1].job_id is not None
    # Already in the history: not recorded (nor enqueued) twice.
    assert storage.record_slots(records[1:], [new_job("work", schedule_key="k")]) == []
    assert storage.count_jobs(JobFilter(schedule_key="k", states=ACTIVE)) == 1
    history = storage.slot_history("k")
    assert [(h.slot, h.outcome, h.job_state) for h in history] == [
        (at(20), "manual", "queued"),
        (at(10), "skipped_operator", None),
    ]
    assert history[1].actor == "ops" and history[1].note == "x"
    assert storage.slot_history("k", limit=1)[0].slot == at(20)
    assert slots(storage, "k", at(0), at(15)) == {at(10)}
    assert slots(storage, "k", at(10), at(20)) == {at(10), at(20)}
    assert slots(storage, "k", at(11), at(19)) == set()
    assert [h.slot for h in storage.slot_history("k", start=at(15))] == [at(20)]
    assert [h.slot for h in storage.slot_history("k", end=at(15), limit=None)] == [at(10)]
    assert oldest(storage, "k") == at(10)
    assert not storage.delete_slot("k", at(10), "manual")  # another outcome: kept
    assert storage.delete_slot("k", at(10), "skipped_operator")
    assert oldest(storage, "k") == at(20)
    assert oldest(storage, "none") is None


def test_audit_log(storage: Storage) -> None:
    from onthedot.domain.ledger import AuditEntry

    storage.add_audit(
        AuditEntry("ops", "paused", key="a", note="n", details={"until": None}, at=at(1))
    )
    storage.add_audit(AuditEntry("ops", "resumed", key="a", at=at(2)))
    storage.add_audit(AuditEntry("cli", "created", key="b", at=at(3)))
    entries = storage.list_audit()
    assert [(e.action, e.key, e.at) for e in entries] == [
        ("created", "b", at(3)),
        ("resumed", "a", at(2)),
        ("paused", "a", at(1)),
    ]
    assert entries[2].details == {"until": None} and entries[2].note == "n"
    assert entries[1].details is None
    assert [e.action for e in storage.list_audit("a")] == ["resumed", "paused"]
    assert [e.action for e in storage.list_audit(limit=1)] == ["created"]
