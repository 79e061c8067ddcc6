"""A Django Tasks backend that runs `@task` functions on onthedot workers.

```python
TASKS = {"default": {"BACKEND": "onthedot.contrib.django.TaskBackend"}}
```

`OPTIONS`: `MAX_ATTEMPTS` (default 1: Django Tasks does not retry a task that raised; give more
to let onthedot retry it with backoff). `QUEUES` limits the queue names tasks may use, as in
every Django Tasks backend.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from onthedot.contrib.django.results import STATUS, task_result
from onthedot.contrib.django.runtime import TASK_JOB, get_app, task_job
from onthedot.contrib.django.settings import load_settings
from onthedot.contrib.django.tasks_api import (
    BaseTaskBackend,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    normalize_json,
    task_enqueued,
)
from onthedot.domain.jobs import JobState

T = TypeVar("T")


class TaskBackend(BaseTaskBackend):
    """Django Tasks on onthedot: each enqueue is one onthedot job of the `django.task` job."""

    supports_defer = True  # run_after becomes the job's run_at
    supports_async_task = True  # coroutine tasks are run to completion by the worker
    supports_get_result = True  # results are the job rows, readable from any process
    supports_priority = True  # higher runs first, as in onthedot
    runs_on_onthedot = True  # its QUEUES are served by onthedot's workers (serving.py)

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.max_attempts = int(self.options.get("MAX_ATTEMPTS", 1))

    def enqueue(self, task: Task[Any, T], args: Any, kwargs: Any) -> TaskResult[T]:
        """Insert the job. Inside `transaction.atomic()` on PostgreSQL (psycopg 3) it is
        inserted through Django's own connection, in the same transaction; on SQLite (or a
        separate onthedot database) it is inserted by `transaction.on_commit`, so `id` is ""
        until the transaction commits."""
        self.validate_task(task)
        app = get_app()
        args, kwargs = normalize_json(list(args)), normalize_json(dict(kwargs))
        job = task_job(app).build(
            [task.module_path, args, kwargs],
            queue=task.queue_name,
            priority=task.priority,
            run_at=task.run_after,
            max_attempts=self.max_attempts,
        )
        result: TaskResult[T] = TaskResult(
            task=task,
            id="",
            status=STATUS[JobState.QUEUED],
            enqueued_at=None,
            started_at=None,
            finished_at=None,
            last_attempted_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )

        def enqueued(job_id: int) -> None:
            object.__setattr__(result, "id", str(job_id))
            object.__setattr__(result, "enqueued_at", timezone.now())
            task_enqueued.send(type(self), task_result=result)

        conf = load_settings()
        django_conn = connections[conf.database]
        if not django_conn.in_atomic_block:
            enqueued(app.enqueue_jobs([job])[0])
            return result
        shared = _psycopg_connection(django_conn) if conf.shares_url_with_django else None
        if shared is not None:
            enqueued(app.enqueue_jobs([job], connection=shared)[0])
        else:
            transaction.on_commit(lambda: enqueued(app.enqueue_jobs([job])[0]), using=conf.database)
        return result

    def get_result(self, result_id: str) -> TaskResult[Any]:
        """The result of job `result_id` (TaskResultDoesNotExist if there is none, or it was
        pruned after the app's retention)."""
        try:
            job = get_app().get_job(int(result_id))
        except ValueError:
            job = None
        if job is None or job.name != TASK_JOB:
            raise TaskResultDoesNotExist(result_id)
        task = import_string(job.args[0])
        return task_result(job, task, self.alias)

    def check(self, **kwargs: Any) -> Iterable[checks.CheckMessage]:
        try:
            load_settings()
        except ImproperlyConfigured as exc:
            return [checks.Error(str(exc), id="onthedot.E001")]
        return []


def _psycopg_connection(django_conn: Any) -> Any:
    """Django's psycopg 3 connection, or None when its transaction cannot be shared (SQLite,
    or PostgreSQL through psycopg2)."""
    if django_conn.vendor != "postgresql":
        return None
    import psycopg

    django_conn.ensure_connection()
    raw = django_conn.connection
    return raw if isinstance(raw, psycopg.Connection) else None
