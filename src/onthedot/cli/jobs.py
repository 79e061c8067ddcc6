"""`onthedot enqueue`, `onthedot jobs list|show|retry|cancel` and `onthedot queues`."""

from __future__ import annotations

import json
from datetime import timedelta

import click

from onthedot.cli.context import (
    Context,
    echo_json,
    handle_errors,
    parse_instant,
    parse_json_option,
    pass_ctx,
)
from onthedot.domain.durations import format_duration
from onthedot.domain.fields import printable
from onthedot.domain.jobs import JobFilter, JobState, iso
from onthedot.schedules.audit import default_actor


@click.command()
@click.argument("name")
@click.option("--args", "args_json", help="JSON array of positional arguments.")
@click.option("--kwargs", "kwargs_json", help="JSON object of keyword arguments.")
@click.option("--queue")
@click.option("--priority", type=int)
@click.option("--delay", help="Run after this long, e.g. 30s, 5m.")
@click.option("--run-at", help="Run at this ISO-8601 instant, e.g. 2026-01-31T09:00:00Z.")
@click.option("--unique-key")
@click.option("--max-attempts", type=click.IntRange(1, 1000), help="Attempts before it fails.")
@click.option("--timeout", help="Fail an attempt running longer than this, e.g. 30s.")
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
    run_at: str | None,
    unique_key: str | None,
    max_attempts: int | None,
    timeout: str | None,
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
        args,
        kwargs,
        queue=queue,
        priority=priority,
        delay=delay,
        run_at=parse_instant(run_at, "--run-at") if run_at else None,
        unique_key=unique_key,
        max_attempts=max_attempts,
        timeout=timeout,
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
    found = ctx.reader().list_jobs(flt)
    if as_json:
        echo_json([j.to_json() for j in found])
        return
    click.echo(f"{'ID':>8}  {'STATE':<10} {'QUEUE':<12} {'ATT':>5}  {'RUN AT':<20}  NAME")
    app = ctx.reader()
    for j in found:
        run_at = iso(j.run_at.replace(microsecond=0))  # UTC, said by its Z
        att = f"{j.attempts}/{j.max_attempts}"
        name = app.jobs.shown_name(j.name, j.args)
        click.echo(
            f"{j.id:>8}  {j.shown_state:<10} {printable(j.queue[:12]):<12} {att:>5}  "
            f"{run_at:<20}  {printable(name)}"
        )


# Fields of a running attempt (see Job.to_json): `jobs show` prints them only while it runs.
RUNNING_ONLY = ("began", "cancel_requested")


@jobs.command("show")
@click.argument("job_id", type=int)
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
def jobs_show(ctx: Context, job_id: int, as_json: bool) -> None:
    """One job in full."""
    job = ctx.reader().get_job(job_id)
    if job is None:
        raise click.ClickException(f"no job with id {job_id}")
    data = job.to_json()
    if as_json:
        echo_json(data)
        return
    data["state"] = job.shown_state  # `claimed` while it waits in its worker
    data["name"] = ctx.reader().jobs.shown_name(job.name, job.args)
    for key, value in data.items():
        if key in ("traceback", "errors") or (key in RUNNING_ONLY and value is None):
            continue  # a finished or queued job has no running attempt to describe
        click.echo(f"{key}: {_shown(key, value)}")
    for entry in job.errors or []:
        click.echo(
            f"error (attempt {entry.get('attempt', '?')}, {entry.get('at', '?')}): "
            f"{printable(str(entry.get('error', '')))}"
        )
    if data["traceback"]:  # its own lines kept, anything else escaped
        lines = str(data["traceback"]).split("\n")
        click.echo("traceback:\n" + "\n".join(printable(line) for line in lines))


def _shown(key: str, value: object) -> str:
    """A job field as a person reads it: JSON for arguments and results, `-` for nothing."""
    if value is None:
        return "-"
    if key == "timeout" and isinstance(value, int | float):
        return format_duration(timedelta(seconds=value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | dict) or key == "result":
        return json.dumps(value)
    return printable(str(value))


@jobs.command("explain")
@click.argument("job_id", type=int)
@pass_ctx
@handle_errors
def jobs_explain(ctx: Context, job_id: int) -> None:
    """What holds a queued job: not due, queue paused, no live worker, a limit full."""
    for line in ctx.reader().explain_job(job_id):
        click.echo(printable(line))


@jobs.command("retry")
@click.argument("job_id", type=int)
@pass_ctx
@handle_errors
def jobs_retry(ctx: Context, job_id: int) -> None:
    """Queue a failed or cancelled job again."""
    job = ctx.reader().retry_job(job_id)
    click.echo(f"job {job.id} is {job.state.value}")


@jobs.command("cancel")
@click.argument("job_id", type=int)
@pass_ctx
@handle_errors
def jobs_cancel(ctx: Context, job_id: int) -> None:
    """Cancel a queued job, or ask a running one to stop."""
    job = ctx.reader().cancel_job(job_id)
    if job.state is JobState.RUNNING:
        click.echo(f"job {job.id} is running: cancellation requested")
    else:
        click.echo(f"job {job.id} is {job.state.value}")


@click.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def queues(click_ctx: click.Context, as_json: bool) -> None:
    """Depth of each queue, per state; `queues pause|resume NAME` stops or restarts claiming."""
    if click_ctx.invoked_subcommand is None:
        _queue_table(click_ctx.find_object(Context), as_json)


@queues.command("pause")
@click.argument("name")
@click.option("--actor", default=default_actor, show_default="the OS user", help="Who.")
@pass_ctx
@handle_errors
def queues_pause(ctx: Context, name: str, actor: str) -> None:
    """Stop workers from claiming jobs of queue NAME (running jobs finish)."""
    ctx.reader().operations.set_queue_paused(name, True, actor)
    click.echo(
        f"paused queue {name}: no claim from now on takes its jobs until it is resumed "
        "(jobs already claimed still run)"
    )


@queues.command("resume")
@click.argument("name")
@click.option("--actor", default=default_actor, show_default="the OS user", help="Who.")
@pass_ctx
@handle_errors
def queues_resume(ctx: Context, name: str, actor: str) -> None:
    """Let workers claim jobs of queue NAME again."""
    ctx.reader().operations.set_queue_paused(name, False, actor)
    click.echo(f"resumed queue {name}")


@handle_errors
def _queue_table(ctx: Context | None, as_json: bool) -> None:
    assert ctx is not None
    stats = ctx.reader().queue_stats()
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
            f"{printable(s.queue[:16]):<16} {s.ready:>7} {s.queued:>7} {s.running:>7} "
            f"{s.succeeded:>9} {s.failed:>7} {s.cancelled:>9}{paused}"
        )
    for u in ctx.app().unserved_jobs():
        click.echo(f"warning: {printable(u.message())}")
