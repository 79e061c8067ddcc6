"""`onthedot worker --processes N`: the child command and the supervisor run (see
`worker/supervisor.py`). The children get the app and the database through the environment
($ONTHEDOT_APP, $ONTHEDOT_DATABASE_URL), never on their command line (`ps` shows it)."""

from __future__ import annotations

import os
import sys

import click

from onthedot.app import App
from onthedot.cli.context import ENV_APP, Context, app_queues
from onthedot.cli.new_database import warn_of_new_database
from onthedot.domain.errors import DatabaseUnavailable

ENV_DATABASE = "ONTHEDOT_DATABASE_URL"


def default_processes(app: App) -> int:
    """One worker process per core on PostgreSQL; one on SQLite (a single writer: more
    processes would only wait on its lock)."""
    if app.database.single_writer:
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def child_command(click_ctx: click.Context) -> list[str]:
    """This `onthedot worker` command as run by one child: the same options, one process."""
    root = click_ctx.find_root()
    argv = [sys.executable, "-m", "onthedot"]
    if root.params.get("verbose"):
        argv.append("-v")
    argv.append("worker")
    for name, value in click_ctx.params.items():
        if name == "processes" or value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return [*argv, "--processes", "1"]


def report_to_supervisor(reason: str, jobs: int) -> None:
    """In a child: report to the supervisor (nothing to import for a worker run alone)."""
    if "ONTHEDOT_SUPERVISOR_FD" in os.environ:
        from onthedot.worker.supervisor import report_to_supervisor

        report_to_supervisor(reason, jobs)


def _ready(app: App, queues: str | None) -> bool:
    """Whether a job of these (unpaused) queues is ready now."""
    storage = app.storage
    paused = storage.paused_queues()
    names = [q for q in app_queues(app, queues) if q not in paused]
    if not names:
        return False
    ready_in = storage.seconds_until_ready(names)
    return ready_in is not None and ready_in <= 0


def supervise(ctx: Context, processes: int) -> None:
    """Run `processes` children of this command until they are done; exit with their status."""
    app = ctx.app(required=True)
    click_ctx = click.get_current_context()
    params = click_ctx.params
    click.echo(
        f"worker supervisor: {processes} process(es) on queue(s) "
        f"{', '.join(app_queues(app, params['queues']))}, concurrency {params['concurrency']} "
        f"each ({ctx.describe()})",
        err=True,
    )
    warn_of_new_database(ctx)
    try:
        app.check_schema()  # a schema behind is one error here, not one per child
        if click_ctx.params.get("burst") and not _ready(app, click_ctx.params["queues"]):
            click.echo(
                "worker supervisor: 0 process(es) stopped (burst: queues empty); no job ran",
                err=True,
            )
            return  # nothing to start processes for (a burst child would exit at once)
    except DatabaseUnavailable:
        pass  # each child waits for the database, as a single worker does
    from onthedot.worker.supervisor import Supervisor  # not needed for an empty burst

    env = dict(os.environ)
    env[ENV_APP] = ctx.app_path or env.get(ENV_APP, "")
    env[ENV_DATABASE] = app.database_url
    app.close()  # the children open their own connections
    command = child_command(click_ctx)
    summary = Supervisor(command, processes, app.events.emit, env=env).run()
    reasons = sorted(set(summary.reasons)) or ["no report"]
    restarts = f", {summary.restarts} restart(s)" if summary.restarts else ""
    ran = f"{summary.jobs} attempt(s) ran" if summary.jobs else "no job ran"  # all outcomes
    click.echo(
        f"worker supervisor: {processes} process(es) stopped ({'; '.join(reasons)}){restarts}; "
        f"{ran}",
        err=True,
    )
    if summary.code:
        sys.exit(summary.code)
