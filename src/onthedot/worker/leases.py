"""The jobs a worker holds, and until when it can prove that each is still its own.

A claim is proven until one lease after the instant (`clock.lease_clock`, monotonic) at which
the statement that took or last renewed it was *sent* (the claim, or a heartbeat that named the
job among those it extended), never when its answer came: the database starts the lease no
earlier than it receives the statement, and a rescuer takes a job only after it has seen the
job's lease unrenewed for a whole lease on its own monotonic clock (`domain.rescue.LeaseWatch`).
So until then no other worker can have the job, whatever the wall clocks do; after it, this
worker cannot tell.

A worker never starts a job whose claim it cannot still prove with `START_MARGIN` to spare (the
moment between the check and the start): one that waited in the buffer while the process was
frozen (SIGSTOP, a VM pause, a swap storm) or starved, or whose claim's answer came late, is
given back instead: a no-op if it was rescued meanwhile, else queued again, its attempt not
counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

START_MARGIN = 1.0  # seconds of proof a start needs at least (less with a lease under 10 s)


class HeldLeases:
    """Held job ids -> the instant (`lease_clock`) their claim is proven until. Not locked: its
    owner (the `Pipeline`) writes it under its own lock; `proven` reads one entry, which is
    safe without it."""

    def __init__(self, lease: float | None) -> None:
        self.lease = math.inf if lease is None else lease  # None: proofs never lapse (tests)
        self.margin = min(self.lease / 10, START_MARGIN)
        self._until: dict[int, float] = {}

    def add(self, job_ids: Iterable[int], sent: float) -> None:
        """Jobs claimed by a statement sent at `sent`."""
        until = sent + self.lease
        self._until.update((i, until) for i in job_ids)

    def renewed(self, job_ids: Iterable[int], sent: float) -> None:
        """Jobs whose leases a heartbeat sent at `sent` extended (only those still held)."""
        until = sent + self.lease
        held = self._until
        for job_id in job_ids:
            if held.get(job_id, math.inf) < until:
                held[job_id] = until

    def proven(self, job_id: int, now: float) -> bool:
        """Whether the claim of `job_id` is proven past `now`, with the margin to spare."""
        return self._until.get(job_id, -math.inf) - self.margin > now

    def discard(self, job_ids: Iterable[int]) -> None:
        for job_id in job_ids:
            self._until.pop(job_id, None)

    def ids(self) -> list[int]:
        return list(self._until)

    def __len__(self) -> int:
        return len(self._until)
