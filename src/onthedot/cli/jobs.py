"""Commands about the database, workers, jobs and queues."""

from __future__ import annotations

import sys

import click

from onthedot.cli.main import Context, cli, echo_json, handle_errors, parse_json_option
from onthedot.domain.errors import DatabaseUnavailable, SchemaOutOfDate
from onthedot.domain.jobs import JobFilter, JobState

pass_ctx = click.make_pass_decorator(Context)


@cli.command()
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


@cli.command()
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
) -> None:
    """Run jobs (and the scheduler) until SIGTERM/SIGINT."""
    app = ctx.app(required=True)
    report = app.schedules.check()
    if not report.ok:
        click.echo(report.render(), err=True)
        click.echo("worker not started: fix the schedules above (`onthedot check`)", err=True)
        sys.exit(1)
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


@cli.command()
@click.argument("name")
@click.option("--args", "args_json", help="JSON array of positional arguments.")
@click.option("--kwargs", "kwargs_json", help="JSON object of keyword arguments.")
@click.option("--queue")
@click.option("--priority", type=int)
@click.option("--delay", help="Run after this long, e.g. 30s, 5m.")
@click.option("--unique-key")
@pass_ctx
@handle_errors
def enqueue(
    ctx: Context,
    name: str,
    args_json: str | None,
    kwargs_json: str | None,
    queue: str | None,
    priority: int | None,
    delay: str | None,
    unique_key: str | None,
) -> None:
    """Enqueue a registered job by NAME; prints the job id."""
    args = parse_json_option(args_json, "--args")
    kwargs = parse_json_option(kwargs_json, "--kwargs")
    if args is None:
        args = []
    if not isinstance(args, list):
        raise click.BadParameter("--args must be a JSON array, e.g. '[1, \"a\"]'")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise click.BadParameter("--kwargs must be a JSON object, e.g. '{\"x\": 1}'")
    app = ctx.app(required=True)
    jf = app.resolve(name)
    job_id = jf.enqueue_with(
        args, kwargs, queue=queue, priority=priority, delay=delay, unique_key=unique_key
    )
    click.echo(job_id)


@cli.group()
def jobs() -> None:
    """List, show, retry and cancel jobs."""


def _state(value: str | None) -> JobState | None:
    if value is None:
        return None
    try:
        return JobState(value)
    except ValueError:
        raise click.BadParameter(
            f"unknown state {value!r}: use one of {', '.join(s.value for s in JobState)}"
        ) from None


@jobs.command("list")
@click.option("--state")
@click.option("--queue")
@click.option("--name")
@click.option("--schedule", "schedule_key", help="Only jobs of this schedule key.")
@click.option("--search", help="Substring of arguments or error.")
@click.option("--before-id", type=int, help="Page: only ids below this one.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 10000))
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
def jobs_list(
    ctx: Context,
    state: str | None,
    queue: str | None,
    name: str | None,
    schedule_key: str | None,
    search: str | None,
    before_id: int | None,
    limit: int,
    as_json: bool,
) -> None:
    """Jobs, newest first."""
    flt = JobFilter(
        state=_state(state),
        queue=queue,
        name=name,
        schedule_key=schedule_key,
        search=search,
        before_id=before_id,
        limit=limit,
    )
    found = ctx.app().list_jobs(flt)
    if as_json:
        echo_json([j.to_json() for j in found])
        return
    click.echo(f"{'ID':>8}  {'STATE':<10} {'QUEUE':<12} {'ATT':>5}  {'RUN AT':<20}  NAME")
    for j in found:
        run_at = j.run_at.strftime("%Y-%m-%d %H:%M:%S")
        att = f"{j.attempts}/{j.max_attempts}"
        click.echo(
            f"{j.id:>8}  {j.state.value:<10} {j.queue[:12]:<12} {att:>5}  {run_at:<20}  {j.name}"
        )


@jobs.command("show")
@click.argument("job_id", type=int)
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
def jobs_show(ctx: Context, job_id: int, as_json: bool) -> None:
    """One job in full."""
    job = ctx.app().get_job(job_id)
    if job is None:
        raise click.ClickException(f"no job with id {job_id}")
    data = job.to_json()
    if as_json:
        echo_json(data)
        return
    for key, value in data.items():
        if key == "traceback" and value:
            click.echo("traceback:\n" + str(value))
        elif key != "traceback":
            click.echo(f"{key}: {value}")


@jobs.command("retry")
@click.argument("job_id", type=int)
@pass_ctx
@handle_errors
def jobs_retry(ctx: Context, job_id: int) -> None:
    """Queue a failed or cancelled job again."""
    job = ctx.app().retry_job(job_id)
    click.echo(f"job {job.id} is {job.state.value}")


@jobs.command("cancel")
@click.argument("job_id", type=int)
@pass_ctx
@handle_errors
def jobs_cancel(ctx: Context, job_id: int) -> None:
    """Cancel a queued job, or ask a running one to stop."""
    job = ctx.app().cancel_job(job_id)
    if job.state is JobState.RUNNING:
        click.echo(f"job {job.id} is running: cancellation requested")
    else:
        click.echo(f"job {job.id} is {job.state.value}")


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
def queues(ctx: Context, as_json: bool) -> None:
    """Depth of each queue, per state."""
    stats = ctx.app().queue_stats()
    if as_json:
        echo_json([s.to_json() for s in stats])
        return
    click.echo(
        f"{'QUEUE':<16} {'READY':>7} {'QUEUED':>7} {'RUNNING':>7} {'SUCCEEDED':>9} "
        f"{'FAILED':>7} {'CANCELLED':>9}"
    )
    for s in stats:
        paused = " (paused)" if s.paused else ""
        click.echo(
            f"{s.queue[:16]:<16} {s.ready:>7} {s.queued:>7} {s.running:>7} "
            f"{s.succeeded:>9} {s.failed:>7} {s.cancelled:>9}{paused}"
        )


@cli.command()
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
