"""`onthedot worker`: run jobs (and the scheduler) until told to stop.

By default one supervisor and its worker processes (`--processes`, one per CPU the process may
use on PostgreSQL, one on SQLite; see `supervise.py`); `--processes 1` runs the worker in this
very process, without a supervisor."""

from __future__ import annotations

import logging
import sys

import click

from onthedot.cli.context import Context, handle_errors, pass_ctx
from onthedot.cli.exit import exit_fast_when_done
from onthedot.cli.metrics_options import metrics_token
from onthedot.cli.output import errors_as_lines, say
from onthedot.cli.worker_run import WorkerOptions, run_child, run_worker
from onthedot.worker.channel import Channel


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
    help="Serve /metrics, /healthz and /readyz of every worker process on this port (needs "
    "onthedot[prometheus]).",
)
@click.option(
    "--metrics-host",
    default="127.0.0.1",
    show_default=True,
    help="Address for --metrics-port; any but loopback needs $ONTHEDOT_WEB_METRICS_TOKEN.",
)
@click.option(
    "--processes",
    type=click.IntRange(1, 256),
    help="Worker processes under one supervisor [default: CPUs on PostgreSQL, 1 on SQLite]; "
    "1: this process alone, no supervisor.",
)
@pass_ctx
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
    options = WorkerOptions(
        queues,
        concurrency,
        burst,
        no_scheduler,
        batch_size,
        prefetch,
        grace,
        metrics_port,
        metrics_host,
        processes,
    )
    with errors_as_lines():
        _run(ctx, options)


@handle_errors
def _run(ctx: Context, options: WorkerOptions) -> None:
    app = ctx.app(required=True)
    ctx.with_folder()  # a SQLite folder that does not exist: one line, exit 1, never a wait
    report = app.schedules.check()
    if not report.ok:
        say(report.render(), level=logging.ERROR)
        say(
            f"worker not started: fix the schedules above (`{app.commands('check')}`)",
            level=logging.ERROR,
        )
        sys.exit(1)
    metrics_token(options.metrics_host, options.metrics_port)  # one line before anything runs
    channel = Channel.from_environment()
    if channel is not None:  # a supervised child started as a new program
        sys.exit(run_child(ctx, app, options, channel))
    if options.processes == 1:
        run_worker(ctx, app, options)
        return
    from onthedot.cli.supervise import default_processes, supervise

    supervise(ctx, app, options, options.processes or default_processes(app))
