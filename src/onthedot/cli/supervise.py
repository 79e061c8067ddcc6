"""`onthedot worker` as a supervisor and its worker processes (see `worker/supervisor.py`).

Everything a restart cannot fix is checked here, once, before any child starts: the app and
its schedules, the options, the metrics endpoint, the schema, the credentials. The children
are forked from this loaded process where the platform allows (`worker/children.py`), so they
share its app, its options and its log format as they are; otherwise each is the same command
started again with `--processes 1`, the app and the database in its environment
($ONTHEDOT_APP, $ONTHEDOT_DATABASE_URL; never on its command line, which `ps` shows)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

from onthedot.app import App
from onthedot.cli.context import ENV_APP, Context, app_queues
from onthedot.cli.exit import leave_after_threads, threads_until
from onthedot.cli.metrics_options import metrics_token
from onthedot.cli.new_database import warn_of_new_database
from onthedot.cli.output import say
from onthedot.cli.worker_run import ENV_TREE_METRICS, WorkerOptions, queued_in, run_child
from onthedot.domain.errors import DatabaseRefused, DatabaseUnavailable
from onthedot.worker.channel import ENV_FD, ENV_INDEX, Channel
from onthedot.worker.cpus import available_cpus

if TYPE_CHECKING:  # the rest only once children start: an empty burst never needs it
    from onthedot.worker.children import Child
    from onthedot.worker.supervisor import Supervisor
    from onthedot.worker.watchdog import Overran

ENV_DATABASE = "ONTHEDOT_DATABASE_URL"


def default_processes(app: App) -> int:
    """One worker process per CPU this process may use (its affinity and its container's CPU
    limit, see `worker/cpus.py`) on PostgreSQL; one on SQLite (a single writer: more
    processes would only wait on its lock)."""
    if app.database.single_writer:
        return 1
    return available_cpus()


def _ready(app: App, queues: str | None) -> bool:
    """Whether a job of these (unpaused) queues is ready now."""
    return app.operations.ready_now(app_queues(app, queues))


def _preflight(app: App, options: WorkerOptions) -> int | None:
    """Check what no restart could fix (one line and a non-zero exit); the jobs queued (0 if
    unknown), or None when a burst has nothing to do."""
    try:
        app.check_schema()  # a schema behind is one error here, not one per child
        if options.burst and not _ready(app, options.queues):
            return None
        return queued_in(app, app_queues(app, options.queues))
    except DatabaseRefused:
        raise  # wrong credentials, no such database: the children would only retry
    except DatabaseUnavailable:
        return 0  # unreachable: each child waits for the database, as a single worker does


class Starter:
    """Starts child `index`: forked when possible, else as a new program."""

    def __init__(self, ctx: Context, app: App, options: WorkerOptions, backlog: int) -> None:
        self.ctx, self.app, self.options = ctx, app, options
        self.backlog = backlog  # each child's share of the queued jobs, at the first start
        self.started: set[int] = set()
        self.spawning: str | None = None  # why children are started as new programs

    def __call__(self, index: int, write_fd: int, close_fds: Sequence[int]) -> Child:
        from onthedot.worker.children import fork_child, fork_possible

        self.app.close()  # a connection (and its pool's threads) never crosses a fork
        why = fork_possible()
        if why is not None:
            if why != self.spawning:
                say(f"worker supervisor: children start as new interpreters ({why})")
                self.spawning = why
            return self._spawn(index, write_fd)

        backlog = None if index in self.started else self.backlog  # a restart reads it anew
        self.started.add(index)

        def child() -> int:
            os.environ[ENV_INDEX] = str(index)
            channel = Channel(write_fd, index)
            return run_child(self.ctx, self.app, self.options, channel, backlog)

        return fork_child(child, leave=leave_after_threads, close_fds=close_fds)

    def _spawn(self, index: int, write_fd: int) -> Child:
        from onthedot.worker.children import spawn_child

        root = click.get_current_context().find_root().params
        argv = [sys.executable, "-m", "onthedot"]
        argv += ["-v"] if root.get("verbose") else []
        argv += ["--log-format", str(root.get("log_format") or "text"), "worker"]
        env = dict(os.environ)
        env[ENV_APP] = self.ctx.app_path or env.get(ENV_APP, "")
        env[ENV_DATABASE] = self.app.database_url
        env[ENV_FD], env[ENV_INDEX] = str(write_fd), str(index)
        return spawn_child([*argv, *self.options.argv()], env, [write_fd])


def supervise(ctx: Context, app: App, options: WorkerOptions, processes: int) -> None:
    """Run `processes` children until they are done; exit with their status."""
    say(
        f"worker supervisor: {processes} process(es) on queue(s) "
        f"{', '.join(app_queues(app, options.queues))}, concurrency {options.concurrency} "
        f"each ({ctx.describe()})"
    )
    warn_of_new_database(ctx)
    queued = _preflight(app, options)
    if queued is None:
        say("worker supervisor: 0 process(es) stopped (burst: queues empty); no job ran")
        return  # nothing to start processes for (a burst child would exit at once)
    from onthedot.worker.supervisor import Supervisor  # not needed for an empty burst

    supervisor = Supervisor(
        Starter(ctx, app, options, queued // processes),
        processes,
        app.events.emit,
        app.lease,
        on_overrun=lambda worker_id, jobs: _charge(app, worker_id, jobs),
    )
    with _endpoint(app, supervisor, options):
        summary = supervisor.run()
    app.close()
    reasons = sorted(set(summary.reasons)) or ["no report"]
    restarts = f", {summary.restarts} restart(s)" if summary.restarts else ""
    ran = f"{summary.jobs} attempt(s) ran" if summary.jobs else "no job ran"  # all outcomes
    say(
        f"worker supervisor: {processes} process(es) stopped ({'; '.join(reasons)}){restarts}; "
        f"{ran}"
    )
    threads_until(time.monotonic() + options.grace)  # threads the app started here, if any
    if summary.failure:
        raise click.ClickException(summary.failure)
    if summary.code:
        sys.exit(summary.code)


@contextmanager
def _endpoint(app: App, supervisor: Supervisor, options: WorkerOptions) -> Iterator[None]:
    """`--metrics-port`: one endpoint for the whole tree, served by the supervisor's loop;
    every child counts its events into the folder it reads (`observability/tree.py`)."""
    port = options.metrics_port
    if port is None:
        yield
        return
    token = metrics_token(options.metrics_host, port)
    from onthedot.observability.tree import MultiprocessFolder, tree_endpoint

    folder = MultiprocessFolder()
    os.environ[ENV_TREE_METRICS] = "1"
    try:
        try:
            server = tree_endpoint(
                app, supervisor, folder, host=options.metrics_host, port=port, token=token
            )
        except OSError as exc:
            raise click.ClickException(f"--metrics-port {port}: {exc}") from None
        host = f"[{options.metrics_host}]" if ":" in options.metrics_host else options.metrics_host
        say(f"metrics of every worker process on http://{host}:{server.port}/metrics")
        supervisor.endpoint = server
        try:
            yield
        finally:
            server.stop()
    finally:
        folder.remove()


def _charge(app: App, worker_id: str, jobs: list[Overran]) -> None:
    """Jobs of a child killed past their timeout: a JobTimeout each, as the child would have
    written it (`worker/watchdog.py`)."""
    app.operations.charge_timeouts(worker_id, jobs)
