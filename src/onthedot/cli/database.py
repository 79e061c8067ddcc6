"""`onthedot migrate` and `onthedot health`: the database's schema and whether it answers."""

from __future__ import annotations

import socket
import sys

import click

from onthedot.cli.context import Context, database_label, handle_errors, one_line, pass_ctx
from onthedot.domain.errors import DatabaseUnavailable, SchemaOutOfDate
from onthedot.domain.fields import printable
from onthedot.domain.serving import alive
from onthedot.domain.workers import WorkerRow


@click.command()
@pass_ctx
@handle_errors
def migrate(ctx: Context) -> None:
    """Create or upgrade the database schema (idempotent; safe to run concurrently)."""
    app = ctx.app()
    applied = app.migrate()
    current, _ = app.operations.schema_version()
    if applied:
        click.echo(
            f"applied migration(s) {', '.join(map(str, applied))}; schema at version {current}"
        )
    else:
        click.echo(f"schema already at version {current}; nothing to do")


@click.command()
@click.option(
    "--worker",
    "check_worker",
    is_flag=True,
    help="Also require a worker of this host with a fresh heartbeat (a container probe).",
)
@pass_ctx
def health(ctx: Context, check_worker: bool) -> None:
    """Exit 0 when the database answers and its schema is current; 1 otherwise."""
    try:
        app = ctx.reader()
        app.operations.ping(check_schema=False)
        current, latest = app.operations.schema_version()
    except click.ClickException as exc:  # no such SQLite file: never created by a check
        click.echo(f"unhealthy: {exc.message}", err=True)
        sys.exit(1)
    except (DatabaseUnavailable, SchemaOutOfDate) as exc:
        click.echo(f"unhealthy: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # malformed URL and friends: still one line
        click.echo(f"unhealthy: {one_line(exc)}", err=True)
        sys.exit(1)
    if current != latest:
        click.echo(
            f"unhealthy: {database_label(app)}: schema at version {current}, this onthedot "
            f"needs {latest}: "
            f"run `{app.commands.migrate}`",
            err=True,
        )
        sys.exit(1)
    if check_worker:
        problem = _worker_problem(app.lease, app.operations.workers(), socket.gethostname())
        if problem is not None:
            click.echo(f"unhealthy: {problem}", err=True)
            sys.exit(1)
    click.echo(f"healthy: {database_label(app)} ({app.database.backend}), schema version {current}")
    try:
        unserved = app.unserved_jobs()
    except Exception:  # a warning only: the database answered
        unserved = []
    for u in unserved:
        click.echo(f"warning: {printable(u.message())}")


def _worker_problem(lease: float, workers: list[WorkerRow], hostname: str) -> str | None:
    """Why no worker of `hostname` is alive (heartbeat within the lease), or None."""
    mine = [w for w in workers if w.hostname == hostname]
    if not mine:
        return f"no worker of host {hostname} is registered"
    if any(alive(w, lease) for w in mine):
        return None
    youngest = min(mine, key=lambda w: w.heartbeat_age)
    return (
        f"worker {youngest.id} of host {hostname}: last heartbeat "
        f"{youngest.heartbeat_age:.1f}s ago (lease {lease:g}s)"
    )
