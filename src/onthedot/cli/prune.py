"""`onthedot prune [--dry-run]`: delete the finished jobs past their retention now, or show
what would go (per job and final state), by the app's retention and its jobs' `keep=`."""

from __future__ import annotations

from datetime import UTC

import click

from onthedot.cli.context import Context, echo_json, handle_errors, pass_ctx
from onthedot.domain.fields import printable
from onthedot.domain.jobs import iso


@click.command()
@click.option("--dry-run", is_flag=True, help="Only count what would be deleted.")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
def prune(ctx: Context, dry_run: bool, as_json: bool) -> None:
    """Delete finished jobs past their retention (the workers do it every 5 minutes)."""
    app = ctx.reader_with_app()  # the retention and the jobs' keep= are the app's
    groups = app.prune(dry_run=dry_run)
    total = sum(g.count for g in groups)
    if as_json:
        rows = [
            {"job": g.name, "state": g.state, "finished_before": iso(g.before), "jobs": g.count}
            for g in groups
        ]
        echo_json({"dry_run": dry_run, "jobs": total, "groups": rows})
        return
    verb = "would delete" if dry_run else "deleted"
    if not groups:
        click.echo(f"{verb} nothing: no finished job is past its retention")
        return
    click.echo(f"{'JOB':<40} {'STATE':<10} {'FINISHED BEFORE':<21} {'JOBS':>9}")
    for g in groups:
        click.echo(
            f"{printable(g.name[:40]):<40} {g.state:<10} "
            f"{g.before.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}  {g.count:>9}"
        )
    click.echo(f"{verb} {total} job(s)")
