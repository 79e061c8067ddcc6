"""The storage verbs of flow control (docs/limits.md), part of the one Storage protocol
(`interface.Storage` inherits them; the conformance suite covers them as every other verb).

Time: as every verb, "now" is the storage's clock (the database clock unless fixed); token
buckets refill on it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from onthedot.domain.limits import KeyLoad, LimitedClaim, LimitRow, LimitSetting


class LimitStorage(Protocol):
    def claim_limited(
        self,
        worker_id: str,
        queue: str,
        limit: int,
        lease: float,
        *,
        shared: bool = False,
        names: Sequence[str] | None = None,
    ) -> LimitedClaim:
        """Claim up to `limit` due limited jobs of `queue` in one transaction, each only if
        every limit key it sits under allows one more start (running below the concurrency,
        a token in the bucket; an unregistered limit allows none), round-robin across home
        keys least recently started first; take a token from each key for each start. The list
        returned also says what each limit held back and which keys it filled."""

    def sync_limits(self, settings: Sequence[LimitSetting]) -> None:
        """Record the limits declared in code (an operator's override stays in force)."""

    def set_limit(self, setting: LimitSetting) -> bool:
        """Override a registered limit's settings until reset; False: no such limit."""

    def reset_limit(self, name: str) -> bool:
        """Return a limit to the code's settings; False: no such limit."""

    def list_limits(self) -> list[LimitRow]:
        """Every registered limit, by name."""

    def limit_loads(self, lkeys: Sequence[str] | None = None) -> list[KeyLoad]:
        """The load of these limit keys (None: every key with running or queued jobs)."""

    def job_limits(self, job_id: int) -> tuple[str, str, str, float, list[str]] | None:
        """(state, queue, name, seconds until due, limit keys) of a job; None if absent."""
