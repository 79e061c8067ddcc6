"""Schedule health as the CLI, the web admin and the metrics read it (docs/health.md): every
schedule's last success, lateness, next slot, run times and problems, from the database only.

The problems are those recorded by the schedulers and, evaluated here at read time with the
same rules, those nobody could record: when every worker is down nothing raises a problem, so
`onthedot schedules health` still sees the late schedules (and says "no live worker")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from onthedot.domain.assess import assess
from onthedot.domain.causes import Fleet, explain
from onthedot.domain.durations import format_duration
from onthedot.domain.expectations import Expectations, percentile
from onthedot.domain.jobs import iso
from onthedot.domain.payload import JsonObject
from onthedot.domain.specs.dst import dst_note
from onthedot.domain.watch import ProblemKind, ProblemRecord, WatchFacts
from onthedot.schedules.watcher import read_fleet, subject_for

if TYPE_CHECKING:
    from onthedot.schedules.registry import ScheduleRegistry
    from onthedot.storage.interface import Storage


@dataclass(frozen=True, slots=True)
class Problem:
    """An open problem as shown: recorded by a scheduler (`id` > 0), or found at read time
    (`id` 0: nobody recorded it, as when every worker is down)."""

    key: str
    slot: datetime
    kind: ProblemKind
    cause: str
    detail: str
    opened_at: datetime | None = None
    id: int = 0

    @property
    def recorded(self) -> bool:
        return self.id > 0

    def line(self) -> str:
        """`nightly-report  2024-03-11T01:00:00Z  late  no_live_worker: no live worker ...`"""
        return f"{self.key}  {iso(self.slot)}  {self.kind}  {self.cause}: {self.detail}"

    def to_json(self) -> JsonObject:
        return {
            "schedule": self.key,
            "slot": iso(self.slot),
            "kind": str(self.kind),
            "cause": self.cause,
            "detail": self.detail,
            "opened_at": iso(self.opened_at),
            "id": self.id or None,
            "recorded": self.recorded,
        }


@dataclass(frozen=True, slots=True)
class ScheduleHealth:
    key: str
    status: str  # ok, problem, paused, unwatched
    expect: Expectations
    grace: timedelta | None
    last_success_slot: datetime | None
    last_success_at: datetime | None
    lateness: float  # seconds the oldest unstarted due slot is past its slot (0: on time)
    next_slot: datetime | None
    durations: tuple[float, ...]
    problems: tuple[Problem, ...] = ()
    notes: tuple[str, ...] = ()  # not problems, but shown (a DST gap: no slot)
    period: timedelta | None = None

    @property
    def p50(self) -> float | None:
        return percentile(self.durations, 50) if self.durations else None

    @property
    def p95(self) -> float | None:
        return percentile(self.durations, 95) if self.durations else None

    @property
    def last(self) -> float | None:
        return self.durations[-1] if self.durations else None

    def to_json(self) -> JsonObject:
        return {
            "key": self.key,
            "status": self.status,
            "expectations": {**self.expect.to_json(), "grace": _seconds_text(self.grace)},
            "last_success_slot": iso(self.last_success_slot),
            "last_success_at": iso(self.last_success_at),
            "lateness": round(self.lateness, 3),
            "next_slot": iso(self.next_slot),
            "durations": {"p50": self.p50, "p95": self.p95, "last": self.last},
            "problems": [p.to_json() for p in self.problems],
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class HealthReport:
    now: datetime
    schedules: tuple[ScheduleHealth, ...]
    fleet: str | None = None  # "no live worker: ..." when none is alive
    workers_alive: int = 0
    problems: tuple[Problem, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> JsonObject:
        return {
            "ok": self.ok,
            "now": iso(self.now),
            "no_live_worker": self.fleet,
            "workers_alive": self.workers_alive,
            "problems": [p.to_json() for p in self.problems],
            "schedules": [s.to_json() for s in self.schedules],
        }


@dataclass(frozen=True, slots=True)
class HealthSummary:
    problems: tuple[Problem, ...]
    counts: dict[str, int]  # open problems by kind
    fleet: str | None  # "no live worker: ..." when none is alive


class HealthReader:
    """Reads the health of every schedule (`report`), through the storage's read verbs.
    `code_known`: whether the app holds the schedules' code (else the expectations the
    schedulers last applied are used, as `onthedot schedules health` without --app does)."""

    def __init__(
        self,
        storage: Callable[[], Storage],
        registry: ScheduleRegistry,
        lease: float,
        now: Callable[[Storage], datetime],
        code_known: Callable[[], bool],
    ) -> None:
        self._storage = storage
        self._registry = registry
        self._lease = lease
        self._now = now
        self._code_known = code_known

    @property
    def _code(self) -> ScheduleRegistry | None:
        return self._registry if self._code_known() else None

    def report(self, keys: list[str] | None = None) -> HealthReport:
        """Every watched schedule (or those of `keys`) and every open problem."""
        storage = self._storage()
        facts = storage.health_facts(keys)
        now = self._now(storage)
        recorded: dict[str, list[ProblemRecord]] = {}
        for p in storage.list_problems(limit=100_000):
            recorded.setdefault(p.key, []).append(p)
        fleet = read_fleet(storage, self._lease)
        schedules = tuple(self._one(f, recorded.get(f.state.key, []), fleet, now) for f in facts)
        problems = tuple(p for s in schedules for p in s.problems)
        return HealthReport(
            now=now,
            schedules=schedules,
            fleet=fleet.no_live_worker(),
            workers_alive=len(fleet.alive),
            problems=problems,
        )

    def _one(
        self, facts: WatchFacts, recorded: list[ProblemRecord], fleet: Fleet, now: datetime
    ) -> ScheduleHealth:
        row, state = facts.row, facts.state
        subject = subject_for(row, state, self._code)
        shown = {(p.slot, p.kind): _shown(p) for p in recorded}
        if subject is None:
            return ScheduleHealth(
                key=state.key,
                status="unwatched",
                expect=Expectations(),
                grace=None,
                last_success_slot=state.last_success_slot,
                last_success_at=state.last_success_at,
                lateness=0.0,
                next_slot=None,
                durations=state.durations,
                problems=tuple(shown.values()),
            )
        result = assess(facts, subject, now)
        for problem, finding in result.ongoing:  # the cause as things stand now
            why = explain(finding, subject, row, fleet, now)
            shown[(problem.slot, problem.kind)] = Problem(
                row.key, problem.slot, problem.kind, str(why.cause), why.detail,
                problem.opened_at, problem.id,
            )  # fmt: skip
        kinds = {k for _, k in shown}
        for finding in result.opened:
            if finding.resolution is None and finding.kind not in kinds:
                why = explain(finding, subject, row, fleet, now)
                slot = finding.entry.slot
                shown[(slot, finding.kind)] = Problem(
                    row.key, slot, finding.kind, str(why.cause), why.detail
                )
        problems = tuple(sorted(shown.values(), key=lambda p: (p.slot, str(p.kind))))
        late = [p.slot for p in problems if p.kind == ProblemKind.LATE]
        nxt = subject.spec.next_after(max(now, row.cursor), subject.tz)
        status = "problem" if problems else "paused" if row.paused else "ok"
        note = dst_note(subject.spec, subject.tz, row.last_slot or row.cursor, nxt)
        return ScheduleHealth(
            key=state.key,
            status=status,
            expect=subject.expect,
            grace=subject.grace,
            last_success_slot=result.state.last_success_slot,
            last_success_at=result.state.last_success_at,
            lateness=(now - min(late)).total_seconds() if late else 0.0,
            next_slot=None if row.paused and not row.paused_until else nxt,
            durations=result.state.durations,
            problems=problems,
            notes=(note,) if note else (),
            period=subject.spec.min_period(),
        )

    def summary(self) -> HealthSummary:
        """The open problems the schedulers recorded and whether any worker is alive: cheap
        (no evaluation), for the overview. The report finds the unrecorded ones too."""
        storage = self._storage()
        recorded = tuple(_shown(p) for p in storage.list_problems(limit=1000))
        counts = dict.fromkeys((str(k) for k in ProblemKind), 0)
        for p in recorded:
            counts[str(p.kind)] += 1
        fleet = read_fleet(storage, self._lease)
        return HealthSummary(recorded, counts, fleet.no_live_worker())

    def explain_lines(self, key: str) -> list[str]:
        """The health section of `schedules explain KEY`: expectations, run times, last
        success and open problems (with the cause as things stand now)."""
        report = self.report([key])
        if not report.schedules:
            return []
        s = report.schedules[0]
        lines = ["health:", f"  expectations: {s.expect.describe()}"]
        if s.last_success_slot is not None:
            lines.append(
                f"  last success: slot {iso(s.last_success_slot)}, "
                f"finished {iso(s.last_success_at)}"
            )
        if s.durations:
            lines.append(
                f"  run times:    p50 {s.p50:g}s, p95 {s.p95:g}s, last {s.last:g}s "
                f"({len(s.durations)} recent runs)"
            )
        for note in s.notes:
            lines.append(f"  note:         {note}")
        if not s.problems:
            lines.append("  problems:     none open")
        for p in s.problems:
            found = "" if p.recorded else " (found now: not recorded)"
            lines.append(
                f"  problem:      {p.kind} at slot {iso(p.slot)}{found}: {p.cause}: {p.detail}"
            )
        if report.fleet is not None:
            lines.append(f"  fleet:        {report.fleet}")
        return lines


def _shown(p: ProblemRecord) -> Problem:
    return Problem(p.key, p.slot, p.kind, p.cause, p.detail, p.opened_at, p.id)


def _seconds_text(value: timedelta | None) -> str | None:
    return None if value is None else format_duration(value)
