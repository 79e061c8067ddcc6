"""The storage contract by role: each consumer depends on the verbs of its role only, and
every backend implements them all (`Storage` in storage/interface.py combines them). Every
verb has its conformance test in `tests/storage/contract/`.

Time: the storage is given the clock once. Its `fixed_now()` is the "now" of every verb; None
(the system clock) means the database clock (PostgreSQL `now()`, SQLite's host clock), a
datetime (a test's manual clock) replaces it. `at(now)` is the same storage at another time.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol, Self

from onthedot.domain.jobs import (
    ClaimedJob,
    Job,
    JobAction,
    JobCount,
    JobFilter,
    NewJob,
    Outcome,
    QueueStats,
)
from onthedot.domain.ledger import AuditEntry, LedgerRow, SlotRecord
from onthedot.domain.rescue import Lease
from onthedot.domain.retention import PruneRule
from onthedot.domain.workers import WorkerInfo, WorkerRow
from onthedot.storage.records import (
    CallerConnection,
    OperatorPatch,
    Renewal,
    RescuedJob,
    SyncTransaction,
    TickTransaction,
)
from onthedot.storage.wakeup import Wakeup


class Lifecycle(Protocol):
    """The database handle itself: open, migrate, clock, close; maintenance."""

    backend: str  # "sqlite" | "postgresql"

    def close(self) -> None:
        """Release every connection. The object must not be used afterwards."""

    def at(self, now: datetime | None) -> Self:
        """This storage, sharing its connections, with "now" fixed at `now` (None: the
        database clock): for ticks and checks at a chosen instant."""

    def ping(self) -> None:
        """Raise DatabaseUnavailable unless the database answers."""

    def migrate(self, *, first_use: bool = False) -> list[int]:
        """Apply pending migrations; return the versions applied. Safe to run concurrently.
        With `first_use`, only on a backend that migrates itself on first use (SQLite)."""

    def schema_version(self) -> tuple[int, int]:
        """(version in the database, latest version this code knows)."""

    def db_now(self) -> datetime:
        """Now: the clock's fixed time (a ManualClock's), else the database clock."""

    def wakeup(self, queues: Collection[str]) -> Wakeup:
        """A wake-up for a worker idle on these queues: woken when their jobs may be ready."""

    def prune(
        self,
        *,
        older_than: datetime,
        workers_older_than: datetime,
        audit_older_than: datetime | None = None,
    ) -> dict[str, int]:
        """Delete finished jobs that finished before `older_than`, slot history behind each
        ledger cursor recorded before it, ledger rows removed from code before it, worker
        rows whose heartbeat is older than `workers_older_than`, and audit entries written
        before `audit_older_than` (None: keep them all); counts per table. Batched as below."""

    def prune_jobs(self, *, older_than: datetime, limit: int) -> int:
        """Delete at most `limit` jobs finished before `older_than`, whatever their retention:
        each (job name, final state)'s oldest first, one transaction per (name, state); how
        many (fewer than `limit`: none left)."""

    def finished_groups(self) -> list[tuple[str, str]]:
        """The (job name, final state) pairs that have finished jobs, from the job counts."""

    def prune_finished(self, rule: PruneRule, *, limit: int) -> int:
        """Delete at most `limit` jobs of `rule.name` in `rule.state` finished before
        `rule.before`, oldest first, in one transaction; how many (fewer than `limit`: none
        left)."""

    def count_finished(self, rule: PruneRule) -> int:
        """How many jobs `prune_finished` would delete for this rule, all batches together."""


class JobStore(Protocol):
    """Jobs written by clients (the enqueuer)."""

    def enqueue(
        self, jobs: Sequence[NewJob], *, connection: CallerConnection | None = None
    ) -> list[int]:
        """Insert jobs; return their ids in input order. A job whose `unique_key` matches a
        queued-or-running job is not inserted: its slot in the result holds the existing id.
        With `connection` (PostgreSQL), run inside the caller's transaction and never commit."""

    async def aenqueue(self, jobs: Sequence[NewJob], *, connection: CallerConnection) -> list[int]:
        """`enqueue(jobs, connection=connection)` for async callers: with a psycopg
        AsyncConnection, inside its open transaction, awaited, never committing."""

    def get_job(self, job_id: int) -> Job | None:
        """The job, or None."""


class Claiming(Protocol):
    """What a worker does with jobs: claim, finish, give back, rescue."""

    def claim_jobs(
        self,
        worker_id: str,
        queue: str,
        limit: int,
        lease: float,
        *,
        shared: bool = False,
        names: Sequence[str] | None = None,
    ) -> list[ClaimedJob]:
        """Atomically move up to `limit` ready jobs of `queue` (run_at <= now) to `running`,
        leased to `worker_id` until now+lease, counting an attempt; highest priority, then
        oldest run_at, first. No job is handed to two workers at once. A job with a lock key
        is skipped while another job with that key runs. `names`: only these job names (None:
        any). `shared` (a worker's claim): solo jobs left out, a lost attempt not charged."""

    def claim_alone(
        self, worker_id: str, queue: str, lease: float, *, names: Sequence[str] | None = None
    ) -> ClaimedJob | None:
        """Claim the next ready solo job of `queue` alone (domain.rescue); its attempt counts."""

    def finish_jobs(self, worker_id: str, outcomes: Sequence[Outcome]) -> int:
        """Persist outcomes of jobs this worker holds; ignore jobs it no longer holds (rescued,
        cancelled). Returns how many rows changed."""

    def release_jobs(self, worker_id: str, job_ids: Sequence[int]) -> int:
        """Give back claimed jobs that never started: queued again, the attempt not counted."""

    def seconds_until_ready(self, queues: Sequence[str]) -> float | None:
        """Seconds (database clock) until the earliest queued job of these queues is ready;
        zero or less when one is ready now; None when none is queued."""

    def ending_leases(self, within: float, *, limit: int = 10000) -> list[Lease]:
        """The leases of running jobs that end within `within` seconds from now (or ended),
        soonest first: what a rescuer watches (`domain.rescue.LeaseWatch`)."""

    def rescue_jobs(
        self, *, limit: int = 1000, only: Collection[Lease] | None = None
    ) -> list[RescuedJob]:
        """Jobs running with an expired lease go back to queued (or to failed when they have no
        attempts left), with a WorkerLost error recorded; with `only`, just those of them whose
        lease is still as given (not renewed since it was read). Safe to run from every
        worker."""

    def paused_queues(self) -> set[str]:
        """Names of paused queues."""


class WorkerStore(Protocol):
    """Workers' rows: register, heartbeat, list; maintenance turns."""

    def register_worker(self, worker: WorkerInfo) -> None:
        """Insert (or replace) the worker's row."""

    def deregister_worker(self, worker_id: str, *, stopping: bool = False) -> None:
        """Delete the worker's row; with `stopping`, only mark it as shutting down (shown in
        listings) until it is deleted."""

    def heartbeat(
        self,
        worker_id: str,
        lease: float,
        *,
        held: Collection[int] | None = None,
        started: Collection[int] = (),
    ) -> Renewal:
        """Mark the worker alive and extend the leases of its running jobs to now+lease (with
        `held`, only of those: a job claimed by a statement whose reply was lost then expires
        and is rescued); `started`: held jobs now executing. Return the jobs renewed and
        those of them cancel-requested."""

    def list_workers(self) -> list[WorkerRow]:
        """Every registered worker, newest first, with its heartbeat age."""

    def acquire_maintenance(self, task: str, every: float, worker_id: str) -> bool:
        """True for exactly one caller per `every` seconds per task (no leader needed)."""


class AdminReads(Protocol):
    """What operators read and do: listings, counts, job actions, queue pauses."""

    def list_jobs(self, flt: JobFilter) -> list[Job]:
        """Jobs matching the filter, newest id first, keyset-paginated by `before_id`."""

    def count_jobs(self, flt: JobFilter) -> int:
        """How many jobs match the filter (ignoring before_id and limit)."""

    def tally_jobs(self, flt: JobFilter, *, cap: int = 10_000) -> JobCount:
        """How many jobs match, for an operator: exact from the counts kept with the jobs when
        the filter is of queue, job name and states only; otherwise counted up to `cap` and,
        beyond it, the planner's estimate (PostgreSQL; `exact` False) or counted (SQLite)."""

    def queue_stats(self) -> list[QueueStats]:
        """Depth per state for each queue, exact: the depths from the job counts kept with
        the jobs, ready and the oldest ready age from an index range of the queued jobs."""

    def queued_by_name(self) -> dict[str, int]:
        """How many jobs are queued, by job name (from the job counts: no scan of the jobs)."""

    def finished_counts(
        self, *, since: datetime, bucket_seconds: int = 3600
    ) -> list[tuple[datetime, str, int]]:
        """(bucket start, final state, count) of jobs finished since `since`, oldest bucket
        first; buckets are `bucket_seconds` long (default one hour), aligned on the Unix epoch."""

    def job_action(self, action: JobAction, job_id: int) -> Job | None:
        """Apply an operator's action to one job and return it afterwards (None once deleted):
        `retry` queues a failed or cancelled job again now with fresh attempts; `cancel`
        cancels a queued job or asks a running one to stop; `delete` deletes a job that is not
        running. Raises JobNotFound, or InvalidJobState when the job's state forbids it."""

    def bulk_job_action(self, action: JobAction, flt: JobFilter) -> int:
        """Apply `retry`, `cancel` or `delete` to every job matching the filter."""

    def set_queue_paused(self, queue: str, paused: bool, actor: str) -> None:
        """Pause or resume claiming from a queue."""


class LedgerStore(Protocol):
    """The schedule ledger: sync, ticks, slot history, operator state, audit."""

    def code_generation(self, code_hash: str) -> int:
        """The generation number of a set of declared schedules (assigned on first sight)."""

    def sync_declared(
        self,
        *,
        generation: int,
        fence_ttl: float,
        keys: Sequence[str] = (),
    ) -> AbstractContextManager[SyncTransaction]:
        """Open the transaction reconciling the ledger with the code's declarations: it holds
        the rows of `keys` and every code row not marked removed; the caller plans and applies.
        Fenced (nothing may be written) while a live scheduler of a newer generation exists."""

    def tick(
        self,
        *,
        generation: int,
        fence_ttl: float,
        limit: int,
        skip_keys: Sequence[str] = (),
        expect_due: bool = False,
    ) -> AbstractContextManager[TickTransaction]:
        """Open one scheduler transaction holding up to `limit` due ledger rows locked (skipping
        rows another scheduler holds); the caller decides and applies. A slot whose history row
        already exists is not enqueued again. Fenced (`done`, nothing written) while a newer
        generation is alive: the fence is checked inside that transaction. Rows of `skip_keys`
        (and runtime rows with overlap "skip") get `active_jobs` filled.

        While nothing is due it opens no transaction: one read gives the clock, the fence and
        the earliest next_due_at (`done` is an `idle` result carrying `next_due_at`). With
        `expect_due` (the caller's previous batch was full) it skips that read."""

    def count_live_code_rows(self, keys: Sequence[str]) -> int:
        """How many of these keys have a code ledger row not marked removed."""

    def list_schedule_rows(self, keys: Collection[str] | None = None) -> list[LedgerRow]:
        """Every ledger row (with `keys`, those of these keys), by key."""

    def slot_history(
        self,
        key: str,
        *,
        limit: int | None = 50,
        start: datetime | None = None,
        end: datetime | None = None,
    ) -> list[SlotRecord]:
        """Slot history of a schedule, newest slot first, with each job's state; only slots
        in [start, end] (None: unbounded); at most `limit` rows (None: all)."""

    def upsert_dynamic(self, row: LedgerRow) -> None:
        """Create or replace a dynamic schedule's definition (ledger row)."""

    def delete_schedule(self, key: str, *, cancel_queued: bool) -> int:
        """Delete a ledger row and its slot history; cancel its queued jobs when asked.
        Returns how many jobs were cancelled."""

    def update_operator_state(self, key: str, patch: OperatorPatch) -> LedgerRow | None:
        """Change one row's operator state as the patch says; None if the key has no row."""

    def record_slots(
        self, records: Sequence[SlotRecord], jobs: Sequence[NewJob | None]
    ) -> list[SlotRecord]:
        """Insert slot history rows (with jobs where given) unless they exist; return the rows
        inserted (with job ids)."""

    def delete_slot(self, key: str, slot: datetime, outcome: str) -> bool:
        """Delete one slot history row with the given outcome."""

    def add_audit(self, entry: AuditEntry) -> None:
        """Append to the audit log."""

    def list_audit(self, key: str | None = None, *, limit: int = 100) -> list[AuditEntry]:
        """Audit entries, newest first."""
