"""onthedot inside a Django project.

Add `"onthedot.contrib.django"` to `INSTALLED_APPS`. onthedot then uses Django's database
(`settings.ONTHEDOT["DATABASE"]`, default `"default"`), `manage.py migrate` creates its tables,
`manage.py onthedot <command>` runs the onthedot CLI, and
`TASKS = {"default": {"BACKEND": "onthedot.contrib.django.TaskBackend"}}` runs Django `@task`
functions on onthedot workers. See docs/django.md.

Nothing is imported from Django Tasks until `TaskBackend` is asked for, so the app works in a
project without `django-tasks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onthedot.contrib.django.runtime import get_app, schedule_task

if TYPE_CHECKING:
    from onthedot.contrib.django.backend import TaskBackend

__all__ = ["TaskBackend", "get_app", "schedule_task"]


def __getattr__(name: str) -> Any:
    if name == "TaskBackend":
        from onthedot.contrib.django.backend import TaskBackend

        return TaskBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
