"""Pruning finished jobs by their retention (docs/retention.md): the rules of one pass, taken
one bounded batch at a time (the worker's keeper, `onthedot prune`), or counted (`--dry-run`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from onthedot.domain.retention import PruneRule, Retention

if TYPE_CHECKING:
    from onthedot.storage.interface import Storage


@dataclass(frozen=True, slots=True)
class Prunable:
    """Jobs of one name in one final state that a prune at `before` removes (or removed)."""

    name: str
    state: str
    before: datetime
    count: int


class PrunePass:
    """One pass over every (job name, final state) group: `step()` deletes at most `limit`
    jobs of the current group in one transaction and says whether more is left. The groups and
    their cut-offs are fixed when the pass starts, at `now`."""

    def __init__(self, storage: Storage, policy: Retention, now: datetime) -> None:
        self.storage = storage
        self.now = now
        self.rules: list[PruneRule] = policy.rules(now, storage.finished_groups())
        self.deleted: dict[tuple[str, str], int] = {}
        self._at = 0

    def step(self, limit: int) -> bool:
        """Delete one batch; False once every group is done."""
        while self._at < len(self.rules):
            rule = self.rules[self._at]
            n = self.storage.prune_finished(rule, limit=limit)
            if n:
                key = (rule.name, rule.state)
                self.deleted[key] = self.deleted.get(key, 0) + n
            if n >= limit:
                return True
            self._at += 1
            if n:
                return self._at < len(self.rules)
        return False

    @property
    def jobs(self) -> int:
        return sum(self.deleted.values())

    def done(self) -> list[Prunable]:
        """What this pass deleted, per group."""
        return [
            Prunable(r.name, r.state, r.before, self.deleted[(r.name, r.state)])
            for r in self.rules
            if self.deleted.get((r.name, r.state))
        ]


def preview(storage: Storage, policy: Retention, now: datetime) -> list[Prunable]:
    """What a prune at `now` would delete, per group with anything to delete."""
    out = []
    for rule in policy.rules(now, storage.finished_groups()):
        n = storage.count_finished(rule)
        if n:
            out.append(Prunable(rule.name, rule.state, rule.before, n))
    return out
