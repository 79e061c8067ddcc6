"""The executors: `concurrency` threads run sync jobs, one owned event loop runs async jobs;
each finished job's outcome goes to the completer. A sync job past its timeout is failed by the
keeper (`enforce_timeouts`) and its thread abandoned and replaced; asyncio times out async jobs
itself."""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Protocol, cast

import onthedot.worker.execute as execute
from onthedot.clock import REAL, Clock, SystemClock, lease_clock
from onthedot.context import JobContext
from onthedot.domain.errors import JobNotRegistered
from onthedot.domain.jobs import ClaimedJob, Outcome
from onthedot.observability.events import EventBus, JobStarted
from onthedot.observability.hooks import Instrumentation, split_headers
from onthedot.worker.deps import RunnableJob
from onthedot.worker.state import STOP, Flags, OutcomeQueue, Pipeline, Running, RunningJobs, Threads

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger("onthedot.worker")

# The async watchdog: an async job still running this long after its timeout did not let
# asyncio cancel it (its loop is blocked, or it swallows the cancellation): it is failed with
# JobTimeout by the keeper, as a sync job is; a loop that has not run its beat for
# LOOP_BLOCKED seconds is abandoned for a fresh one.
ASYNC_GRACE = 0.25
LOOP_BEAT = 0.05
LOOP_BLOCKED = 0.2


class JobWatch(Protocol):
    """Told when a job with a timeout starts and ends (a supervised child's channel: the
    supervisor's watchdog charges a JobTimeout to a job whose process stopped beating past its
    timeout, see `watchdog.py`)."""

    def job_started(
        self, job_id: int, seconds_left: float, attempt: int, max_attempts: int, queue: str,
        name: str,
    ) -> None: ...  # fmt: skip

    def job_ended(self, job_id: int) -> None: ...


async def _stop_when_idle(loop: asyncio.AbstractEventLoop) -> None:
    """On an abandoned loop: wait for its other jobs, then stop it (its thread exits)."""
    import asyncio

    me = asyncio.current_task()
    while any(task is not me for task in asyncio.all_tasks()):
        await REAL.asleep(0.1)
    loop.stop()


class Executors:
    """Runs the claimed jobs of `pipeline` and hands their outcomes to `outcomes`."""

    def __init__(
        self,
        *,
        worker_id: str,
        jobs: Mapping[str, RunnableJob],
        resolve: Callable[[str], RunnableJob],
        events: EventBus,
        pipeline: Pipeline,
        running: RunningJobs,
        outcomes: OutcomeQueue,
        flags: Flags,
        threads: Threads,
        instrumentation: Instrumentation | None = None,
        clock: Clock | None = None,
        watch: JobWatch | None = None,
    ) -> None:
        self.worker_id = worker_id
        self.watch = watch
        self.jobs = jobs
        self.resolve = resolve
        self.events = events
        self.pipeline = pipeline
        self.running = running
        self.outcomes = outcomes
        self.flags = flags
        self.threads = threads
        self.instrumentation = instrumentation or Instrumentation()
        self.clock = clock or SystemClock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_beat = 0.0  # monotonic: the last beat of the current loop
        self.loops = 0  # event loops started (each blocked one is replaced)

    # -- threads ----------------------------------------------------------------------------
    def start(self, concurrency: int) -> None:
        for i in range(concurrency):
            self.spawn(i)
        if any(jf.is_async for jf in self.jobs.values()):
            self.start_loop()

    def spawn(self, index: int) -> None:
        self.threads.start(self._execute_loop, f"onthedot-exec-{index}")

    def start_loop(self) -> None:
        import asyncio  # only with async jobs: a worker of sync jobs starts without it

        ready = threading.Event()

        def run_loop() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self.loop = loop
            self.loop_beat = REAL.monotonic()
            loop.call_soon(self._beat, loop)
            ready.set()
            loop.run_forever()
            loop.close()

        self.threads.start(run_loop, f"onthedot-async-{self.loops}")
        self.loops += 1
        ready.wait(5)

    def _beat(self, loop: asyncio.AbstractEventLoop) -> None:
        """Runs on the loop every `LOOP_BEAT` s: the watchdog's proof that it is not blocked."""
        if loop is self.loop:
            self.loop_beat = REAL.monotonic()
            loop.call_later(LOOP_BEAT, self._beat, loop)

    def _abandon_loop(self, now: float) -> None:
        """The loop is blocked (a job made a blocking call): new async jobs go to a fresh loop
        at once; the blocked one finishes what it holds once unblocked, then stops."""
        old = self.loop
        if old is None or now - self.loop_beat < LOOP_BLOCKED:
            return
        log.warning(
            "the async event loop has been blocked for %.1fs (an async job made a blocking "
            "call); async jobs now run on a new event loop",
            now - self.loop_beat,
        )
        self.loop = None
        self.start_loop()
        old.call_soon_threadsafe(lambda: old.create_task(_stop_when_idle(old)))
        for running in self.running.unstarted_async():
            self._submit(self.resolve(running.job.name), running.job, running)  # same `call`

    def stop_loop(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)

    def _execute_loop(self) -> None:
        take = self.pipeline.take
        stopping = self.flags.stopping
        while True:
            job = take(stopping)
            if job is STOP:
                return
            if self.run_one(job):
                return  # this thread overran a timeout and was replaced: retire

    # -- one job ----------------------------------------------------------------------------
    def _context(self, job: ClaimedJob) -> JobContext:
        cancel = self.running.cancel_requested
        job_id = job.id
        return JobContext(
            job_id=job.id,
            name=job.name,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            queue=job.queue,
            schedule_key=job.schedule_key,
            slot=job.slot,
            worker_id=self.worker_id,
            _cancelled=lambda: job_id in cancel,
            manual=job.manual,
        )

    def run_one(self, job: ClaimedJob) -> bool:
        """Run one job on this thread; True if the thread must retire (it overran a timeout)."""
        try:
            jf = self.resolve(job.name)
        except JobNotRegistered as exc:
            self.finish(job, execute.not_registered(job, exc), None)
            return False
        if job.unreadable is not None:
            self.finish(job, execute.unreadable(job, job.unreadable), None)
            return False
        job, headers = split_headers(job)
        if not self.pipeline.proven(job.id, lease_clock()):
            self.pipeline.set_aside(job.id)  # it may be another worker's by now: not run
            return False
        if self.events.wants(JobStarted):
            self.events.emit(self._started(job))
        fn = jf.fn
        if self.instrumentation.execute:
            fn = self.instrumentation.around_execute(job, headers, fn, jf.is_async)
        started = REAL.monotonic()
        running = Running(job, started, started + job.timeout if job.timeout else None)
        self.running.add(running)
        watch = self.watch if job.timeout else None
        if watch is not None:
            watch.job_started(
                job.id, job.timeout or 0.0, job.attempt, job.max_attempts, job.queue, job.name
            )
        if jf.is_async:
            self._run_async(jf, fn, job, running)
            return False
        outcome = execute.run_sync(fn, job, self._context(job), jf.backoff)
        if watch is not None:
            watch.job_ended(job.id)
        if self.running.remove(running):
            return True  # the keeper already failed the job and started a replacement thread
        self.finish(job, outcome, started)
        return False

    def _started(self, job: ClaimedJob) -> JobStarted:
        waited = None
        if job.run_at is not None:
            waited = max(0.0, (self.clock.now() - job.run_at).total_seconds())
        return JobStarted(
            job.id,
            job.name,
            job.attempt,
            self.worker_id,
            job.queue,
            job.schedule_key,
            job.slot,
            waited,
        )

    def _run_async(
        self, jf: RunnableJob, fn: Callable[..., object], job: ClaimedJob, running: Running
    ) -> None:
        if self.loop is None:
            self.start_loop()
        if running.deadline is not None:
            # asyncio enforces the timeout itself; the keeper's watchdog only if it could not
            running.deadline += ASYNC_GRACE
        running.call = cast(Callable[..., Awaitable[object]], fn)
        self._submit(jf, job, running)

    def _submit(self, jf: RunnableJob, job: ClaimedJob, running: Running) -> None:
        loop = self.loop
        assert loop is not None
        submission = running.submission

        async def guarded() -> Outcome | None:
            if not self.running.begin(running, submission):
                return None  # moved to a fresh loop while this one was blocked
            if not self.pipeline.proven(job.id, lease_clock()):
                # The loop started it late (blocked, or the process frozen) and the claim may
                # be another worker's by now: not run, given back by the keeper.
                self.pipeline.set_aside(job.id)
                return None
            call = running.call or cast(Callable[..., Awaitable[object]], jf.fn)
            return await execute.run_async(call, job, self._context(job), jf.backoff)

        import asyncio  # loaded already: an async job is running

        future = asyncio.run_coroutine_threadsafe(guarded(), loop)
        running.future = future

        def done(fut: Future[Outcome | None]) -> None:
            if fut is not running.future:
                return  # an older submission, moved before it began
            if self.watch is not None and job.timeout:
                self.watch.job_ended(job.id)
            if self.running.remove(running):
                return  # the watchdog already failed it: ignore what it did after
            try:
                outcome = fut.result()
            except BaseException as exc:  # cancelled from outside the coroutine
                outcome = (
                    execute.cancelled(job)
                    if fut.cancelled()
                    else execute.failure(job, exc, jf.backoff)
                )
            if outcome is not None:  # None: set aside unproven, never started
                self.finish(job, outcome, running.started)

        future.add_done_callback(done)

    def finish(self, job: ClaimedJob, outcome: Outcome, started: float | None) -> None:
        seconds = None if started is None else REAL.monotonic() - started
        self.outcomes.put((job, outcome, seconds))
        self.pipeline.finished(seconds)

    # -- timeouts (called by the keeper) ----------------------------------------------------
    def enforce_timeouts(self, now: float) -> None:
        for running in self.running.expire(now):
            job = running.job
            jf = self.jobs.get(job.name)
            if self.watch is not None:
                self.watch.job_ended(job.id)  # failed here: nothing left for the supervisor
            if running.future is not None:
                log.warning(
                    "async job %s (%s) ran past its timeout of %ss without yielding to its "
                    "event loop; it is failed and its result will be ignored",
                    job.id,
                    job.name,
                    job.timeout,
                )
                outcome = execute.timed_out(job, jf.backoff if jf else None)
                self.finish(job, outcome, running.started)
                self._abandon_loop(now)
                continue
            log.warning(
                "job %s (%s) ran past its timeout of %ss; its thread is abandoned and "
                "its result will be ignored",
                job.id,
                job.name,
                job.timeout,
            )
            self.finish(job, execute.timed_out(job, jf.backoff if jf else None), running.started)
            self.spawn(len(self.threads))
