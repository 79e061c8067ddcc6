"""The worker: claim batches -> run them on a thread pool (async jobs on an owned event loop)
-> persist outcomes in batches; heartbeat, rescue, prune, and stop gracefully.

Threads:
- the claimer (the thread calling `run()`): claims up to the free capacity, waits for wake-ups
  (`claimer.py`);
- `concurrency` executor threads for sync jobs, and one event-loop thread for async jobs
  (`executor.py`);
- the completer: persists outcomes, batching whatever accumulated during the previous write
  (`completer.py`);
- the keeper: heartbeats (extends leases, reads cancel requests), enforces timeouts, rescues
  jobs of dead workers and prunes, each on its own interval (`maintenance.py`);
- the scheduler (unless disabled), and the LISTEN (re)connector or the SQLite change watcher.

This module owns the lifecycle: start, run, stop, and the graceful shutdown that gives
unstarted jobs back (signals: `signals.py`).
"""

from __future__ import annotations

import logging
import os
import queue as queue_mod
import socket
import threading
from collections.abc import Callable, Sequence

from onthedot.clock import REAL
from onthedot.domain.errors import OnthedotError
from onthedot.observability.events import WorkerStarted, WorkerStopped
from onthedot.storage.interface import WorkerInfo
from onthedot.storage.wakeup import Wakeup
from onthedot.worker.claimer import BURST_EMPTY, Claimer, ClaimOptions, PausedQueues
from onthedot.worker.completer import Completer, Tally
from onthedot.worker.deps import SchedulerLike, WorkerDeps
from onthedot.worker.executor import Executors, JobWatch
from onthedot.worker.maintenance import DatabaseBackoff, Keeper
from onthedot.worker.signals import stop_on_signals
from onthedot.worker.sizing import ClaimSizing
from onthedot.worker.state import STOP, Flags, OutcomeQueue, Pipeline, RunningJobs, Threads

log = logging.getLogger("onthedot.worker")


class Worker:
    """Runs jobs of `queues` (claimed in the order given) with `concurrency` executor threads.

    - `batch_size`: most jobs claimed per statement (default: sized by the backlog, see
      `sizing.py`).
    - `prefetch`: claimed-but-not-started jobs held locally (default: what the executors can
      start within ~25 ms at the observed job durations). Given back without using an attempt
      on graceful shutdown.
    - `burst`: return once no job is ready and none is running.
    - `scheduler`: also run the scheduler tick (no leader: every worker may).
    - `grace`: seconds running jobs get to finish after the first SIGTERM/SIGINT.
    - `stop_after`: stop gracefully after that many seconds (examples, tests).
    - `watch`: told when a job with a timeout starts and ends (a supervised process).
    - `backlog`: jobs waiting in its queues at start, as far as known (its first claims are
      sized by it, see `sizing.py`).
    """

    def __init__(
        self,
        deps: WorkerDeps,
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
        watch: JobWatch | None = None,
        backlog: int = 0,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        queues = tuple(q.strip() for q in queues if q.strip())
        if not queues:
            raise ValueError("a worker needs at least one queue")
        self.deps = deps
        self.storage = deps.storage  # no I/O yet: the schema is checked in run()
        self.queues = queues
        self.concurrency = concurrency
        self.burst = burst
        self.batch_size, self.prefetch = batch_size, prefetch  # as given (None: sized itself)
        self.run_scheduler = scheduler and not burst and deps.scheduler is not None
        self.grace = grace
        self.stop_after = stop_after
        self.install_signals = install_signals
        self.id = worker_id or f"{socket.gethostname()}-{os.getpid()}-{os.urandom(4).hex()}"
        self.lease = deps.lease
        self.scheduler: SchedulerLike | None = None
        self.stop_reason = "finished"
        self.stopped_at: float | None = None  # monotonic: when it was first asked to stop
        self.left_running = 0  # jobs still running when it stopped (rescued after their lease)
        self.generation = 0

        self.flags = Flags()
        self.threads = Threads()
        self.pipeline = Pipeline(
            sizing=ClaimSizing(concurrency, batch_size or None, prefetch, backlog),
            executors=concurrency,
            lease=self.lease,
        )
        self.running = RunningJobs()
        outcomes: OutcomeQueue = queue_mod.SimpleQueue()
        self.outcomes = outcomes
        self.backoff = DatabaseBackoff(deps.events, self.flags)
        self.wakeup: Wakeup = self.storage.wakeup(set(self.queues))
        self.paused = PausedQueues(self.storage, deps.clock)
        options = ClaimOptions(self.id, queues, self.lease, burst, poll_interval, stop_after)
        self.claimer = Claimer(
            options,
            storage=self.storage,
            clock=deps.clock,
            pipeline=self.pipeline,
            paused=self.paused,
            wakeup=self.wakeup,
            flags=self.flags,
            backoff=self.backoff,
            known=deps.jobs,
            events=deps.events,
        )
        self.executors = Executors(
            worker_id=self.id,
            jobs=deps.jobs,
            resolve=deps.resolve,
            events=deps.events,
            pipeline=self.pipeline,
            running=self.running,
            outcomes=outcomes,
            flags=self.flags,
            threads=self.threads,
            instrumentation=deps.instrumentation,
            clock=deps.clock,
            watch=watch,
        )
        self.completer = Completer(
            worker_id=self.id,
            storage=self.storage,
            events=deps.events,
            outcomes=outcomes,
            pipeline=self.pipeline,
            flags=self.flags,
            backoff=self.backoff,
            burst=burst,
        )
        self.keeper = Keeper(
            worker_id=self.id,
            storage=self.storage,
            clock=deps.clock,
            events=deps.events,
            lease=self.lease,
            retention=deps.retention,
            audit_retention=deps.audit_retention,
            pipeline=self.pipeline,
            running=self.running,
            flags=self.flags,
            backoff=self.backoff,
            enforce_timeouts=self.executors.enforce_timeouts,
            refresh_paused=self.paused.refresh_if_stale,
        )
        self._unregister_wakeup: Callable[[], None] | None = None

    @property
    def stop_requested(self) -> threading.Event:
        """Set once the worker was asked to stop (it stops claiming)."""
        return self.flags.stopping

    @property
    def processed(self) -> int:
        """Jobs this worker finished (their outcomes persisted)."""
        return self.completer.processed

    @property
    def forced(self) -> bool:
        """Whether the stop cut work short: stopped at once (a second signal), or the grace
        ran out with jobs still running (their leases expire and they are rescued)."""
        return self.flags.hard_stop.is_set() or self.left_running > 0

    @property
    def tally(self) -> Tally:
        """The attempts this worker ran, by how each ended (`processed` is their number)."""
        return self.completer.tally()

    @property
    def _threads(self) -> list[threading.Thread]:
        return list(self.threads)

    # -- public ---------------------------------------------------------------------------
    def stop(self, graceful: bool = True, reason: str = "stop requested") -> None:
        """Stop claiming; with graceful=False, stop at once (leases make running jobs
        rescuable)."""
        stopping, hard_stop = self.flags.stopping, self.flags.hard_stop
        if stopping.is_set() and not graceful:
            hard_stop.set()
        if not stopping.is_set():
            self.stop_reason = reason
            self.stopped_at = REAL.monotonic()
        stopping.set()
        if not graceful:
            hard_stop.set()
        self.wakeup.wake()
        self.pipeline.wake_all()

    def run(self) -> int:
        """Run until stopped (or, with burst, until the queues are empty). Returns the number of
        attempts this worker ran (their outcomes persisted; `tally` says how each ended)."""
        with stop_on_signals(self, self.install_signals):
            started = REAL.monotonic()
            self._start()
            reason = self.claimer.run(started)
            while reason == BURST_EMPTY and self._rescued_before_leaving():
                reason = self.claimer.run(started)  # run what the keeper rescued, then leave
            if reason is not None:
                self.stop(reason=reason)
            self._shutdown()
        return self.processed

    def _rescued_before_leaving(self) -> bool:
        """A burst worker that found the queues empty lets its keeper decide the leases it
        watches before it leaves (a dead worker's jobs are rescued once seen unrenewed for a
        whole lease, `domain.rescue.LeaseWatch`), for at most two leases: whether it rescued
        some (then they are claimed). Without watched leases it leaves at once, and so it does
        under a test's clock, which moves only when the test moves it."""
        keeper, stopping = self.keeper, self.flags.stopping
        if self.deps.clock.fixed_now() is not None:
            return False
        rescued = keeper.rescued
        deadline = REAL.monotonic() + 2 * self.lease
        while not stopping.is_set() and REAL.monotonic() < deadline:
            if keeper.rescued != rescued:
                return True
            if keeper.passes and not keeper.watching():
                return False
            stopping.wait(0.02)
        return keeper.rescued != rescued

    # -- start and stop ---------------------------------------------------------------------
    def _start(self) -> None:
        deps, retry = self.deps, self.backoff.retry
        # A worker started while the database is down waits for it; an old schema stops it.
        retry("schema check", deps.check_schema)
        if self.run_scheduler and deps.scheduler is not None:
            self.scheduler = deps.scheduler(self.id, self.flags.stopping)
            self.generation = retry("scheduler start", self.scheduler.prepare)
        retry("register worker", lambda: self.storage.register_worker(self._info()))
        if deps.sync_limits is not None:
            retry("limits sync", deps.sync_limits)
        if self.scheduler is not None:
            retry("schedule sync", self.scheduler.sync)
        self._unregister_wakeup = deps.wakeups.on_jobs(self._local_wake)
        self.wakeup.start()
        self.executors.start(self.concurrency)
        self.threads.start(self.completer.run, "onthedot-completer")
        self.threads.start(self.keeper.run, "onthedot-keeper")
        if self.scheduler is not None:
            self.threads.start(self.scheduler.run, "onthedot-scheduler")
        deps.events.emit(
            WorkerStarted(
                worker_id=self.id,
                queues=",".join(self.queues),
                concurrency=self.concurrency,
                scheduler=self.scheduler is not None,
                batch_size=self.batch_size,
                prefetch=self.prefetch,
                grace=self.grace,
                burst=self.burst,
            )
        )

    def _local_wake(self, queues: set[str]) -> None:
        if not queues.isdisjoint(self.queues):
            self.wakeup.wake()

    def _info(self) -> WorkerInfo:
        return WorkerInfo(
            id=self.id,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            queues=self.queues,
            concurrency=self.concurrency,
            scheduler=self.scheduler is not None,
            generation=self.generation,
            jobs=tuple(self.executors.jobs),
        )

    def _shutdown(self) -> None:
        try:
            self.storage.deregister_worker(self.id, stopping=True)
        except OnthedotError:
            pass
        self._give_back()
        self._wait_for_running()
        self.pipeline.stop_executors(self.concurrency * 2 + 8)
        self.flags.keeper_stop.set()
        if self.scheduler is not None:
            self.scheduler.stop()
        self.outcomes.put(STOP)
        # Join the threads that use storage, so that closing the app after run() returns never
        # pulls connections from under a heartbeat or a tick (briefly only at a hard stop).
        settle = 1.0 if self.flags.hard_stop.is_set() else 10.0
        for thread in self.threads:
            if thread.name == "onthedot-completer":
                thread.join(timeout=10)
            elif thread.name in ("onthedot-keeper", "onthedot-scheduler"):
                thread.join(timeout=settle)
        self.executors.stop_loop()
        if self._unregister_wakeup is not None:
            self._unregister_wakeup()
            self._unregister_wakeup = None
        self.wakeup.stop()
        try:
            self.storage.deregister_worker(self.id)
        except OnthedotError:
            pass
        self.deps.events.emit(WorkerStopped(worker_id=self.id, reason=self.stop_reason))

    def _give_back(self) -> None:
        """Jobs claimed but never started go back without using an attempt."""
        unstarted = self.pipeline.take_unstarted()
        if not unstarted:
            return
        try:
            self.storage.release_jobs(self.id, unstarted)
        except OnthedotError as exc:
            log.warning(
                "could not give back %d unstarted jobs (%s); their leases will "
                "expire and they will be rescued",
                len(unstarted),
                exc,
            )

    def _wait_for_running(self) -> None:
        # Wait for every job taken and not yet finished (`inflight`, now that the buffer is
        # empty), not only those running: an executor may have just taken a job and not
        # registered it yet. A timed-out job was already finished and is not waited for.
        hard_stop = self.flags.hard_stop
        deadline = REAL.monotonic() + self.grace
        while not hard_stop.is_set() and REAL.monotonic() < deadline:
            if self.pipeline.taken() <= 0:
                break
            hard_stop.wait(0.02)
        left = self.left_running = self.pipeline.taken()
        if left > 0:
            log.warning(
                "stopping with %d job(s) still running; they will be rescued after "
                "their lease expires",
                left,
            )
