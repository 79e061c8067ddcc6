"""Flow control as the App composes it (docs/limits.md): the named limits (`app.limit`), the
limits a job is declared under, their record in the database (`sync`, at a worker's start),
and the operators' view and controls (`onthedot limits`, the web admin's Limits page)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from onthedot.domain.ledger import AuditAction
from onthedot.domain.limits import (
    Key,
    KeyLoad,
    LimitRow,
    LimitSetting,
    LimitSpec,
    check_name,
    parse_rate,
    rate_text,
    split_key,
)
from onthedot.limits_held import read_holds
from onthedot.schedules.audit import AuditTrail, check_operator_text

if TYPE_CHECKING:
    from onthedot.jobs import JobRegistry
    from onthedot.storage.interface import Storage


@dataclass(frozen=True, slots=True)
class LimitView:
    """A limit as `onthedot limits` and the web page show it."""

    row: LimitRow
    busiest: list[KeyLoad]
    declared: bool  # declared by this app's code
    registered: bool = True  # recorded in the database (a worker with it has started)

    @property
    def name(self) -> str:
        return self.row.effective.name


class Limits:
    """The named limits, the jobs' own, their settings in the database and their load."""

    def __init__(
        self, storage: Callable[[], Storage], jobs: JobRegistry, audit: AuditTrail
    ) -> None:
        self._storage = storage
        self._jobs = jobs
        self._audit = audit
        self.named: dict[str, LimitSpec] = {}

    # -- declaring ---------------------------------------------------------------------------
    def declare(
        self,
        name: str,
        *,
        concurrency: int | None = None,
        rate: str | None = None,
        burst: int | None = None,
        key: Key = None,
    ) -> LimitSpec:
        """`app.limit(...)`: a named limit several jobs may sit under (`limits=[name]`)."""
        where = f"limit {name!r}"
        check_name(name)
        if name in self._jobs:
            raise ValueError(f"{where}: a job is named {name!r}; give the limit another name")
        spec = LimitSpec.declare(
            name, concurrency=concurrency, rate=rate, burst=burst, key=key, where=where
        )
        self.named[name] = spec
        return spec

    def specs_for(
        self,
        job_name: str,
        signature: inspect.Signature,
        *,
        concurrency: int | None,
        rate: str | None,
        burst: int | None,
        key: Key,
        limits: Sequence[str] | None,
    ) -> tuple[LimitSpec, ...]:
        """The limits a job is declared under: its own (named after the job) then the named
        ones; each checked against its signature. One line naming what was wrong."""
        where = f"job {job_name!r}"
        specs: list[LimitSpec] = []
        if concurrency is not None or rate is not None or burst is not None:
            specs.append(
                LimitSpec.declare(
                    job_name,
                    concurrency=concurrency,
                    rate=rate,
                    burst=burst,
                    key=key,
                    where=where,
                )
            )
        elif key is not None:
            raise ValueError(f"{where}: key= needs concurrency= or rate= (the limit it keys)")
        if isinstance(limits, str):
            raise TypeError(f"{where}: limits= takes a list of limit names, like [{limits!r}]")
        for name in limits or ():
            spec = self.named.get(name)
            if spec is None:
                known = ", ".join(sorted(self.named)) or "none"
                raise ValueError(
                    f"{where}: limits= names {name!r}, which is not declared (declared: "
                    f"{known}); declare it first with app.limit({name!r}, ...)"
                )
            specs.append(spec)
        for spec in specs:
            spec.check_signature(signature, where)
        return tuple(specs)

    def declared(self) -> dict[str, LimitSpec]:
        """Every limit this app's code declares: the named ones and the jobs' own."""
        found = dict(self.named)
        for jf in self._jobs.values():
            for spec in jf.limit_specs:
                found.setdefault(spec.name, spec)
        return found

    def sync(self) -> None:
        """Record the declared limits' settings (a worker does at its start)."""
        settings = [
            LimitSetting(s.name, s.concurrency, s.rate, s.burst) for s in self.declared().values()
        ]
        self._storage().sync_limits(settings)

    # -- operators ---------------------------------------------------------------------------
    def loads(self) -> tuple[list[LimitRow], list[KeyLoad]]:
        """The registered limits and the load of every key with jobs (the metrics' gauges;
        read only)."""
        storage = self._storage()
        return storage.list_limits(), storage.limit_loads()

    def overview(self, top: int = 5) -> list[LimitView]:
        """Each limit with its `top` busiest keys, by name: those the database holds, and
        those this app declares that no worker has recorded yet (its code's settings, not
        registered). Read only: a page or a listing writes nothing."""
        storage = self._storage()
        loads = storage.limit_loads()
        declared = self.declared()
        rows = {r.effective.name: r for r in storage.list_limits()}
        views = []
        for name in sorted(set(rows) | set(declared)):
            row = rows.get(name)
            if row is None:
                s = declared[name]
                code = LimitSetting(name, s.concurrency, s.rate, s.burst)
                row = LimitRow(code, code, False)
            mine = [k for k in loads if split_key(k.lkey)[0] == name]
            mine.sort(key=lambda k: (-k.running, -k.waiting, k.lkey))
            views.append(LimitView(row, mine[:top], name in declared, name in rows))
        return views

    def set(
        self,
        name: str,
        *,
        concurrency: int | None = None,
        rate: str | None = None,
        burst: int | None = None,
        actor: str | None = None,
        note: str | None = None,
    ) -> LimitRow:
        """Override a limit's settings (those given; the others stay) until `reset`; audited,
        in force at the next claim."""
        check_operator_text(note, actor)
        row = self._row(name)
        where = f"limits set {name}"
        if concurrency is not None and (
            isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
        ):
            raise ValueError(f"{where}: --concurrency must be a whole number >= 1")
        if burst is not None and (isinstance(burst, bool) or burst < 1):
            raise ValueError(f"{where}: --burst must be a whole number >= 1")
        if concurrency is None and rate is None and burst is None:
            raise ValueError(f"{where}: give --concurrency, --rate or --burst")
        current = row.effective
        setting = LimitSetting(
            name,
            current.concurrency if concurrency is None else concurrency,
            current.rate if rate is None else parse_rate(rate, where),
            current.burst if burst is None else burst,
        )
        self._storage().set_limit(setting)
        details: dict[str, Any] = {
            "concurrency": setting.concurrency,
            "rate": rate_text(setting.rate),
            "burst": setting.burst,
        }
        self._audit.record(AuditAction.LIMIT_SET, f"limit:{name}", actor, note, details)
        return self._row(name)

    def reset(self, name: str, *, actor: str | None = None, note: str | None = None) -> LimitRow:
        """Return a limit to the code's settings; audited."""
        check_operator_text(note, actor)
        self._row(name)
        self._storage().reset_limit(name)
        self._audit.record(AuditAction.LIMIT_RESET, f"limit:{name}", actor, note)
        return self._row(name)

    def _row(self, name: str) -> LimitRow:
        self.sync()
        for row in self._storage().list_limits():
            if row.effective.name == name:
                return row
        known = ", ".join(r.effective.name for r in self._storage().list_limits()) or "none"
        raise ValueError(f"no limit named {name!r} (limits: {known}); see `onthedot limits`")

    def explain(self, job_id: int, *, lease: float) -> list[str]:
        """What holds a job: each reason one line (`onthedot jobs explain`, the job page); a
        job not queued says its state. `lease`: how old a heartbeat a live worker has."""
        storage = self._storage()
        found = storage.job_limits(job_id)
        if found is None:
            raise ValueError(f"no job with id {job_id}")
        state, queue, name, due_in, lkeys = found
        if state != "queued":
            return [f"job {job_id} is {state}, not waiting"]
        lines = []
        if due_in > 0:
            lines.append(f"not due yet: due in {due_in:.1f} s")
        if queue in storage.paused_queues():
            lines.append(f"queue {queue!r} is paused (`onthedot queues resume {queue}`)")
        live = [w for w in storage.list_workers() if w.heartbeat_age <= lease and not w.stopping]
        if not any(queue in w.queues for w in live):
            lines.append(f"no live worker serves queue {queue!r}")
        elif not any(queue in w.queues and (not w.jobs or name in w.jobs) for w in live):
            lines.append(f"no live worker serving queue {queue!r} knows job {name!r}")
        lines += read_holds(storage, lkeys)
        return lines or ["nothing holds it: a worker should claim it at its next claim"]
