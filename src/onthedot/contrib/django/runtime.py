"""The process's onthedot App in a Django project, and the job that runs Django `@task`
functions on onthedot workers.

The App is built once per process, on first use (never at import), and kept on the app config
(`django.apps.apps.get_app_config("onthedot")`), Django's own registry.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from onthedot.app import App
from onthedot.commandline import CommandLine
from onthedot.contrib.django.settings import OnthedotSettings, load_settings
from onthedot.domain.definitions import Declaration
from onthedot.domain.errors import ConfigurationError
from onthedot.jobs import JobFunction
from onthedot.loading import app_in

# The one onthedot job every Django task runs through: its arguments are the task's import
# path, its positional and its keyword arguments.
TASK_JOB = "django.task"

_lock = threading.Lock()


def get_app() -> App:
    """This process's onthedot App: `settings.ONTHEDOT["APP"]` (or a bare App) pointed at the
    Django database, with the Django task job registered on it."""
    config = apps.get_app_config("onthedot")
    app: App | None = getattr(config, "onthedot_app", None)
    if app is not None:
        return app
    with _lock:
        app = getattr(config, "onthedot_app", None)
        if app is None:
            conf = load_settings()
            if conf.app_path:
                app = _import_app(conf.app_path)
                app.use_database(conf.database_url)
            else:
                app = App(conf.database_url)
            task_job(app)
            app.commands = django_commands(conf)  # hints name manage.py, not `onthedot`
            config.onthedot_app = app
    return app


def django_commands(conf: OnthedotSettings) -> CommandLine:
    """onthedot's commands as typed in a Django project: `python manage.py onthedot ...`, and
    Django's own `migrate` (for onthedot's database alias), which migrates onthedot's schema."""
    migrate = "python manage.py migrate"
    if conf.shares_url_with_django and conf.database != "default":
        migrate += f" --database {conf.database}"
    return CommandLine(prefix="python manage.py onthedot", migrate_command=migrate)


def _import_app(path: str) -> App:
    """The App named by `module:attr` (a factory function there is called to build it)."""
    module, _, attr = path.partition(":")
    try:
        return app_in(importlib.import_module(module), attr or "app", path)
    except ConfigurationError as exc:
        raise ImproperlyConfigured(f"settings.ONTHEDOT['APP'] {exc}") from None


def task_job(app: App) -> JobFunction[Any, Any]:
    """The job that runs Django tasks, registered on `app` (once)."""
    if TASK_JOB in app.jobs:
        return app.jobs[TASK_JOB]
    from onthedot.contrib.django.serving import task_label, task_queues

    job = app.job(name=TASK_JOB, max_attempts=1)(run_task)
    job.extra_queues, job.label = task_queues(), task_label
    return job


def run_task(task_path: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run the Django task at `task_path` in a worker, with Django's database connections
    closed around it (as a request would), and return its JSON-normalized value."""
    from django.db import close_old_connections

    from onthedot.context import current_job
    from onthedot.contrib.django.results import task_result
    from onthedot.contrib.django.tasks_api import Task, TaskContext, normalize_json

    task = import_string(task_path)
    if not isinstance(task, Task):  # a job row names what runs: only a real @task may
        raise TypeError(f"{task_path!r} is not a Django task (a @task function): not run")
    close_old_connections()
    try:
        if task.takes_context:
            job = get_app().get_job(current_job().job_id)
            assert job is not None, "the running job's row is missing"
            value = task.call(TaskContext(task_result=task_result(job, task)), *args, **kwargs)
        else:
            value = task.call(*args, **kwargs)
        return normalize_json(value)
    finally:
        close_old_connections()


def schedule_task(
    app: App,
    key: str,
    spec: Any,
    task: Any,
    *,
    args: list[Any] | tuple[Any, ...] = (),
    kwargs: dict[str, Any] | None = None,
    **options: Any,
) -> Declaration:
    """Declare an onthedot schedule that runs a Django `@task` (the Task, or its import path
    as a string, so the module declaring schedules need not import Django models).
    `options` are those of `app.schedule` (`timezone`, `catchup`, `overlap`, `queue`, ...)."""
    if isinstance(task, str):
        path = task
    else:
        path = task.module_path
        options.setdefault("queue", task.queue_name)
        options.setdefault("priority", task.priority)
    return app.schedule(
        key, spec, task_job(app), args=[path, list(args), dict(kwargs or {})], **options
    )
