"""`onthedot migrate` and `onthedot health`: the database's schema and whether it answers."""

from __future__ import annotations

import sys

import click

from onthedot.cli.context import Context, handle_errors, pass_ctx
from onthedot.domain.errors import DatabaseUnavailable, SchemaOutOfDate


@click.command()
@pass_ctx
@handle_errors
def migrate(ctx: Context) -> None:
    """Create or upgrade the database schema (idempotent; safe to run concurrently)."""
    app = ctx.app()
    applied = app.migrate()
    current, _ = app.raw_storage().schema_version()
    if applied:
        click.echo(
            f"applied migration(s) {', '.join(map(str, applied))}; schema at version {current}"
        )
    else:
        click.echo(f"schema already at version {current}; nothing to do")


@click.command()
@pass_ctx
def health(ctx: Context) -> None:
    """Exit 0 when the database answers and its schema is current; 1 otherwise."""
    try:
        app = ctx.app()
        storage = app.raw_storage()
        storage.ping()
        current, latest = storage.schema_version()
    except (DatabaseUnavailable, SchemaOutOfDate) as exc:
        click.echo(f"unhealthy: {exc}", err=True)
        sys.exit(1)
    except Exception as exc:  # malformed URL and friends: still one line
        click.echo(
            f"unhealthy: {str(exc).strip().splitlines()[0] if str(exc) else exc!r}", err=True
        )
        sys.exit(1)
    if current != latest:
        click.echo(
            f"unhealthy: schema at version {current}, this onthedot needs {latest}: "
            "run `onthedot migrate`",
            err=True,
        )
        sys.exit(1)
    click.echo(f"healthy: {app.database.display} ({storage.backend}), schema version {current}")
    try:
        unserved = app.unserved_jobs()
    except Exception:  # a warning only: the database answered
        unserved = []
    for u in unserved:
        click.echo(f"warning: {u.message()}")
