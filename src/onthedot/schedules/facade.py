"""`app.schedules`: one entry point over the schedule peers (registry, runtime schedules,
operator controls, read views). Each verb is the peer's own bound method, so its signature and
docstring are the peer's."""

from __future__ import annotations

from collections.abc import Iterator

from onthedot.domain.definitions import Declaration
from onthedot.schedules.controls import OperatorControls
from onthedot.schedules.expectations import ExpectationControls
from onthedot.schedules.health import HealthReader
from onthedot.schedules.registry import ScheduleRegistry
from onthedot.schedules.runtime import RuntimeSchedules
from onthedot.schedules.views import ScheduleViews


class Schedules:
    """Declared and runtime schedules: declare and check them, create/update/delete runtime
    ones, operate on any (pause, resume, skip, unskip, trigger, backfill, reset, audit,
    expect), and read them (get, list, views, explain, expectations)."""

    def __init__(
        self,
        registry: ScheduleRegistry,
        runtime: RuntimeSchedules,
        controls: OperatorControls,
        views: ScheduleViews,
        expectations: ExpectationControls,
        health: HealthReader,
    ) -> None:
        self.registry = registry
        self.runtime = runtime
        self.controls = controls
        self.read = views
        # declared in code
        self.declare = registry.declare
        self.check = registry.check
        self.declared = registry.declared
        self.code_hash = registry.code_hash
        self.definition_for = registry.definition_for
        self.dynamic_problems = registry.dynamic_problems
        self.runtime_jobs = registry.runtime_jobs
        # runtime schedules
        self.create = runtime.create
        self.update = runtime.update
        self.delete = runtime.delete
        # operator controls
        self.pause = controls.pause
        self.resume = controls.resume
        self.skip = controls.skip
        self.unskip = controls.unskip
        self.skipped = controls.skipped
        self.trigger = controls.trigger
        self.backfill = controls.backfill
        self.reset = controls.reset
        self.audit = controls.audit
        self.expect = expectations.expect
        self.expectations = expectations.expectations
        # read views
        self.get = views.get
        self.list = views.views
        self.views = views.views
        self.view = views.view
        self.get_definition = views.get_definition
        self._health = health

    def explain(self, key: str) -> str:
        """Why schedule `key` did or did not fire, in plain words (`schedules explain`),
        ending with its health: expectations, run times and open problems."""
        text = self.read.explain(key)
        lines = self._health.explain_lines(key)
        return "\n".join([text, *lines]) if lines else text

    def __iter__(self) -> Iterator[Declaration]:
        return iter(self.registry)

    def __len__(self) -> int:
        return len(self.registry)
