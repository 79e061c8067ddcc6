"""The executors: `concurrency` threads run sync jobs, one owned event loop runs async jobs;
each finished job's outcome goes to the completer. A sync job past its timeout is failed by the
keeper (`enforce_timeouts`) and its thread abandoned and replaced; asyncio times out async jobs
itself."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING

import onthedot.worker.execute as execute
from onthedot.context import JobContext
from onthedot.domain.errors import JobNotRegistered
from onthedot.domain.jobs import ClaimedJob, Outcome
from onthedot.observability.events import EventBus, JobStarted
from onthedot.worker.deps import RunnableJob
from onthedot.worker.state import STOP, Flags, OutcomeQueue, Pipeline, Running, RunningJobs, Threads

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger("onthedot.worker")


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
    ) -> None:
        self.worker_id = worker_id
        self.jobs = jobs
        self.resolve = resolve
        self.events = events
        self.pipeline = pipeline
        self.running = running
        self.outcomes = outcomes
        self.flags = flags
        self.threads = threads
        self.loop: asyncio.AbstractEventLoop | None = None

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
            ready.set()
            loop.run_forever()
            loop.close()

        self.threads.start(run_loop, "onthedot-async")
        ready.wait(5)

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
        )

    def run_one(self, job: ClaimedJob) -> bool:
        """Run one job on this thread; True if the thread must retire (it overran a timeout)."""
        try:
            jf = self.resolve(job.name)
        except JobNotRegistered as exc:
            self.finish(job, execute.not_registered(job, exc), None)
            return False
        if self.events.wants(JobStarted):
            self.events.emit(JobStarted(job.id, job.name, job.attempt, self.worker_id))
        started = time.monotonic()
        running = Running(job, started, started + job.timeout if job.timeout else None)
        self.running.add(running)
        if jf.is_async:
            self._run_async(jf, job, running)
            return False
        outcome = execute.run_sync(jf.fn, job, self._context(job), jf.backoff)
        if self.running.remove(running):
            return True  # the keeper already failed the job and started a replacement thread
        self.finish(job, outcome, started)
        return False

    def _run_async(self, jf: RunnableJob, job: ClaimedJob, running: Running) -> None:
        if self.loop is None:
            self.start_loop()
        assert self.loop is not None
        import asyncio

        coro = execute.run_async(jf.fn, job, self._context(job), jf.backoff)
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        running.future = future
        running.deadline = None  # asyncio enforces the timeout itself

        def done(fut: Future[Outcome]) -> None:
            self.running.discard(job.id)
            try:
                outcome = fut.result()
            except BaseException as exc:  # cancelled from outside the coroutine
                outcome = (
                    execute.cancelled(job)
                    if fut.cancelled()
                    else execute.failure(job, exc, jf.backoff)
                )
            self.finish(job, outcome, running.started)

        future.add_done_callback(done)

    def finish(self, job: ClaimedJob, outcome: Outcome, started: float | None) -> None:
        seconds = None if started is None else time.monotonic() - started
        self.outcomes.put((job, outcome, seconds))
        self.pipeline.finished(seconds)

    # -- timeouts (called by the keeper) ----------------------------------------------------
    def enforce_timeouts(self, now: float) -> None:
        for running in self.running.expire(now):
            job = running.job
            jf = self.jobs.get(job.name)
            log.warning(
                "job %s (%s) ran past its timeout of %ss; its thread is abandoned and "
                "its result will be ignored",
                job.id,
                job.name,
                job.timeout,
            )
            self.finish(job, execute.timed_out(job, jf.backoff if jf else None), running.started)
            self.spawn(len(self.threads))
