"""What holds a queued job back under its limits, read from the database: the one reading
`onthedot jobs explain` (onthedot.limits) and schedule health's cause held_by_limit
(schedules/watcher.py) share. Apart from onthedot.limits so that the scheduler can import it
without the operators' controls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from onthedot.domain.limits import holds

if TYPE_CHECKING:
    from onthedot.storage.interface import Storage


def read_holds(storage: Storage, lkeys: Sequence[str]) -> list[str]:
    """What of a queued job's limit keys holds it back now, one line each (two reads; none
    when it has no keys)."""
    if not lkeys:
        return []
    settings = {r.effective.name: r.effective for r in storage.list_limits()}
    loads = {k.lkey: k for k in storage.limit_loads(lkeys)}
    return holds(lkeys, settings, loads)
