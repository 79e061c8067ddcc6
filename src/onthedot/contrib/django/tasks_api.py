"""Django's Tasks framework, wherever it comes from: `django.tasks` on Django 6 and later, else
the `django-tasks` backport (the same API, for Django 4.2-5.2).

Type checkers read the backport's annotations; at run time Django's own module wins when it
exists, because that is the one Django reads the `TASKS` setting with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django_tasks import task_backends
    from django_tasks.backends.base import BaseTaskBackend
    from django_tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
    from django_tasks.exceptions import TaskResultDoesNotExist
    from django_tasks.signals import task_enqueued
    from django_tasks.utils import normalize_json
else:
    try:
        from django.tasks import task_backends
        from django.tasks.backends.base import BaseTaskBackend
        from django.tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
        from django.tasks.exceptions import TaskResultDoesNotExist
        from django.tasks.signals import task_enqueued
        from django.utils.json import normalize_json

        SOURCE = "django.tasks"
    except ImportError:
        from django_tasks import task_backends
        from django_tasks.backends.base import BaseTaskBackend
        from django_tasks.base import Task, TaskContext, TaskError, TaskResult, TaskResultStatus
        from django_tasks.exceptions import TaskResultDoesNotExist
        from django_tasks.signals import task_enqueued
        from django_tasks.utils import normalize_json

        SOURCE = "django_tasks"

__all__ = [
    "BaseTaskBackend",
    "Task",
    "TaskContext",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
    "normalize_json",
    "task_backends",
    "task_enqueued",
]
