"""Run one claimed job and turn what happened into an Outcome (decide first, then persist)."""

from __future__ import annotations

import traceback as tb_module
from collections.abc import Awaitable, Callable
from typing import TypeVar

from onthedot.context import JobContext, reset_current, set_current
from onthedot.domain.errors import JobNotRegistered, JobTimeout
from onthedot.domain.jobs import ClaimedJob, Outcome, OutcomeKind
from onthedot.domain.nesting import NestingError
from onthedot.domain.payload import JsonValue, check_json, result_too_large
from onthedot.domain.retry import Backoff

_MAX_ERROR = 2000
_MAX_TRACEBACK = 20000
_DEFAULT_BACKOFF = Backoff()

T = TypeVar("T")


def _text(value: T, render: Callable[[T], object]) -> str:
    """`render(value)` (str or repr), or a note when a hostile __str__/__repr__ raises: turning
    a job's exception or result into text must never kill the executor thread."""
    try:
        return str(render(value))
    except BaseException:
        return f"<{render.__name__}() of {type(value).__name__} failed>"


def _storable(text: str) -> str:
    """Text every backend can store: NUL characters and lone surrogates escaped (an error
    message the database refused would stop the worker from persisting any outcome)."""
    if not text.isascii():
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace("\x00", "\\x00")


def _format_traceback(exc: BaseException) -> str:
    return "".join(tb_module.format_exception(exc))


def success(job: ClaimedJob, result: object) -> Outcome:
    """A job returned `result`. Never raises: whatever the result, the executor thread must
    live on to report it."""
    stored: JsonValue = None
    if result is not None:
        try:
            stored = check_json(result, "result")
            problem = result_too_large(stored)
        except NestingError:  # encoding it would recurse past Python's limit
            problem = f"ResultTooDeep: {NestingError('the result', verb='return')}"
        except BaseException:  # not JSON, or an object whose repr raises while checking
            # The work is done; a result we cannot store must not make it run again.
            stored = {"repr": _text(result, repr)[:_MAX_ERROR], "note": "result was not JSON"}
            problem = None
        if problem is not None:
            # Not retried: the same code would return the same result again.
            return Outcome(job.id, OutcomeKind.FAILED, error=problem, attempt=job.attempt)
    return Outcome(job.id, OutcomeKind.SUCCEEDED, result=stored, attempt=job.attempt)


def failure(
    job: ClaimedJob, exc: BaseException, backoff: Backoff | None, *, with_traceback: bool = True
) -> Outcome:
    """A failed attempt: RETRY with backoff while attempts remain, else FAILED."""
    error = _storable(f"{type(exc).__name__}: {_text(exc, str)}".strip())
    if len(error) > _MAX_ERROR:
        error = error[: _MAX_ERROR - 3] + "..."
    trace = None
    if with_traceback and exc.__traceback__ is not None:
        trace = _storable(_text(exc, _format_traceback)[-_MAX_TRACEBACK:])
    if job.attempt < job.max_attempts:
        delay = (backoff or _DEFAULT_BACKOFF).delay(job.attempt)
        return Outcome(
            job.id,
            OutcomeKind.RETRY,
            error=error,
            traceback=trace,
            retry_in=delay,
            attempt=job.attempt,
        )
    return Outcome(job.id, OutcomeKind.FAILED, error=error, traceback=trace, attempt=job.attempt)


def not_registered(job: ClaimedJob, exc: JobNotRegistered) -> Outcome:
    # Retried like a failure: during a rolling deploy a newer worker may know the job.
    return failure(job, exc, None, with_traceback=False)


def unreadable(job: ClaimedJob, why: str) -> Outcome:
    """A job whose stored arguments cannot be decoded (a row written by hand or by an older
    version): failed at once, without a retry (the row would not change)."""
    error = _storable(f"UnreadableArguments: job {job.id} ({job.name}) cannot run: {why}")
    return Outcome(job.id, OutcomeKind.FAILED, error=error[:_MAX_ERROR], attempt=job.attempt)


def timed_out(job: ClaimedJob, backoff: Backoff | None) -> Outcome:
    return failure(
        job,
        JobTimeout(f"job ran past its timeout of {job.timeout}s; its result will be ignored"),
        backoff,
        with_traceback=False,
    )


def cancelled(job: ClaimedJob) -> Outcome:
    return Outcome(job.id, OutcomeKind.CANCELLED, error="cancelled on request", attempt=job.attempt)


def run_sync(
    fn: Callable[..., object], job: ClaimedJob, ctx: JobContext, backoff: Backoff | None
) -> Outcome:
    token = set_current(ctx)
    try:
        result = fn(*job.args, **job.kwargs)
    except BaseException as exc:  # a job that raises SystemExit must not kill the worker
        return failure(job, exc, backoff)
    finally:
        reset_current(token)
    return success(job, result)


async def run_async(
    fn: Callable[..., Awaitable[object]], job: ClaimedJob, ctx: JobContext, backoff: Backoff | None
) -> Outcome:
    import asyncio  # only once an async job runs: a worker of sync jobs never imports it

    token = set_current(ctx)
    deadline = asyncio.timeout(job.timeout) if job.timeout else None
    try:
        if deadline is not None:
            async with deadline:
                result = await fn(*job.args, **job.kwargs)
        else:
            result = await fn(*job.args, **job.kwargs)
    except TimeoutError as exc:
        if deadline is not None and deadline.expired():
            return timed_out(job, backoff)
        return failure(job, exc, backoff)
    except asyncio.CancelledError:
        return cancelled(job)
    except BaseException as exc:
        return failure(job, exc, backoff)
    finally:
        reset_current(token)
    return success(job, result)
