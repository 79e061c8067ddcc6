"""The expected slots of a watched schedule and one evaluation in progress: the schedule as
the evaluating code knows it (`Subject`), each expected slot (`Entry`), each problem found
(`Finding`), and what an evaluation gathers (`Evaluation`). The rules are in `assess.py` (late,
settling, when to look again) and `runs.py` (overran, failed, deadline missed)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from onthedot.domain.expectations import Expectations, period
from onthedot.domain.jobs import iso
from onthedot.domain.specs import Spec
from onthedot.domain.watch import OpenProblem, ProblemKind, SlotFact, WatchFacts

FOLLOW_MIN = timedelta(seconds=5)  # how often a schedule with something pending is looked at
FOLLOW_MAX = timedelta(seconds=60)
SECOND = timedelta(seconds=1)
PAGE = 100  # the storage reads at most this many unsettled slots per schedule


@dataclass(frozen=True, slots=True)
class Subject:
    """The schedule as the evaluating code knows it: its timing and its expectations (the
    definition's with an operator's overrides). `runnable` is False when this code cannot fire
    it (an invalid runtime definition: `problems` say why)."""

    key: str
    spec: Spec
    tz: ZoneInfo
    expect: Expectations
    job: str | None = None
    queue: str | None = None
    jitter: timedelta | None = None
    catchup: str = "latest"
    overlap: str = "allow"
    runnable: bool = True
    problems: tuple[str, ...] = ()

    @property
    def grace(self) -> timedelta:
        """How long after its slot a job may start (the jitter spreads starts: added)."""
        return self.expect.late_after(self.spec) + (self.jitter or timedelta(0))

    @property
    def follow(self) -> timedelta:
        """How soon to look again while something is pending (an open problem, a running
        job): a quarter of the period, within [5 s, 60 s]."""
        return min(max(period(self.spec) / 4, FOLLOW_MIN), FOLLOW_MAX)


@dataclass(frozen=True, slots=True)
class Entry:
    """One expected slot: a history row (`fact`), the first of a run of slots handled without
    a row (`gap`: coalesced or missed, up to `until`), or the first due slot not handled."""

    slot: datetime
    fact: SlotFact | None = None
    gap: bool = False
    until: datetime | None = None  # a gap: the next slot with a row (None: up to the cursor)
    handled_at: datetime | None = None  # a gap: when a tick handled it (None: unknown)

    @property
    def unhandled(self) -> bool:
        return self.fact is None and not self.gap


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem to open (or one already open whose situation is `entry`), with what to say
    about it; `resolution` set: it is over already (found after the fact)."""

    kind: ProblemKind
    entry: Entry
    resolution: str | None = None
    limit: timedelta | None = None  # overran: the limit it passed
    deadline: datetime | None = None  # deadline_missed: the deadline


@dataclass(slots=True)
class Evaluation:
    """One schedule being evaluated: its facts, its expected slots, and what was found."""

    facts: WatchFacts
    subject: Subject
    now: datetime
    entries: list[Entry]
    watch: datetime
    decided: datetime
    opened: list[Finding] = field(default_factory=list)
    resolved: list[tuple[OpenProblem, str]] = field(default_factory=list)
    ongoing: list[tuple[OpenProblem, Finding]] = field(default_factory=list)
    wake: list[datetime] = field(default_factory=list)

    def open_of(self, kind: ProblemKind) -> OpenProblem | None:
        done = {p.id for p, _ in self.resolved}
        return next((p for p in self.facts.open if p.kind == kind and p.id not in done), None)

    def job_facts(self) -> Iterator[SlotFact]:
        """The expected slots that have a job, oldest first."""
        for entry in self.entries:
            if entry.fact is not None and entry.fact.has_job:
                yield entry.fact

    def fact_at(self, slot: datetime) -> SlotFact | None:
        return next((f for f in self.job_facts() if f.slot == slot), None)

    def success_from(self, slot: datetime | None) -> SlotFact | None:
        """The first succeeded job of a slot at or after `slot` (the newest slot's included)."""
        if slot is None:
            return None
        found = [f for f in self.job_facts() if f.slot >= slot and f.state == "succeeded"]
        newest = self.facts.newest
        if newest is not None and newest.slot >= slot and newest.state == "succeeded":
            found.append(newest)
        return min(found, key=lambda f: f.slot) if found else None


def started(fact: SlotFact) -> bool:
    """Its job started (it ran, runs, or waits for a retry)."""
    return fact.started_at is not None or fact.attempts > 0


def success_text(fact: SlotFact) -> str:
    job = f"job {fact.job_id}" if fact.job_id is not None else "its job"
    return f"{job} of slot {iso(fact.slot)} succeeded at {iso(fact.finished_at)}"
