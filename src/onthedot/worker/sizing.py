"""How much the worker claims: the batch per claim statement and the jobs held locally.

With no `batch_size`/`prefetch` given, both follow the observed job durations and the backlog:

- the jobs held claimed-but-not-started (the prefetch) are what the executors can start within
  `HORIZON` seconds: `concurrency x HORIZON / mean duration`, at most `MAX_PREFETCH`. Long jobs
  (a mean of `HORIZON` or more) get no prefetch: a worker holds only the jobs it runs, and the
  rest of a deep queue stays claimable by the other workers;
- the batch grows only while claims come back full (a deep queue) and falls back to the
  concurrency when a claim returns fewer jobs than asked (a shallow queue, where a large claim
  would take jobs that another idle worker could start at once);
- before any job has finished nothing is known: no prefetch, a batch of `concurrency`;
- a worker told the queue's depth at start (`backlog`, from the job counts) skips the ramp:
  once its first job finished and the prefetch allows it, its next claim takes the batch the
  backlog allows (up to `MAX_BATCH`) instead of doubling from `concurrency` claim by claim.
  Long jobs still get no prefetch, so it still holds only the jobs it runs.

A flag given (`--batch-size`, `--prefetch`) fixes that number and the rest still adapts.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    max_inflight: int  # claimed and not yet finished (running + held)
    refill_at: int  # free room worth a claim while the buffer still has jobs
    batch: int  # most jobs per claim statement


class ClaimSizing:
    HORIZON = 0.025  # seconds: a held job starts within about this long
    MAX_PREFETCH = 400
    MAX_BATCH = 200
    WEIGHT = 0.2  # of the newest duration in the moving mean

    def __init__(
        self,
        concurrency: int,
        batch_size: int | None = None,
        prefetch: int | None = None,
        backlog: int = 0,
    ) -> None:
        self.concurrency = concurrency
        self.fixed_batch = batch_size
        self.fixed_prefetch = prefetch
        self.mean: float | None = None  # seconds a job runs (moving mean); None: none seen
        # the batch the backlog allows (doubles on full claims; a known backlog starts it)
        self._deep = min(self.MAX_BATCH, max(concurrency, backlog))
        self._frozen = False
        self._limits = self._compute()

    @classmethod
    def fixed(cls, max_inflight: int, refill_at: int) -> ClaimSizing:
        """Fixed limits (tests of the pipeline alone)."""
        sizing = cls(max_inflight, batch_size=max(refill_at, 1), prefetch=0)
        sizing._limits = Limits(max_inflight, refill_at, max(refill_at, 1))
        sizing._frozen = True
        return sizing

    @property
    def limits(self) -> Limits:
        return self._limits

    @property
    def prefetch(self) -> int:
        return self._limits.max_inflight - self.concurrency

    def ran(self, seconds: float) -> None:
        """A job ran `seconds` (called under the pipeline's lock)."""
        mean = self.mean
        self.mean = seconds if mean is None else mean + self.WEIGHT * (seconds - mean)
        if not self._frozen and self.fixed_prefetch is None:
            self._limits = self._compute()

    def claimed(self, asked: int, got: int) -> None:
        """A claim statement asked for `asked` jobs and got `got`: the backlog's signal."""
        if self._frozen or self.fixed_batch is not None:
            return
        if got >= asked:
            self._deep = min(self.MAX_BATCH, max(self._deep * 2, self.concurrency))
        else:
            self._deep = self.concurrency
        self._limits = self._compute()

    def _compute(self) -> Limits:
        c = self.concurrency
        if self.fixed_prefetch is not None:
            prefetch = self.fixed_prefetch
        elif self.mean is None:
            prefetch = 0
        else:
            prefetch = min(self.MAX_PREFETCH, int(c * self.HORIZON / max(self.mean, 1e-6)))
        max_inflight = c + prefetch
        if self.fixed_batch is not None:
            batch = self.fixed_batch
        else:
            batch = max(1, min(self._deep, max_inflight))
        return Limits(max_inflight, max(1, min(batch, max_inflight // 2)), batch)
