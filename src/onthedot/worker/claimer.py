"""The claimer: the thread calling `Worker.run` claims up to the free capacity, queue by queue
in the order given, and sleeps on the wake-up until something may be ready.

Latency of a job enqueued while the worker is idle: the claimer itself sleeps on the LISTEN
connection (see `wakeup.py`), claims, and wakes exactly one idle executor per claimed job; the
work that follows a claim (the next-ready lookup, the paused-queue check, outcomes) stays off
that path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from onthedot.clock import REAL, Clock, lease_clock
from onthedot.domain.errors import OnthedotError
from onthedot.domain.limits import LimitedClaim, split_key
from onthedot.observability.events import EventBus, LimitHeld, LimitSaturated
from onthedot.storage.interface import Storage
from onthedot.storage.wakeup import Wakeup
from onthedot.worker.maintenance import PAUSED_EVERY, DatabaseBackoff
from onthedot.worker.state import Flags, Pipeline

BURST_EMPTY = "burst: queues empty"  # the reason a burst worker's claimer stops


class ClaimerState(Enum):
    """Where the claimer's loop is (docs/architecture.md, "The claimer's states"). Each turn
    of `Claimer.run` waits for room, claims unless LOOKED, then (not in burst mode) sleeps in
    `Claimer.idle` or (in burst mode) checks whether the queues are empty."""

    CLAIM = "claim"  # claim up to the free room at the next turn
    LOOKED = "looked"  # the idle wait's lookup found nothing ready: wait again, no claim
    STUCK = "stuck"  # a lookup saw a ready job the claim did not get: look again shortly
    SETTLING = "settling"  # burst: nothing claimable once; empty if so again after outcomes


@dataclass(frozen=True, slots=True)
class ClaimOptions:
    worker_id: str
    queues: tuple[str, ...]
    lease: float
    burst: bool  # stop once nothing is ready and nothing runs
    poll_interval: float
    stop_after: float | None


class PausedQueues:
    """The paused queues, read by the first claim and then by the keeper every 2 s, off the
    claim path."""

    def __init__(self, storage: Storage, clock: Clock) -> None:
        self.storage = storage
        self.clock = clock
        self.names: set[str] = set()
        # clock.monotonic() of the last read; None: never read (the first claim reads it)
        self.checked: float | None = None

    def active(self, queues: tuple[str, ...]) -> Sequence[str]:
        if self.checked is None:
            self.refresh()
        if not self.names:
            return queues
        return [q for q in queues if q not in self.names]

    def refresh(self) -> None:
        self.names = self.storage.paused_queues()
        self.checked = self.clock.monotonic()

    def refresh_if_stale(self, now: float) -> None:
        """The keeper's check (`now`: the clock's monotonic time); nothing before the first
        claim read them."""
        if self.checked is not None and now - self.checked > PAUSED_EVERY:
            self.checked = now  # if the read fails, retried 2 s later
            self.refresh()


class Claimer:
    # Wake-ups arriving within this many seconds skip the next-ready lookup: a worker fed a
    # steady stream of jobs claims delayed jobs that came due at its next claim anyway.
    QUIET = 0.02
    BUSY_LOCK_RECHECK = 0.25  # a ready job whose lock key is held: how often to look again
    ALONE_EVERY = 1.0  # how often an idle worker looks for a solo job
    # A claim woken by an announcement leaves the solo look to the quiet moment after it (the
    # idle lookup), unless none was made for this long: a worker fed a steady stream of
    # announced jobs still looks, off the path of all but one job in this many seconds.
    ALONE_DEFER = 30.0

    def __init__(
        self,
        options: ClaimOptions,
        *,
        storage: Storage,
        clock: Clock,
        pipeline: Pipeline,
        paused: PausedQueues,
        wakeup: Wakeup,
        flags: Flags,
        backoff: DatabaseBackoff,
        known: Mapping[str, object] | None = None,
        events: EventBus | None = None,
    ) -> None:
        self.options = options
        # The registry of the jobs this worker can run: it claims only those names, so a job
        # added by a newer deploy waits for a worker that knows it (None: any name).
        self.known = known
        self._names: tuple[str, ...] = ()
        self.storage = storage
        self.clock = clock
        self.pipeline = pipeline
        self.paused = paused
        self.wakeup = wakeup
        self.flags = flags
        self.backoff = backoff
        # Instants are `clock.monotonic()`: a test's ManualClock moves them.
        self.state = ClaimerState.CLAIM
        self._ready_at: float | None = None  # when the last lookup said a job is due
        self._alone_at = -math.inf  # the last look for a solo job
        self._announced = False  # the last idle wait ended with a wake-up (a job announced)
        self._limited: tuple[int, bool] | None = None  # (jobs known, whether any is limited)
        self.events = events
        self._saturated: dict[str, float] = {}  # limit key -> when LimitSaturated was said
        self._limited_first: set[str] = set()  # queues whose last claim found only limited jobs
        self._claims = 0

    def run(self, started: float) -> str | None:
        """Claim until the worker stops; the reason to stop if the claimer decided it
        (`stop_after` real seconds elapsed since `started`, `REAL.monotonic()`; a burst found
        the queues empty), else None."""
        opts = self.options
        errors = 0
        self.state = ClaimerState.CLAIM
        while not self.flags.stopping.is_set():
            if opts.stop_after is not None and REAL.monotonic() - started >= opts.stop_after:
                return "stop_after elapsed"
            free = self.pipeline.wait_for_room()
            if not free:
                continue
            claimed, more = 0, False
            if self.state is not ClaimerState.LOOKED:
                # (after such a lookup a claim would find nothing: skipped)
                try:
                    claimed, more = self.claim(free)
                    errors = 0
                except (OnthedotError, OSError) as exc:
                    errors += 1
                    self.backoff.error("claim", exc, errors)
                    continue
            if claimed:
                self.state = ClaimerState.CLAIM
                if more or opts.burst:
                    continue
            if opts.burst:
                # Empty means: nothing claimable after every outcome was written (a finished
                # job may free a lock key, or a retry may be due at once), checked twice.
                if not self.pipeline.drained(0.05):
                    self.state = ClaimerState.CLAIM
                elif self.state is ClaimerState.SETTLING:
                    return BURST_EMPTY
                else:
                    self.state = ClaimerState.SETTLING
                continue
            # Every queue gave fewer jobs than asked: nothing more is ready, and whatever gets
            # ready next is announced (or found by the lookup in `idle`). Sleep at once, so
            # the executors just woken have the interpreter to themselves.
            try:
                if not self.idle():
                    self.state = ClaimerState.LOOKED
                elif self.state is not ClaimerState.STUCK:
                    self.state = ClaimerState.CLAIM
            except (OnthedotError, OSError) as exc:
                self.state = ClaimerState.CLAIM
                errors += 1
                self.backoff.error("claim", exc, errors)
        return None

    def idle(self) -> bool:
        """Sleep until woken, the next delayed job is ready, or the poll interval passes;
        whether to claim now. False: the poll interval passed, nothing was announced, and this
        wait's lookup found nothing ready (so an idle worker runs one lookup per poll interval,
        the safety net behind LISTEN, and no claim that would find nothing).

        The next-ready lookup is a round trip: it waits until the worker has been quiet for
        `QUIET` (or until the instant the previous lookup gave), so it never sits between a
        notification and the claim, nor competes with the start of the job just claimed."""
        timeout = self.options.poll_interval
        if self.options.stop_after is not None:
            timeout = min(timeout, 0.1)
        if self.limited():
            timeout = min(timeout, self.BUSY_LOCK_RECHECK)
        if self.state is ClaimerState.STUCK:
            # The lookup saw a ready job and the claim right after got none: its lock key is
            # held (or another worker took it). Look again shortly.
            self.state = ClaimerState.CLAIM
            self.wakeup.wait(min(timeout, self.BUSY_LOCK_RECHECK))
            return True
        now = self.clock.monotonic()
        due = self._ready_at
        if due is not None and due <= now:
            due = self._ready_at = None  # the claim just made was the one it announced
        quiet = min(timeout, self.QUIET)
        if due is not None:
            quiet = min(quiet, due - now)
        if self._wait(quiet):
            return True
        if due is not None and self.clock.monotonic() >= due:
            return True  # claim the job the previous lookup announced
        if quiet >= timeout:
            return True  # no time left for a lookup: the claim is the poll
        if self.claim_alone():
            return True  # a solo job, now running alone: the claim loop waits for room
        timeout -= quiet
        self._ready_at = None
        queues = self.paused.active(self.options.queues)
        if queues:
            ready_in = self.storage.seconds_until_ready(queues)
            if ready_in is not None:
                if ready_in <= 0:
                    # A ready job nobody announced (a retry): claim it now.
                    self.state = ClaimerState.STUCK
                    return True
                self._ready_at = self.clock.monotonic() + ready_in
                timeout = min(timeout, ready_in)
        if self._wait(timeout):
            return True
        if self.limited():
            return True  # a limited job's slot or token frees without an announcement
        return self._ready_at is not None and self.clock.monotonic() >= self._ready_at

    def _wait(self, timeout: float) -> bool:
        """Sleep on the wake-up; whether a job was announced."""
        self._announced = self.wakeup.wait(timeout)
        return self._announced

    def names(self) -> Sequence[str] | None:
        """The job names this worker claims (rebuilt when a job is registered)."""
        if self.known is None:
            return None
        if len(self._names) != len(self.known):
            self._names = tuple(self.known)
        return self._names

    SATURATED_EVERY = 60.0  # a key's LimitSaturated is said at most this often (seconds)

    def report(self, queue: str, claim: LimitedClaim) -> None:
        """Events of a limited claim: what each limit held back, the keys it filled."""
        events = self.events
        if events is None:
            return
        for name, count in claim.held.items():
            events.emit(LimitHeld(name, queue, count))
        now = REAL.monotonic()  # a rate limit of the events: real seconds
        for lkey, concurrency in claim.saturated:
            if now - self._saturated.get(lkey, -self.SATURATED_EVERY) >= self.SATURATED_EVERY:
                self._saturated[lkey] = now
                name, key = split_key(lkey)
                events.emit(LimitSaturated(name, key, concurrency))
        if len(self._saturated) > 10_000:  # bounded: forget the oldest half
            for k in sorted(self._saturated, key=self._saturated.__getitem__)[:5_000]:
                del self._saturated[k]

    def limited(self) -> bool:
        """Whether a job this worker claims sits under a limit (docs/limits.md): then it also
        claims limited jobs, and an idle worker looks again every `BUSY_LOCK_RECHECK` (a
        finished job frees its slot without an announcement)."""
        if self.known is None:
            return True
        if self._limited is None or self._limited[0] != len(self.known):
            flag = any(getattr(j, "limit_specs", ()) for j in self.known.values())
            self._limited = (len(self.known), flag)
        return self._limited[1]

    def claim_alone(self) -> bool:
        """A worker holding nothing first looks for a solo job (one lost beside others when a
        worker died, domain.rescue) and runs it alone; at most once a second unless the last
        look found one (every time in burst mode, which must not exit while one waits).
        A claim right after an announcement defers the look (up to `ALONE_DEFER`) to the
        quiet moment that follows, so an announced job's start never waits for it."""
        opts = self.options
        now = self.clock.monotonic()
        announced, self._announced = self._announced, False
        every = self.ALONE_DEFER if announced else self.ALONE_EVERY
        if not opts.burst and now - self._alone_at < every:
            return False
        if not self.pipeline.empty():
            return False
        self._alone_at = now
        for queue_name in self.paused.active(opts.queues):
            sent = lease_clock()  # the claim is proven from here (worker/leases.py)
            job = self.storage.claim_alone(
                opts.worker_id, queue_name, opts.lease, names=self.names()
            )
            if job is not None:
                self._alone_at = -math.inf  # look again as soon as this one is done
                self.pipeline.add_claimed([job], alone=True, sent=sent)
                return True
        return False

    # A queue whose last claim found only limited jobs asks the limited claim first (the
    # unlimited claim's round trip off its path), but the unlimited claim still runs first one
    # claim in this many, so that unlimited jobs behind a busy limited queue are never starved.
    FREE_FIRST_EVERY = 8

    def _claim_queue(self, queue: str, want: int) -> int:
        """Claim up to `want` jobs of one queue: unlimited ones, then limited ones (or the
        other way round, see FREE_FIRST_EVERY); how many."""
        opts, pipeline = self.options, self.pipeline
        limited = self.limited()
        self._claims += 1
        limited_first = (
            limited and queue in self._limited_first and self._claims % self.FREE_FIRST_EVERY != 0
        )
        taken_free = taken_limited = 0
        if limited_first:
            taken_limited = self._claim_limited(queue, want)
        if taken_limited < want:
            sent = lease_clock()  # the claim is proven from here (worker/leases.py)
            jobs = self.storage.claim_jobs(
                opts.worker_id, queue, want - taken_limited, opts.lease, shared=True,
                names=self.names(),
            )  # fmt: skip
            if jobs:
                pipeline.add_claimed(jobs, sent=sent)
            taken_free = len(jobs)
            if not limited_first and limited and taken_free < want:
                taken_limited = self._claim_limited(queue, want - taken_free)
        if taken_free:
            self._limited_first.discard(queue)
        elif taken_limited:
            self._limited_first.add(queue)
        return taken_free + taken_limited

    def _claim_limited(self, queue: str, want: int) -> int:
        opts = self.options
        sent = lease_clock()
        held = self.storage.claim_limited(
            opts.worker_id, queue, want, opts.lease, shared=True, names=self.names()
        )
        self.report(queue, held)
        if held:
            self.pipeline.add_claimed(held, sent=sent)
        return len(held)

    def claim(self, free: int) -> tuple[int, bool]:
        """Claim up to `free` jobs; (how many, whether more may be ready right now)."""
        opts = self.options
        if self.claim_alone():
            return 1, False
        pipeline = self.pipeline
        batch = pipeline.batch()
        asked = min(free, batch)
        total = 0
        for queue_name in self.paused.active(opts.queues):
            want = min(free - total, batch)
            if want <= 0:
                pipeline.claimed(asked, total)
                return total, True  # no room left for this queue's jobs
            taken = self._claim_queue(queue_name, want)
            total += taken
            if taken >= want:
                pipeline.claimed(asked, total)
                return total, True
        pipeline.claimed(asked, total)
        return total, False
