"""Retry backoff: exponential with full jitter, capped."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before attempt n+1 after attempt n failed: base * factor**(n-1), capped, jittered.

    `jitter` is the fraction of the delay that is randomized (0 = exact, 1 = anywhere in
    [0, delay]). Jitter spreads retries of jobs that failed together so they don't stampede.
    """

    base: float = 1.0
    factor: float = 2.0
    cap: float = 3600.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.base < 0 or self.cap < 0:
            raise ValueError("backoff base and cap must be >= 0 seconds")
        if self.factor < 1:
            raise ValueError("backoff factor must be >= 1")
        if not 0 <= self.jitter <= 1:
            raise ValueError("backoff jitter must be between 0 and 1")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based)."""
        exponent = min(max(attempt - 1, 0), 64)
        raw = min(self.cap, self.base * self.factor**exponent)
        if self.jitter == 0 or raw == 0:
            return raw
        r = (rng or random).random()
        return raw * (1 - self.jitter) + raw * self.jitter * r


def coerce_backoff(value: Backoff | float | int | None) -> Backoff:
    """Accept a Backoff, a base delay in seconds, or None (the default policy)."""
    if value is None:
        return Backoff()
    if isinstance(value, Backoff):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"backoff must be a Backoff or seconds, got {value!r}")
    return Backoff(base=float(value))
