"""The state the worker's threads share, each piece behind one small object with its own lock:

- `Pipeline`: claimed jobs on their way from the claimer to the executors, the counts the
  claimer sizes its next claim by (taken but unfinished, finished but not yet persisted), and
  until when each held claim is proven (`leases.py`);
- `RunningJobs`: the jobs executing now (for timeouts and cancel requests);
- `Flags`: the stop events; `Threads`: every thread the worker started;
- the outcome queue between the executors and the completer.
"""

from __future__ import annotations

import queue as queue_mod
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import Enum

from onthedot.clock import REAL, lease_clock
from onthedot.domain.jobs import ClaimedJob, Outcome
from onthedot.worker.leases import HeldLeases
from onthedot.worker.sizing import ClaimSizing


class Sentinel(Enum):
    STOP = "stop"  # put in the buffer or the outcome queue: the thread reading it returns


STOP = Sentinel.STOP

# (job, outcome, seconds it ran; None if it never started)
Done = tuple[ClaimedJob, Outcome, float | None]
OutcomeQueue = queue_mod.SimpleQueue[Done | Sentinel]


@dataclass(frozen=True, slots=True)
class Flags:
    """`stopping`: stop claiming and drain; `hard_stop`: stop at once; `keeper_stop`: the
    keeper's own stop, set once nothing runs any more."""

    stopping: threading.Event = field(default_factory=threading.Event)
    hard_stop: threading.Event = field(default_factory=threading.Event)
    keeper_stop: threading.Event = field(default_factory=threading.Event)


class Threads:
    """The worker's threads (daemons), kept so shutdown can join them."""

    def __init__(self) -> None:
        self.all: list[threading.Thread] = []

    def start(self, target: Callable[[], None], name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self.all.append(thread)
        return thread

    def __len__(self) -> int:
        return len(self.all)

    def __iter__(self) -> Iterator[threading.Thread]:
        return iter(list(self.all))


class Pipeline:
    """Claimed jobs between the claimer and the executors, and the counts behind claiming.

    One lock, two conditions: executors wait on `cond` for claimed jobs, the claimer waits on
    `room` for free capacity (or, in burst mode, for outcomes to be written). How much to hold
    comes from `sizing` (`sizing.py`), fed the durations of the jobs that finish."""

    def __init__(
        self,
        max_inflight: int | None = None,
        refill_at: int = 1,
        *,
        sizing: ClaimSizing | None = None,
        executors: int | None = None,
        lease: float | None = None,
    ) -> None:
        if sizing is None:
            if max_inflight is None:
                raise ValueError("a Pipeline needs max_inflight or a sizing")
            sizing = ClaimSizing.fixed(max_inflight, refill_at)
        self.sizing = sizing
        self.executors = sizing.limits.max_inflight if executors is None else executors
        # Jobs waiting in the buffer: when each was claimed (monotonic), for `take_stale`.
        self.claimed_at: dict[int, float] = {}
        # Set when buffered jobs were given back for waiting too long: claim only for idle
        # executors (no prefetch) until a job finishes.
        self.hold_back = False
        self.buffer: deque[ClaimedJob | Sentinel] = deque()
        lock = threading.RLock()
        self.cond = threading.Condition(lock)
        self.room = threading.Condition(lock)
        self.inflight = 0  # claimed and not yet finished (buffered or running)
        self.unpersisted = 0  # outcomes handed to the completer, not yet written
        # Jobs claimed and not yet finished or given back, each with until when its claim is
        # proven: only their leases are extended, so a job claimed by a statement whose reply
        # was lost expires and is rescued instead of being held forever by a worker that does
        # not know it has it.
        self.held = HeldLeases(lease)
        # Taken jobs whose claim could not be proven at their start: not run, to be given back
        # by the keeper (still counted in `inflight` until then, so that nothing is claimed
        # alone before the give-back is written).
        self.unproven: list[int] = []
        # A solo job (lost beside others when a worker died) is held alone: nothing more is
        # claimed until it is finished and persisted (domain.rescue).
        self.alone = False

    # -- the claimer ------------------------------------------------------------------------
    def wait_for_room(self) -> int:
        """How many jobs to claim now; 0 after a short wait for room."""
        with self.cond:
            if self.alone:
                if self.inflight or self.unpersisted:
                    self.room.wait(0.1)
                    return 0
                self.alone = False
            limits = self.sizing.limits
            free = limits.max_inflight - self.inflight
            if self.hold_back:
                free = min(free, self.executors - self.inflight)
                if free <= 0:
                    self.room.wait(0.1)
                    return 0
            # Refill in batches: wait until half the room is free, unless the executors have
            # nothing left to start (then any room is worth a claim).
            if free <= 0 or (free < limits.refill_at and self.buffer):
                self.room.wait(0.1)
                return 0
            return free

    def batch(self) -> int:
        """Most jobs the next claim statement asks for."""
        return self.sizing.limits.batch

    def claimed(self, asked: int, got: int) -> None:
        # Without the lock: the executor just woken by `add_claimed` must not wait for it.
        # Only the claimer writes the backlog's part of the sizing; the limits are replaced
        # whole, and recomputed at the next finished job anyway.
        self.sizing.claimed(asked, got)

    def empty(self) -> bool:
        """Nothing claimed is unfinished or unpersisted: the worker holds no job."""
        with self.cond:
            return self.inflight == 0 and self.unpersisted == 0

    def add_claimed(
        self, jobs: list[ClaimedJob], *, alone: bool = False, sent: float | None = None
    ) -> None:
        """`jobs`, claimed by a statement sent at `sent` (`lease_clock`; default: now)."""
        with self.cond:
            self.alone = alone
            self.buffer.extend(jobs)
            now = REAL.monotonic()  # how long it waits in the buffer: real seconds
            self.claimed_at.update((j.id, now) for j in jobs)
            self.held.add((j.id for j in jobs), lease_clock() if sent is None else sent)
            self.inflight += len(jobs)
            self.cond.notify(len(jobs))  # one idle executor per job, no more

    def drained(self, timeout: float) -> bool:
        """True if nothing is taken or unpersisted; else wait up to `timeout` for outcomes."""
        with self.cond:
            if self.inflight == 0 and self.unpersisted == 0:
                return True
            self.room.wait(timeout)
            return False

    # -- the executors ----------------------------------------------------------------------
    def take(self, stopping: threading.Event) -> ClaimedJob | Sentinel:
        """The next claimed job (blocking). While stopping, unstarted jobs stay in the buffer
        (they are given back): only STOP is taken."""
        cond = self.cond
        buffer = self.buffer
        with cond:
            while not buffer or (stopping.is_set() and buffer[0] is not STOP):
                cond.wait()
            job = buffer.popleft()
            if job is not STOP:
                self.claimed_at.pop(job.id, None)
            return job

    def finished(self, seconds: float | None = None) -> None:
        """A taken job has its outcome (handed to the completer); it ran `seconds` (None: it
        never started)."""
        with self.cond:
            self.unpersisted += 1
            self.inflight -= 1
            self.hold_back = False
            if seconds is not None:
                self.sizing.ran(seconds)
            limits = self.sizing.limits
            if limits.max_inflight - self.inflight >= limits.refill_at or not self.buffer:
                self.room.notify()  # only the claimer waits for room

    def proven(self, job_id: int, now: float) -> bool:
        """Whether a taken job's claim is still proven at `now` (`lease_clock`), to start it."""
        return self.held.proven(job_id, now)

    def set_aside(self, job_id: int) -> None:
        """A taken job whose claim could not be proven: not run; the keeper gives it back."""
        with self.cond:
            self.held.discard((job_id,))
            self.unproven.append(job_id)

    # -- the completer ----------------------------------------------------------------------
    def persisted(self, job_ids: Iterable[int], count: int, burst: bool) -> None:
        with self.cond:
            self.held.discard(job_ids)
            self.unpersisted -= count
            if (burst or self.alone) and not self.unpersisted:
                self.room.notify()

    # -- the keeper and shutdown ------------------------------------------------------------
    def held_ids(self) -> list[int]:
        with self.cond:
            return self.held.ids()

    def renewed(self, job_ids: Iterable[int], sent: float) -> None:
        """A heartbeat sent at `sent` (`lease_clock`) extended the leases of `job_ids`."""
        with self.cond:
            self.held.renewed(job_ids, sent)

    def unproven_ids(self) -> list[int]:
        with self.cond:
            return list(self.unproven)

    def given_back(self, job_ids: Iterable[int]) -> None:
        """Jobs set aside unproven were given back (or found taken by another worker)."""
        with self.cond:
            gone = set(job_ids)
            left = [i for i in self.unproven if i not in gone]
            # Only those still set aside: a shutdown may have taken them meanwhile.
            self.inflight -= len(self.unproven) - len(left)
            self.unproven = left
            self.room.notify()

    def take_unstarted(self) -> list[int]:
        """Empty the buffer; the ids of the jobs it held and those set aside (to be given
        back)."""
        with self.cond:
            unstarted = [j.id for j in self.buffer if j is not STOP] + self.unproven
            self.unproven = []
            self.buffer.clear()
            self.claimed_at.clear()
            self.held.discard(unstarted)
            self.inflight -= len(unstarted)
            self.cond.notify_all()
            return unstarted

    def take_stale(self, claimed_before: float) -> list[int]:
        """Take out of the buffer the jobs claimed before monotonic `claimed_before` that no
        executor has started (every one is busy); the ids, to be given back (then `released`:
        until then they are counted, so that nothing is claimed alone before the give-back is
        written). Until a job finishes, claims are then only for idle executors."""
        with self.cond:
            if not self.claimed_at or min(self.claimed_at.values()) >= claimed_before:
                return []
            stale = {i for i, t in self.claimed_at.items() if t < claimed_before}
            kept = [j for j in self.buffer if j is STOP or j.id not in stale]
            self.buffer.clear()
            self.buffer.extend(kept)
            for job_id in stale:
                del self.claimed_at[job_id]
            self.held.discard(stale)
            self.hold_back = True
            return sorted(stale)

    def released(self, count: int) -> None:
        """Jobs taken by `take_stale` were given back."""
        with self.cond:
            self.inflight -= count
            self.room.notify()

    def taken(self) -> int:
        with self.cond:
            return self.inflight

    def stop_executors(self, count: int) -> None:
        for _ in range(count):
            with self.cond:
                self.buffer.append(STOP)
                self.cond.notify_all()

    def wake_all(self) -> None:
        with self.cond:
            self.cond.notify_all()
            self.room.notify_all()


@dataclass(slots=True)
class Running:
    job: ClaimedJob
    started: float  # monotonic
    deadline: float | None
    timed_out: bool = False
    future: Future[Outcome | None] | None = None  # an async job's, on the event loop
    began: bool = False  # an async job's coroutine has started on its loop
    submission: int = 0  # an async job resubmitted to a fresh loop: the older one never begins
    call: Callable[..., Awaitable[object]] | None = None  # an async job's (instrumented) function


class RunningJobs:
    """The jobs executing now, and the cancel requests read by the heartbeat."""

    def __init__(self) -> None:
        self._running: dict[int, Running] = {}
        self._lock = threading.Lock()
        self.cancel_requested: set[int] = set()
        self.new_since_report = False  # a job started since the keeper last reported starts

    def add(self, running: Running) -> None:
        with self._lock:
            self._running[running.job.id] = running
            self.new_since_report = True

    def remove(self, running: Running) -> bool:
        """Remove `running` (only that entry: a thread abandoned at its timeout may return
        while a later attempt of the same job runs); True if it had timed out."""
        with self._lock:
            job_id = running.job.id
            if self._running.get(job_id) is running:
                del self._running[job_id]
            return running.timed_out

    def discard(self, job_id: int) -> None:
        with self._lock:
            self._running.pop(job_id, None)

    def expire(self, now: float) -> list[Running]:
        """Mark and return the jobs past their deadline at monotonic `now`."""
        expired: list[Running] = []
        with self._lock:
            for running in self._running.values():
                if (
                    running.deadline is not None
                    and not running.timed_out
                    and now > running.deadline
                ):
                    running.timed_out = True
                    expired.append(running)
        return expired

    def started_ids(self) -> list[int]:
        """The ids of the jobs executing now (reported by the next heartbeat)."""
        with self._lock:
            self.new_since_report = False
            return list(self._running)

    def begin(self, running: Running, submission: int) -> bool:
        """On the loop, as an async job's coroutine starts: False if it was moved to another
        loop meanwhile (this submission must not run)."""
        with self._lock:
            if running.submission != submission:
                return False
            running.began = True
            return True

    def unstarted_async(self) -> list[Running]:
        """Async jobs submitted to a loop that has not started them, each marked as moved (its
        older submission will not run): to be submitted to a fresh loop."""
        with self._lock:
            moved = [
                r
                for r in self._running.values()
                if r.future is not None and not r.began and not r.timed_out
            ]
            for running in moved:
                running.submission += 1
            return moved

    def request_cancel(self, job_ids: Collection[int]) -> list[Future[Outcome | None]]:
        """Record cancel requests; the futures of those running as async jobs (to cancel
        outside the lock: cancelling runs the done callback, which takes it)."""
        self.cancel_requested.update(job_ids)
        with self._lock:
            return [
                r.future
                for r in map(self._running.get, job_ids)
                if r is not None and r.future is not None
            ]

    def forget_finished_cancels(self) -> None:
        if self.cancel_requested:
            with self._lock:
                self.cancel_requested.intersection_update(self._running)
