"""The supervisor's watchdog over a child that holds the GIL.

A job that makes one long call into C without releasing the GIL (a regular expression that
backtracks, a C extension's loop) stops every other thread of its process: the keeper can
neither enforce the job's timeout nor extend its lease. Left alone, the job ran past its
timeout without a `JobTimeout`, and once its lease ran out another worker rescued it and ran
it again beside it. Only something outside the process can act, and the supervisor is there:

- each child beats every `PULSE` seconds from a thread of its own (`channel.py`), and says
  when a job with a timeout starts and ends; a child whose beats stopped is holding the GIL
  (or is frozen: SIGSTOP, swap);
- silent for `SILENT` seconds while a job is past its timeout (+ `SLACK`, the child's own
  keeper's turn): the child is killed and that job is charged the attempt as a `JobTimeout`
  (retried while attempts remain, else failed), exactly what the child's keeper would have
  written;
- silent for half the lease whatever it runs: the child is killed before its lease runs out,
  so no other worker can rescue its jobs while it still runs them; they are rescued once the
  lease expires, under the rescue policy (`domain/rescue.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from onthedot.domain.errors import JobNotRegistered, OnthedotError
from onthedot.domain.jobs import ClaimedJob, Outcome
from onthedot.domain.retry import Backoff
from onthedot.storage.roles import Claiming
from onthedot.worker.execute import timed_out

log = logging.getLogger("onthedot.worker")

SILENT = 1.0  # seconds without a beat before a job past its timeout counts as stuck
SLACK = 0.5  # seconds past a job's timeout left to the child's own keeper


@dataclass(frozen=True, slots=True)
class Overran:
    """A job a killed child was running past its timeout."""

    job_id: int
    name: str
    queue: str
    attempt: int
    max_attempts: int
    timeout: float
    deadline: float  # monotonic


@dataclass(frozen=True, slots=True)
class Verdict:
    reason: str
    overran: list[Overran]


@dataclass
class ChildWatch:
    """What the supervisor knows of one child: its last beat and its jobs with a timeout."""

    since: float = 0.0  # monotonic: the last sign of life
    worker_id: str = ""
    jobs: dict[int, Overran] = field(default_factory=dict)

    def beat(self, now: float) -> None:
        self.since = max(self.since, now)

    def silent_for(self, now: float) -> float:
        return now - self.since

    def job_started(self, now: float, fields: Sequence[str]) -> None:
        job_id, left, attempt, max_attempts, queue, name = fields
        try:
            seconds = float(left)
            job = Overran(
                int(job_id), name, queue, int(attempt), int(max_attempts), seconds, now + seconds
            )
        except ValueError:
            return
        self.jobs[job.job_id] = job

    def job_ended(self, job_id: str) -> None:
        if job_id.isdigit():
            self.jobs.pop(int(job_id), None)

    def forget_jobs(self) -> None:
        self.jobs.clear()

    def verdict(self, now: float, lease: float) -> Verdict | None:
        """Whether to kill the child now, and why."""
        silent = self.silent_for(now)
        if silent >= SILENT:
            late = [j for j in self.jobs.values() if now >= j.deadline + SLACK]
            if late:
                names = ", ".join(
                    f"job {j.job_id} ({j.name}, timeout {j.timeout:g}s)" for j in late
                )
                return Verdict(
                    f"no heartbeat for {silent:.1f}s with {names} past its timeout: a call that "
                    "holds the GIL; the job is charged a JobTimeout",
                    late,
                )
        if silent >= lease / 2:
            return Verdict(
                f"no heartbeat for {silent:.1f}s (half its {lease:g}s lease): killed before "
                "another worker could rescue its jobs while it still runs them",
                [],
            )
        return None


def charge_timeouts(
    storage: Claiming,
    backoff_of: Callable[[str], Backoff | None],
    worker_id: str,
    jobs: Sequence[Overran],
) -> list[tuple[ClaimedJob, Outcome]]:
    """Write a `JobTimeout` outcome for each job, as worker `worker_id` (whose process is
    dead); the ones written (a job it no longer held, e.g. rescued meanwhile, is left)."""
    done: list[tuple[ClaimedJob, Outcome]] = []
    for job in jobs:
        claimed = ClaimedJob(
            id=job.job_id,
            name=job.name,
            args=[],
            kwargs={},
            queue=job.queue,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            timeout=job.timeout,
            schedule_key=None,
            slot=None,
        )
        try:
            backoff = backoff_of(job.name)
        except JobNotRegistered:
            backoff = None
        done.append((claimed, timed_out(claimed, backoff)))
    try:
        changed = storage.finish_jobs(worker_id, [outcome for _, outcome in done])
    except OnthedotError as exc:
        log.error(
            "could not record the timeout of job(s) %s (%s); they will be rescued once the "
            "lease of worker %s expires",
            ", ".join(str(j.job_id) for j in jobs),
            exc,
            worker_id,
        )
        return []
    return done if changed == len(done) else []  # else unknown which: no events for them
