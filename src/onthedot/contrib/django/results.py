"""onthedot jobs seen as Django Tasks results: a `Job` row becomes a `TaskResult`."""

from __future__ import annotations

from typing import Any, cast

from onthedot.contrib.django.tasks_api import Task, TaskError, TaskResult, TaskResultStatus
from onthedot.domain.jobs import Job, JobState

# (Without Django's type stubs, mypy sees TextChoices members as tuples: hence the casts.)
STATUS: dict[JobState, TaskResultStatus] = {
    JobState.QUEUED: cast(TaskResultStatus, TaskResultStatus.READY),
    JobState.RUNNING: cast(TaskResultStatus, TaskResultStatus.RUNNING),
    JobState.SUCCEEDED: cast(TaskResultStatus, TaskResultStatus.SUCCESSFUL),
    JobState.FAILED: cast(TaskResultStatus, TaskResultStatus.FAILED),
    # Django Tasks has no cancelled status: a cancelled job will never run, so it failed.
    JobState.CANCELLED: cast(TaskResultStatus, TaskResultStatus.FAILED),
}


def task_result(job: Job, task: Task[Any, Any], backend: str = "default") -> TaskResult[Any]:
    """The TaskResult of `job` (a job of the Django task job, run as `task`)."""
    _, args, kwargs = cast(list[Any], job.args)  # [task path, args, kwargs], as enqueued
    result: TaskResult[Any] = TaskResult(
        task=task,
        id=str(job.id),
        status=STATUS[job.state],
        enqueued_at=job.created_at,
        started_at=job.started_at,
        finished_at=job.finished_at,
        last_attempted_at=job.started_at,
        args=args,
        kwargs=kwargs,
        backend=backend,
        errors=task_errors(job),
        worker_ids=worker_ids(job),
    )
    if job.state == JobState.SUCCEEDED:
        object.__setattr__(result, "_return_value", job.result)
    return result


def worker_ids(job: Job) -> list[str]:
    """One worker id per attempt made (so `TaskResult.attempts` is the job's attempts)."""
    ids = [str(e.get("worker_id") or "") for e in job.errors][: job.attempts]
    while len(ids) < job.attempts:
        ids.append(job.worker_id or "")
    return ids


def task_errors(job: Job) -> list[TaskError]:
    """One TaskError per failed attempt. onthedot keeps the traceback of the last attempt only;
    earlier ones carry their error line instead."""
    errors = []
    last = len(job.errors) - 1
    for i, entry in enumerate(job.errors):
        line = str(entry.get("error") or "")
        trace = job.traceback if i == last and job.traceback else line
        errors.append(TaskError(exception_class_path=exception_path(line, trace), traceback=trace))
    if job.state == JobState.CANCELLED and not errors:
        line = job.error or "cancelled"
        errors.append(TaskError(exception_class_path="builtins.Exception", traceback=line))
    return errors


def exception_path(error: str, trace: str) -> str:
    """The exception's import path: the traceback's last line names it in full
    (`myapp.errors.Boom: ...`, builtins unqualified); the error line has its bare name."""
    name = error.partition(":")[0].strip()
    last = trace.strip().splitlines()[-1] if trace.strip() else ""
    qualified = last.partition(":")[0].strip()
    if qualified and (qualified == name or qualified.endswith("." + name)):
        name = qualified
    if not name or " " in name:
        return "builtins.Exception"
    return name if "." in name else f"builtins.{name}"
