"""Timing specs for the concurrency tests, each with an independent brute-force rule saying
which whole seconds (UTC) are slots. Every zone used has whole-minute offsets, so a spec with a
seconds field matches the same seconds in local and UTC time."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class SlotRule:
    text: str
    matches: Callable[[int], bool]  # epoch seconds -> is a slot

    def slots(self, after: datetime, until: datetime) -> list[datetime]:
        """Slots in (after, until], by brute force."""
        first = int(after.timestamp()) + 1
        last = int(until.timestamp())
        return [datetime.fromtimestamp(t, UTC) for t in range(first, last + 1) if self.matches(t)]


def every(n: int) -> SlotRule:
    return SlotRule(f"every {n}s", lambda t: t % n == 0)


def step(n: int) -> SlotRule:
    return SlotRule(f"*/{n} * * * * *", lambda t: t % 60 % n == 0)


def seconds_list(values: Iterable[int]) -> SlotRule:
    chosen = sorted(set(values))
    wanted = frozenset(chosen)
    return SlotRule(f"{','.join(map(str, chosen))} * * * * *", lambda t: t % 60 in wanted)


def range_step(start: int, n: int) -> SlotRule:
    return SlotRule(
        f"{start}-59/{n} * * * * *", lambda t: t % 60 >= start and (t % 60 - start) % n == 0
    )


def every_minute() -> SlotRule:
    return SlotRule("* * * * *", lambda t: t % 60 == 0)


def tick_times(start: datetime, gaps_ms: Iterable[int]) -> list[datetime]:
    """Increasing tick instants from `start`, gaps in milliseconds (a gap of 0 repeats a tick)."""
    out, t = [], start
    for gap in gaps_ms:
        t += timedelta(milliseconds=gap)
        out.append(t)
    return out
