"""`onthedot worker`: run jobs (and the scheduler) until told to stop."""

from __future__ import annotations

import os
import sys

import click

from onthedot.cli.context import Context, app_queues, handle_errors, pass_ctx
from onthedot.cli.exit import exit_fast_when_done
from onthedot.cli.leftovers import burst_reason
from onthedot.cli.new_database import warn_of_new_database
from onthedot.cli.supervise import default_processes, report_to_supervisor, supervise


@click.command()
@click.option(
    "--queues",
    "-q",
    help="Comma-separated queues, claimed in this order (default: every queue of the app).",
)
@click.option("--concurrency", "-c", default=4, show_default=True, type=click.IntRange(1, 1000))
@click.option("--burst", is_flag=True, help="Exit once no job is ready and none is running.")
@click.option("--no-scheduler", is_flag=True, help="Do not run the scheduler tick here.")
@click.option("--batch-size", type=click.IntRange(1, 10000), help="Most jobs claimed at once.")
@click.option("--prefetch", type=click.IntRange(0, 100000), help="Claimed jobs held locally.")
@click.option("--grace", default=30.0, show_default=True, help="Seconds to finish on SIGTERM.")
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    help="Serve /metrics, /healthz and /readyz on this port (needs onthedot[prometheus]); "
    "under a supervisor, process i serves PORT + i.",
)
@click.option(
    "--metrics-host", default="127.0.0.1", show_default=True, help="Address for --metrics-port."
)
@click.option(
    "--processes",
    type=click.IntRange(1, 256),
    help="Worker processes under one supervisor [default: cores on PostgreSQL, 1 on SQLite].",
)
@pass_ctx
@handle_errors
def worker(
    ctx: Context,
    queues: str | None,
    concurrency: int,
    burst: bool,
    no_scheduler: bool,
    batch_size: int | None,
    prefetch: int | None,
    grace: float,
    metrics_port: int | None,
    metrics_host: str,
    processes: int | None,
) -> None:
    """Run jobs (and the scheduler) until SIGTERM/SIGINT."""
    exit_fast_when_done()  # cli/exit.py: no interpreter teardown once the worker returned
    app = ctx.app(required=True)
    ctx.with_folder()  # a SQLite folder that does not exist: one line, exit 1, never a wait
    report = app.schedules.check()
    if not report.ok:
        click.echo(report.render(), err=True)
        click.echo(
            f"worker not started: fix the schedules above (`{app.commands('check')}`)", err=True
        )
        sys.exit(1)
    if (processes or default_processes(app)) > 1:
        return supervise(ctx, processes or default_processes(app))
    names = app_queues(app, queues)
    w = app.worker(
        queues=names,
        concurrency=concurrency,
        burst=burst,
        scheduler=not no_scheduler,
        batch_size=batch_size,
        prefetch=prefetch,
        grace=grace,
    )
    click.echo(
        f"worker {w.id} on queue(s) {', '.join(names)}, concurrency {concurrency}"
        f"{'' if no_scheduler or burst else ', with the scheduler'} ({ctx.describe()})",
        err=True,
    )
    warn_of_new_database(ctx)
    server = None
    if metrics_port is not None:
        try:
            from onthedot.observability.serve import serve_worker
        except ImportError:
            raise click.ClickException(
                "--metrics-port needs prometheus_client: pip install 'onthedot[prometheus]'"
            ) from None
        token = os.environ.get("ONTHEDOT_WEB_METRICS_TOKEN") or None
        if metrics_port:  # under a supervisor, process i serves PORT + i (0: any free port)
            metrics_port += int(os.environ.get("ONTHEDOT_WORKER_INDEX", "0"))
        try:
            server = serve_worker(app, w.id, host=metrics_host, port=metrics_port, token=token)
        except OSError as exc:
            raise click.ClickException(f"--metrics-port {metrics_port}: {exc}") from None
        click.echo(f"metrics on http://{metrics_host}:{server.port}/metrics", err=True)
    try:
        done = w.run()
    finally:
        if server is not None:
            server.stop()
    reason = burst_reason(app, names, w.stop_reason)  # names ready jobs it does not know
    if w.forced:
        reason += f"; forced: {w.left_running} job(s) cut short, rescued after their lease"
    click.echo(f"worker {w.id} stopped ({reason}); {w.tally.describe()}", err=True)
    report_to_supervisor(reason, done)
    if w.forced:
        sys.exit(1)  # work was cut short: a supervisor or a shell should see it
