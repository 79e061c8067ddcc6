"""The worker: claim batches -> run them on a thread pool (async jobs on an owned event loop)
-> persist outcomes in batches; heartbeat, rescue, prune, and stop gracefully.

Threads:
- the claimer (the thread calling `run()`): claims up to the free capacity, waits for wake-ups;
- `concurrency` executor threads for sync jobs, and one event-loop thread for async jobs;
- the completer: persists outcomes, batching whatever accumulated during the previous write;
- the keeper: heartbeats (extends leases, reads cancel requests), enforces timeouts, rescues
  jobs of dead workers and prunes, each on its own interval;
- the scheduler (unless disabled), and the LISTEN (re)connector or the SQLite change watcher.

Latency of a job enqueued while the worker is idle: the claimer itself sleeps on the LISTEN
connection (see `wakeup.py`), claims, and wakes exactly one idle executor per claimed job; the
work that follows a claim (the next-ready lookup, the paused-queue check, outcomes) stays off
that path.
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue as queue_mod
import signal
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from onthedot.context import JobContext
from onthedot.domain.errors import DatabaseUnavailable, JobNotRegistered, OnthedotError
from onthedot.domain.jobs import ClaimedJob, Outcome, OutcomeKind
from onthedot.observability.events import (
    DatabaseError,
    JobCancelled,
    JobFailed,
    JobRescued,
    JobRetried,
    JobStarted,
    JobSucceeded,
    WorkerStarted,
    WorkerStopped,
)
from onthedot.storage.interface import WorkerInfo
from onthedot.worker import execute
from onthedot.worker.wakeup import Wakeup

if TYPE_CHECKING:
    from onthedot.app import App

log = logging.getLogger("onthedot.worker")

_STOP = object()


@dataclass(slots=True)
class _Running:
    job: ClaimedJob
    started: float  # monotonic
    deadline: float | None
    timed_out: bool = False
    future: Any = None  # concurrent.futures.Future of an async job


class Worker:
    """Runs jobs of `queues` (claimed in the order given) with `concurrency` executor threads.

    - `batch_size`: most jobs claimed per statement (default: max(concurrency, 20)).
    - `prefetch`: claimed-but-not-started jobs held locally (default: concurrency). Given back
      without using an attempt on graceful shutdown.
    - `burst`: return once no job is ready and none is running.
    - `scheduler`: also run the scheduler tick (no leader: every worker may).
    - `grace`: seconds running jobs get to finish after the first SIGTERM/SIGINT.
    - `stop_after`: stop gracefully after that many seconds (examples, tests).
    """

    def __init__(
        self,
        app: App,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 4,
        batch_size: int | None = None,
        prefetch: int | None = None,
        burst: bool = False,
        scheduler: bool = True,
        poll_interval: float = 1.0,
        grace: float = 30.0,
        stop_after: float | None = None,
        install_signals: bool = True,
        worker_id: str | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        queues = tuple(q.strip() for q in queues if q.strip())
        if not queues:
            raise ValueError("a worker needs at least one queue")
        self.app = app
        self.storage = app.raw_storage()  # no I/O yet: the schema is checked in run()
        self.clock = app.clock
        self.queues = queues
        self.concurrency = concurrency
        self.batch_size = batch_size or max(concurrency, 20)
        self.prefetch = concurrency if prefetch is None else prefetch
        self.max_inflight = concurrency + self.prefetch
        self.refill_at = max(1, min(self.batch_size, self.max_inflight // 2))
        self.burst = burst
        self.run_scheduler = scheduler and not burst
        self.poll_interval = poll_interval
        self.grace = grace
        self.stop_after = stop_after
        self.install_signals = install_signals
        self.id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.lease = app.lease
        self.heartbeat_every = min(max(self.lease / 3, 0.05), 10.0)

        self._buffer: deque[ClaimedJob] = deque()
        lock = threading.RLock()
        self._cond = threading.Condition(lock)  # executors wait here for claimed jobs
        self._room = threading.Condition(lock)  # the claimer waits here for room (or outcomes)
        self._inflight = 0
        self._unpersisted = 0  # outcomes handed to the completer, not yet written
        self._running: dict[int, _Running] = {}
        self._running_lock = threading.Lock()
        self._outcomes: queue_mod.SimpleQueue[Any] = queue_mod.SimpleQueue()
        self._cancel_requested: set[int] = set()
        # Ids of jobs claimed and not yet finished or given back (guarded by _cond): only their
        # leases are extended, so a job claimed by a statement whose reply was lost expires
        # and is rescued instead of being held forever by a worker that does not know it has it.
        self._held: set[int] = set()
        self._stopping = threading.Event()
        self._hard_stop = threading.Event()
        self._keeper_stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._paused: set[str] = set()
        self._paused_checked = 0.0  # monotonic; 0: never read (the first claim reads it)
        self._ready_at: float | None = None  # monotonic: when the last lookup said a job is due
        self._stuck = False  # the last lookup saw a ready job: claim it, then wait a little
        self.wakeup = self._make_wakeup()
        self.scheduler: Any = None
        self.processed = 0
        self.stop_reason = "finished"
        self.generation = 0

    # -- public ---------------------------------------------------------------------------
    def stop(self, graceful: bool = True, reason: str = "stop requested") -> None:
        """Stop claiming; with graceful=False, stop at once (leases make running jobs
        rescuable)."""
        if self._stopping.is_set() and not graceful:
            self._hard_stop.set()
        if not self._stopping.is_set():
            self.stop_reason = reason
        self._stopping.set()
        if not graceful:
            self._hard_stop.set()
        self.wakeup.wake()
        with self._cond:
            self._cond.notify_all()
            self._room.notify_all()

    def run(self) -> int:
        """Run until stopped (or, with burst, until the queues are empty). Returns the number of
        jobs this worker finished."""
        previous = self._install_signal_handlers()
        started = time.monotonic()
        try:
            self._start()
            self._claim_loop(started)
            self._shutdown()
        finally:
            self._restore_signal_handlers(previous)
        return self.processed

    # -- start and stop ---------------------------------------------------------------------
    def _make_wakeup(self) -> Wakeup:
        return self.storage.wakeup(set(self.queues))

    def _start(self) -> None:
        # A worker started while the database is down waits for it; an old schema stops it.
        self._retry_db("schema check", self.app.check_schema)
        if self.run_scheduler:
            from onthedot.scheduler import Scheduler

            self.scheduler = Scheduler(self.app, worker_id=self.id, stopping=self._stopping)
            self.generation = self._retry_db("scheduler start", self.scheduler.prepare)
        self._retry_db("register worker", lambda: self.storage.register_worker(self._info()))
        if self.scheduler is not None:
            self._retry_db("schedule sync", self.scheduler.sync)
        self.app._local_wakeups.append(self._local_wake)
        self.wakeup.start()
        for i in range(self.concurrency):
            self._spawn_executor(i)
        if any(jf.is_async for jf in self.app.jobs.values()):
            self._start_loop()
        self._start_thread(self._complete_loop, "onthedot-completer")
        self._start_thread(self._keeper_loop, "onthedot-keeper")
        if self.scheduler is not None:
            self._start_thread(self.scheduler.run, "onthedot-scheduler")
        self.app.events.emit(
            WorkerStarted(
                worker_id=self.id,
                queues=",".join(self.queues),
                concurrency=self.concurrency,
                scheduler=self.scheduler is not None,
            )
        )

    def _info(self) -> WorkerInfo:
        return WorkerInfo(
            id=self.id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            queues=self.queues,
            concurrency=self.concurrency,
            scheduler=self.scheduler is not None,
            generation=self.generation,
        )

    def _start_thread(self, target: Callable[[], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def _spawn_executor(self, index: int) -> None:
        self._start_thread(self._execute_loop, f"onthedot-exec-{index}")

    def _start_loop(self) -> None:
        ready = threading.Event()

        def run_loop() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            ready.set()
            loop.run_forever()
            loop.close()

        self._start_thread(run_loop, "onthedot-async")
        ready.wait(5)

    def _shutdown(self) -> None:
        try:
            self.storage.set_worker_stopping(self.id)
        except OnthedotError:
            pass
        # Jobs claimed but never started go back without using an attempt.
        with self._cond:
            unstarted = [j.id for j in self._buffer]
            self._buffer.clear()
            self._held.difference_update(unstarted)
            self._inflight -= len(unstarted)
            self._cond.notify_all()
        if unstarted:
            try:
                self.storage.release_jobs(self.id, unstarted)
            except OnthedotError as exc:
                log.warning(
                    "could not give back %d unstarted jobs (%s); their leases will "
                    "expire and they will be rescued",
                    len(unstarted),
                    exc,
                )
        # Wait for every job taken and not yet finished (`_inflight`, now that the buffer is
        # empty), not only those in `_running`: an executor may have just taken a job and not
        # registered it yet. A timed-out job was already finished and is not waited for.
        deadline = time.monotonic() + self.grace
        while not self._hard_stop.is_set() and time.monotonic() < deadline:
            with self._cond:
                if self._inflight <= 0:
                    break
            self._hard_stop.wait(0.02)
        with self._cond:
            left = self._inflight
        if left > 0:
            log.warning(
                "stopping with %d job(s) still running; they will be rescued after "
                "their lease expires",
                left,
            )
        for _ in range(self.concurrency * 2 + 8):
            with self._cond:
                self._buffer.append(_STOP)  # type: ignore[arg-type]
                self._cond.notify_all()
        self._keeper_stop.set()
        if self.scheduler is not None:
            self.scheduler.stop()
        self._outcomes.put(_STOP)
        # Join the threads that use storage, so that closing the app after run() returns never
        # pulls connections from under a heartbeat or a tick (briefly only at a hard stop).
        settle = 1.0 if self._hard_stop.is_set() else 10.0
        for thread in self._threads:
            if thread.name == "onthedot-completer":
                thread.join(timeout=10)
            elif thread.name in ("onthedot-keeper", "onthedot-scheduler"):
                thread.join(timeout=settle)
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._local_wake in self.app._local_wakeups:
            self.app._local_wakeups.remove(self._local_wake)
        self.wakeup.stop()
        try:
            self.storage.deregister_worker(self.id)
        except OnthedotError:
            pass
        self.app.events.emit(WorkerStopped(worker_id=self.id, reason=self.stop_reason))

    def _install_signal_handlers(self) -> dict[int, Any]:
        if not self.install_signals or threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}

        def handler(signum: int, frame: Any) -> None:
            if self._stopping.is_set():
                log.warning("second signal: stopping at once")
                self.stop(graceful=False)
            else:
                log.info(
                    "signal %s: finishing running jobs (send again to stop at once)",
                    signal.Signals(signum).name,
                )
                self.stop(reason=f"signal {signal.Signals(signum).name}")

        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, handler)
        return previous

    @staticmethod
    def _restore_signal_handlers(previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    # -- claiming ---------------------------------------------------------------------------
    def _local_wake(self, queues: set[str]) -> None:
        if not queues.isdisjoint(self.queues):
            self.wakeup.wake()

    def _claim_loop(self, started: float) -> None:
        errors = 0
        settled = False
        while not self._stopping.is_set():
            if self.stop_after is not None and time.monotonic() - started >= self.stop_after:
                self.stop(reason="stop_after elapsed")
                break
            with self._cond:
                free = self.max_inflight - self._inflight
                # Refill in batches: wait until half the room is free, unless the executors
                # have nothing left to start (then any room is worth a claim).
                if free <= 0 or (free < self.refill_at and self._buffer):
                    self._room.wait(0.1)
                    continue
            try:
                claimed, more = self._claim(free)
                errors = 0
            except (OnthedotError, OSError) as exc:
                errors += 1
                self._db_error("claim", exc, errors)
                continue
            if claimed:
                self._stuck = False
                if more or self.burst:
                    settled = False
                    continue
            if self.burst:
                # Empty means: nothing claimable after every outcome was written (a finished
                # job may free a lock key, or a retry may be due at once), checked twice.
                with self._cond:
                    if self._inflight == 0 and self._unpersisted == 0:
                        if settled:
                            self.stop(reason="burst: queues empty")
                            break
                        settled = True
                        continue
                    settled = False
                    self._room.wait(0.05)
                continue
            # Every queue gave fewer jobs than asked: nothing more is ready, and whatever gets
            # ready next is announced (or found by the lookup in `_idle`). Sleep at once, so
            # the executors just woken have the interpreter to themselves.
            try:
                self._idle()
            except (OnthedotError, OSError) as exc:
                errors += 1
                self._db_error("claim", exc, errors)

    # Wake-ups arriving within this many seconds skip the next-ready lookup: a worker fed a
    # steady stream of jobs claims delayed jobs that came due at its next claim anyway.
    _QUIET = 0.02
    _BUSY_LOCK_RECHECK = 0.25  # a ready job whose lock key is held: how often to look again

    def _idle(self) -> None:
        """Sleep until woken, the next delayed job is ready, or the poll interval passes.

        The next-ready lookup is a round trip: it waits until the worker has been quiet for
        `_QUIET` (or until the instant the previous lookup gave), so it never sits between a
        notification and the claim, nor competes with the start of the job just claimed."""
        timeout = self.poll_interval
        if self.stop_after is not None:
            timeout = min(timeout, 0.1)
        if self._stuck:
            # The lookup saw a ready job and the claim right after got none: its lock key is
            # held (or another worker took it). Look again shortly.
            self._stuck = False
            self.wakeup.wait(min(timeout, self._BUSY_LOCK_RECHECK))
            return
        now = time.monotonic()
        due = self._ready_at
        if due is not None and due <= now:
            due = self._ready_at = None  # the claim just made was the one it announced
        quiet = min(timeout, self._QUIET)
        if due is not None:
            quiet = min(quiet, due - now)
        if self.wakeup.wait(quiet):
            return
        if due is not None and time.monotonic() >= due:
            return  # claim the job the previous lookup announced
        if quiet >= timeout:
            return
        timeout -= quiet
        self._ready_at = None
        queues = self._active_queues()
        if queues:
            ready_in = self.storage.seconds_until_ready(queues)
            if ready_in is not None:
                if ready_in <= 0:
                    self._stuck = True  # a ready job nobody announced (a retry): claim it now
                    return
                self._ready_at = time.monotonic() + ready_in
                timeout = min(timeout, ready_in)
        self.wakeup.wait(timeout)

    def _claim(self, free: int) -> tuple[int, bool]:
        """Claim up to `free` jobs; (how many, whether more may be ready right now)."""
        total = 0
        for queue_name in self._active_queues():
            want = min(free - total, self.batch_size)
            if want <= 0:
                return total, True  # no room left for this queue's jobs
            jobs = self.storage.claim_jobs(self.id, queue_name, want, self.lease)
            if jobs:
                with self._cond:
                    self._buffer.extend(jobs)
                    self._held.update(j.id for j in jobs)
                    self._inflight += len(jobs)
                    self._cond.notify(len(jobs))  # one idle executor per job, no more
                total += len(jobs)
                if len(jobs) >= want:
                    return total, True
        return total, False

    def _active_queues(self) -> Sequence[str]:
        if not self._paused_checked:
            self._refresh_paused()  # later by the keeper, off the claim path
        if not self._paused:
            return self.queues
        return [q for q in self.queues if q not in self._paused]

    def _refresh_paused(self) -> None:
        self._paused = self.storage.paused_queues()
        self._paused_checked = time.monotonic()

    # -- executing --------------------------------------------------------------------------
    def _execute_loop(self) -> None:
        cond = self._cond
        buffer = self._buffer
        while True:
            with cond:
                # While stopping, leave unstarted jobs in the buffer: they are given back.
                while not buffer or (self._stopping.is_set() and buffer[0] is not _STOP):
                    cond.wait()
                job = buffer.popleft()
            if job is _STOP:
                return
            if self._run_one(job):
                return  # this thread overran a timeout and was replaced: retire

    def _context(self, job: ClaimedJob) -> JobContext:
        cancel = self._cancel_requested
        job_id = job.id
        return JobContext(
            job_id=job.id,
            name=job.name,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            queue=job.queue,
            schedule_key=job.schedule_key,
            slot=job.slot,
            worker_id=self.id,
            _cancelled=lambda: job_id in cancel,
        )

    def _run_one(self, job: ClaimedJob) -> bool:
        """Run one job on this thread; True if the thread must retire (it overran a timeout)."""
        try:
            jf = self.app.resolve(job.name)
        except JobNotRegistered as exc:
            self._finish(job, execute.not_registered(job, exc), None)
            return False
        if self.app.events.wants(JobStarted):
            self.app.events.emit(JobStarted(job.id, job.name, job.attempt, self.id))
        started = time.monotonic()
        running = _Running(job, started, started + job.timeout if job.timeout else None)
        with self._running_lock:
            self._running[job.id] = running
        if jf.is_async:
            self._run_async(jf, job, running)
            return False
        outcome = execute.run_sync(jf.fn, job, self._context(job), jf.backoff)
        with self._running_lock:
            # A thread abandoned at its timeout may return while a later attempt of the same
            # job runs here: remove only our own entry.
            if self._running.get(job.id) is running:
                del self._running[job.id]
            retired = running.timed_out
        if retired:
            return True  # the keeper already failed the job and started a replacement thread
        self._finish(job, outcome, started)
        return False

    def _run_async(self, jf: Any, job: ClaimedJob, running: _Running) -> None:
        if self._loop is None:
            self._start_loop()
        assert self._loop is not None
        coro = execute.run_async(jf.fn, job, self._context(job), jf.backoff)
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        running.future = future
        running.deadline = None  # asyncio enforces the timeout itself

        def done(fut: Any) -> None:
            with self._running_lock:
                self._running.pop(job.id, None)
            try:
                outcome = fut.result()
            except BaseException as exc:  # cancelled from outside the coroutine
                outcome = (
                    execute.cancelled(job)
                    if fut.cancelled()
                    else execute.failure(job, exc, jf.backoff)
                )
            self._finish(job, outcome, running.started)

        future.add_done_callback(done)

    def _finish(self, job: ClaimedJob, outcome: Outcome, started: float | None) -> None:
        self._outcomes.put((job, outcome, None if started is None else time.monotonic() - started))
        with self._cond:
            self._unpersisted += 1
            self._inflight -= 1
            free = self.max_inflight - self._inflight
            if free == self.refill_at or not self._buffer:
                self._room.notify()  # only the claimer waits for room

    # -- persisting outcomes ----------------------------------------------------------------
    def _complete_loop(self) -> None:
        get = self._outcomes.get
        get_nowait = self._outcomes.get_nowait
        stopping = False
        while not stopping:
            items = [get()]
            try:
                while len(items) < 5000:
                    items.append(get_nowait())
            except queue_mod.Empty:
                pass
            if _STOP in items:
                stopping = True
                items = [i for i in items if i is not _STOP]
            if items:
                self._persist(items)

    def _persist(self, items: list[tuple[ClaimedJob, Outcome, float | None]]) -> None:
        outcomes = [o for _, o, _ in items]
        errors = 0
        while True:
            try:
                self.storage.finish_jobs(self.id, outcomes)
                break
            except (OnthedotError, OSError) as exc:
                errors += 1
                if self._hard_stop.is_set() and errors > 3:
                    log.error(
                        "dropping %d outcomes at hard stop; the jobs will be rescued", len(outcomes)
                    )
                    return
                self._db_error("finish", exc, errors)
        self.processed += len(items)
        with self._cond:
            self._held.difference_update(job.id for job, _, _ in items)
            self._unpersisted -= len(items)
            if self.burst and not self._unpersisted:
                self._room.notify()
        self._emit_outcomes(items)

    def _emit_outcomes(self, items: list[tuple[ClaimedJob, Outcome, float | None]]) -> None:
        events = self.app.events
        want_success = events.wants(JobSucceeded)
        for job, o, duration in items:
            kind = o.kind
            if kind is OutcomeKind.SUCCEEDED:
                if want_success:
                    events.emit(JobSucceeded(job.id, job.name, job.attempt, duration or 0.0))
            elif kind is OutcomeKind.RETRY:
                events.emit(
                    JobRetried(job.id, job.name, job.attempt, o.error or "", o.retry_in or 0.0)
                )
            elif kind is OutcomeKind.FAILED:
                events.emit(JobFailed(job.id, job.name, job.attempt, o.error or ""))
            else:
                events.emit(JobCancelled(job.id, job.name))

    # -- keeping: heartbeat, timeouts, rescue, pruning --------------------------------------
    def _keeper_loop(self) -> None:
        next_beat = 0.0
        next_rescue = 0.0
        next_prune = time.monotonic() + 5.0
        errors = 0
        while not self._keeper_stop.is_set():
            now = time.monotonic()
            self._enforce_timeouts(now)
            try:
                if now >= next_beat:
                    self._heartbeat()
                    next_beat = now + self.heartbeat_every
                if now >= next_rescue:
                    self._rescue()
                    next_rescue = now + max(self.lease / 2, 0.05)
                if now >= next_prune:
                    self._prune()
                    next_prune = now + 60.0
                if self._paused_checked and now - self._paused_checked > 2.0:
                    self._paused_checked = now  # if the read fails, retried 2 s later
                    self._refresh_paused()
                errors = 0
            except (OnthedotError, OSError) as exc:
                errors += 1
                self._db_error("heartbeat", exc, errors, wait=False)
                next_beat = now + min(2.0**errors * 0.1, 5.0)
            self._keeper_stop.wait(0.05)

    def _heartbeat(self) -> None:
        with self._cond:
            held = list(self._held)
        cancel = self.storage.heartbeat(self.id, self.lease, held=held)
        if cancel:
            self._cancel_requested.update(cancel)
            with self._running_lock:
                futures = [
                    r.future
                    for r in map(self._running.get, cancel)
                    if r is not None and r.future is not None
                ]
            # Outside the lock: cancel() runs the done callback, which takes the lock.
            for future in futures:
                future.cancel()
        if self._cancel_requested:
            with self._running_lock:
                self._cancel_requested.intersection_update(self._running)

    def _enforce_timeouts(self, now: float) -> None:
        expired: list[_Running] = []
        with self._running_lock:
            for running in self._running.values():
                if (
                    running.deadline is not None
                    and not running.timed_out
                    and now > running.deadline
                ):
                    running.timed_out = True
                    expired.append(running)
        for running in expired:
            job = running.job
            jf = self.app.jobs.get(job.name)
            log.warning(
                "job %s (%s) ran past its timeout of %ss; its thread is abandoned and "
                "its result will be ignored",
                job.id,
                job.name,
                job.timeout,
            )
            self._finish(job, execute.timed_out(job, jf.backoff if jf else None), running.started)
            self._spawn_executor(len(self._threads))

    def _rescue(self) -> None:
        rescued = self.storage.rescue_jobs()
        for r in rescued:
            self.app.events.emit(JobRescued(r.id, r.name, r.attempt, r.requeued))

    def _prune(self) -> None:
        every = 300.0
        if not self.storage.acquire_maintenance("prune", every, self.id):
            return
        now = self.clock.fixed_now() or self.storage.db_now()
        counts = self.storage.prune(
            older_than=now - self.app.retention,
            workers_older_than=now - timedelta(seconds=max(self.lease * 10, 3600)),
        )
        if any(counts.values()):
            log.info("pruned %s", " ".join(f"{k}={v}" for k, v in counts.items()))

    # -- database trouble -------------------------------------------------------------------
    def _db_error(self, where: str, exc: BaseException, errors: int, wait: bool = True) -> None:
        delay = min(0.1 * 2 ** min(errors, 10), 10.0)
        self.app.events.emit(DatabaseError(where=where, error=str(exc), retry_in=delay))
        if wait:
            self._stopping.wait(delay) if where == "claim" else self._hard_stop.wait(delay)

    def _retry_db(self, where: str, fn: Callable[[], Any]) -> Any:
        errors = 0
        while True:
            try:
                return fn()
            except DatabaseUnavailable as exc:
                errors += 1
                if self._stopping.is_set():
                    raise
                self._db_error(where, exc, errors, wait=False)
                self._stopping.wait(min(0.1 * 2 ** min(errors, 10), 10.0))
