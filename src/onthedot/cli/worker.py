"""`onthedot worker`: run jobs (and the scheduler) until told to stop."""

from __future__ import annotations

import sys

import click

from onthedot.cli.context import Context, handle_errors, pass_ctx
from onthedot.cli.supervise import default_processes, report_to_supervisor, supervise


@click.command()
@click.option(
    "--queues",
    "-q",
    default="default",
    show_default=True,
    help="Comma-separated queues, claimed in this order.",
)
@click.option("--concurrency", "-c", default=4, show_default=True, type=click.IntRange(1, 1000))
@click.option("--burst", is_flag=True, help="Exit once no job is ready and none is running.")
@click.option("--no-scheduler", is_flag=True, help="Do not run the scheduler tick here.")
@click.option("--batch-size", type=click.IntRange(1, 10000), help="Most jobs claimed at once.")
@click.option("--prefetch", type=click.IntRange(0, 100000), help="Claimed jobs held locally.")
@click.option("--grace", default=30.0, show_default=True, help="Seconds to finish on SIGTERM.")
@click.option(
    "--processes",
    type=click.IntRange(1, 256),
    help="Worker processes under one supervisor [default: cores on PostgreSQL, 1 on SQLite].",
)
@pass_ctx
@handle_errors
def worker(
    ctx: Context,
    queues: str,
    concurrency: int,
    burst: bool,
    no_scheduler: bool,
    batch_size: int | None,
    prefetch: int | None,
    grace: float,
    processes: int | None,
) -> None:
    """Run jobs (and the scheduler) until SIGTERM/SIGINT."""
    app = ctx.app(required=True)
    report = app.schedules.check()
    if not report.ok:
        click.echo(report.render(), err=True)
        click.echo("worker not started: fix the schedules above (`onthedot check`)", err=True)
        sys.exit(1)
    if (processes or default_processes(app)) > 1:
        return supervise(ctx, processes or default_processes(app))
    w = app.worker(
        queues=[q for q in queues.split(",") if q.strip()],
        concurrency=concurrency,
        burst=burst,
        scheduler=not no_scheduler,
        batch_size=batch_size,
        prefetch=prefetch,
        grace=grace,
    )
    done = w.run()
    click.echo(f"worker {w.id} stopped ({w.stop_reason}); {done} job(s) finished", err=True)
    report_to_supervisor(w.stop_reason, done)
