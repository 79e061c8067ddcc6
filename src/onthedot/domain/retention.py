"""How long finished jobs are kept: a duration per final state (`App(retention=...)`) and
per-job overrides (`@app.job(keep=...)`), and the prune rules they give at an instant."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from onthedot.domain.durations import SpecError, parse_duration

FINISHED = ("succeeded", "failed", "cancelled")
DEFAULT = timedelta(days=7)

Spec = str | int | float | timedelta | Mapping[str, str | int | float | timedelta]


def parse_states(value: Spec, *, what: str) -> dict[str, timedelta]:
    """A retention value as {state: duration}: one duration for every final state, or a
    mapping naming some of them (the others are left out)."""
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in FINISHED)
        if unknown:
            raise SpecError(
                f"invalid {what}: unknown state {unknown[0]!r} (use {', '.join(FINISHED)})"
            )
        if not value:
            raise SpecError(f"invalid {what}: empty mapping (name at least one of {FINISHED})")
        return {str(k): parse_duration(v, what=f"{what}[{k!r}]") for k, v in value.items()}
    return dict.fromkeys(FINISHED, parse_duration(value, what=what))


@dataclass(frozen=True, slots=True)
class PruneRule:
    """Jobs named `name` in final state `state` that finished before `before`."""

    name: str
    state: str
    before: datetime


@dataclass(frozen=True, slots=True)
class Retention:
    """How long each final state is kept, and the jobs that keep theirs differently."""

    states: Mapping[str, timedelta]
    jobs: Mapping[str, Mapping[str, timedelta]] = field(default_factory=dict)

    @classmethod
    def parse(cls, value: Spec) -> Retention:
        """`"7d"` (every final state) or `{"succeeded": "1d", "failed": "30d"}` (a state
        left out keeps the default, 7 days). Raises SpecError naming what was wrong."""
        return cls({**dict.fromkeys(FINISHED, DEFAULT), **parse_states(value, what="retention")})

    def with_jobs(self, jobs: Mapping[str, Mapping[str, timedelta]]) -> Retention:
        """This policy with these per-job overrides (job name -> {state: duration})."""
        return Retention(self.states, {k: dict(v) for k, v in jobs.items() if v})

    def longest(self) -> timedelta:
        """The longest any finished job is kept."""
        kept = [*self.states.values(), *(d for job in self.jobs.values() for d in job.values())]
        return max(kept)

    def keep(self, name: str, state: str) -> timedelta:
        """How long a job of this name finished in this state is kept."""
        return self.jobs.get(name, {}).get(state, self.states[state])

    def rules(self, now: datetime, groups: Iterable[tuple[str, str]]) -> list[PruneRule]:
        """What may be pruned at `now` of these (job name, final state) groups: one rule each,
        with the cut-off its retention gives."""
        return [PruneRule(n, s, now - self.keep(n, s)) for n, s in groups if s in FINISHED]
