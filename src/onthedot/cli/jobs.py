"""`onthedot enqueue`, `onthedot jobs list|show|retry|cancel` and `onthedot queues`."""

from __future__ import annotations

import click

from onthedot.cli.context import Context, echo_json, handle_errors, parse_json_option, pass_ctx
from onthedot.domain.jobs import JobFilter, JobState


@click.command()
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


@click.group()
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
            f"{j.id:>8}  {j.shown_state:<10} {j.queue[:12]:<12} {att:>5}  {run_at:<20}  {j.name}"
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
    data["state"] = job.shown_state  # `claimed` while it waits in its worker
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


@click.command()
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
    for u in ctx.app().unserved_jobs():
        click.echo(f"warning: {u.message()}")
