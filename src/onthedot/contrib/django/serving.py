"""What the Django task job tells workers and listings: the queues Django tasks are enqueued
on (the `QUEUES` of each onthedot backend in `settings.TASKS`), and the task a job runs."""

from __future__ import annotations

import re
from typing import Any

# A task's import path as listings show it: dotted identifiers, nothing else (the first
# argument of a job is data, and a listing prints it).
_PATH = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)+")


def task_queues() -> frozenset[str]:
    """Every queue an onthedot backend of `settings.TASKS` accepts (its `QUEUES`, by default
    `["default"]`): a worker started without `-q` serves them all."""
    from onthedot.contrib.django.tasks_api import task_backends

    found: set[str] = set()
    for backend in task_backends.all():
        if getattr(backend, "runs_on_onthedot", False):  # our TaskBackend (no import cycle)
            found |= {str(q) for q in backend.queues}
    return frozenset(found)


def task_label(args: list[Any]) -> str | None:
    """The import path of the task a `django.task` job runs (its first argument), or None when
    that argument is not one."""
    path = args[0] if args else None
    return path if isinstance(path, str) and _PATH.fullmatch(path) else None
