"""The operator controls of `onthedot schedules`: create, update and delete runtime
schedules; pause, resume, skip, unskip, trigger, backfill and reset any schedule; the audit log
of these actions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from onthedot.cli.context import (
    Context,
    echo_json,
    handle_errors,
    parse_instant,
    parse_json_option,
    pass_ctx,
)
from onthedot.domain.durations import parse_duration
from onthedot.domain.fields import printable
from onthedot.domain.jobs import iso
from onthedot.schedules.audit import default_actor
from onthedot.schedules.views import ScheduleView

F = TypeVar("F", bound=Callable[..., None])


def note_and_actor(fn: F) -> F:
    fn = click.option("--note", help="Why (kept in the audit log).")(fn)
    return click.option(
        "--actor",
        default=default_actor,
        show_default="the OS user",
        help="Who (kept in the audit log).",
    )(fn)


def policy_options(fn: F) -> F:
    for name, help_text in (
        ("--timezone", "IANA time zone, e.g. Europe/Paris."),
        ("--catchup", "latest | all | none."),
        ("--catchup-window", "How far back missed slots still run, e.g. 1d."),
        ("--overlap", "allow | skip | serialize."),
        ("--jitter", "Random delay below the period, e.g. 30s."),
        ("--queue", "Queue of the jobs."),
        ("--grace", "How late its job may start before it is late, e.g. 10m."),
        ("--max-runtime", "How long a run may last: 30m, or auto (off: none)."),
        ("--deadline", "Succeeded by: 06:00 in its zone, or 4h after the slot (off: none)."),
        ("--ping", "healthchecks.io-style URL called at start/success/fail (off: none)."),
    ):
        fn = click.option(name, help=help_text)(fn)
    return click.option("--priority", type=int, help="Priority of the jobs.")(fn)


def _next(view: ScheduleView) -> str:
    """`next slot 2026-01-31T09:00:00Z`, or that there is none."""
    nexts = view.get("next")
    return f"next slot {nexts[0]}" if isinstance(nexts, list) and nexts else "no next slot"


def _policies(**options: object) -> dict[str, object]:
    """The options given (click passes None for the others); an expectation given as "off"
    is turned off (None)."""
    return {
        k: None if k in _EXPECTATIONS and str(v).lower() == "off" else v
        for k, v in options.items()
        if v is not None
    }


_EXPECTATIONS = ("grace", "max_runtime", "deadline", "ping")


@click.command("create")
@click.argument("key")
@click.argument("spec")
@click.argument("job_name")
@click.option("--args", "args_json", help="JSON array of positional arguments.")
@click.option("--kwargs", "kwargs_json", help="JSON object of keyword arguments.")
@policy_options
@note_and_actor
@pass_ctx
@handle_errors
def create(
    ctx: Context,
    /,
    key: str,
    spec: str,
    job_name: str,
    args_json: str | None,
    kwargs_json: str | None,
    actor: str,
    note: str | None,
    **options: str | int | None,
) -> None:
    """Create a runtime schedule KEY firing JOB_NAME on SPEC."""
    view = ctx.app(required=True).schedules.create(
        key,
        spec,
        job_name,
        args=parse_json_option(args_json, "--args"),
        kwargs=parse_json_option(kwargs_json, "--kwargs"),
        actor=actor,
        **_policies(**options),
    )
    click.echo(f"created {key}: {view['spec']} ({view['description']}); {_next(view)}")


@click.command("update")
@click.argument("key")
@click.option("--spec")
@click.option("--job", "job_name")
@click.option("--args", "args_json", help="JSON array of positional arguments.")
@click.option("--kwargs", "kwargs_json", help="JSON object of keyword arguments.")
@policy_options
@note_and_actor
@pass_ctx
@handle_errors
def update(
    ctx: Context,
    /,
    key: str,
    spec: str | None,
    job_name: str | None,
    args_json: str | None,
    kwargs_json: str | None,
    actor: str,
    note: str | None,
    **options: str | int | None,
) -> None:
    """Change a runtime schedule (a timing change restarts it now: no phantom run)."""
    changes = _policies(
        spec=spec,
        job=job_name,
        args=parse_json_option(args_json, "--args"),
        kwargs=parse_json_option(kwargs_json, "--kwargs"),
        **options,
    )
    if not changes:
        raise click.UsageError("nothing to update: give --spec, --job, --args or a policy")
    view = ctx.app(required=True).schedules.update(key, actor=actor, **changes)
    click.echo(f"updated {key}: {view['spec']}; {_next(view)}")


@click.command("delete")
@click.argument("key")
@click.option("--keep-jobs", is_flag=True, help="Do not cancel its queued jobs.")
@note_and_actor
@pass_ctx
@handle_errors
def delete(ctx: Context, key: str, keep_jobs: bool, actor: str, note: str | None) -> None:
    """Delete a runtime schedule now; its queued jobs are cancelled unless --keep-jobs."""
    n = ctx.app(required=True).schedules.delete(key, keep_jobs=keep_jobs, actor=actor)
    click.echo(f"deleted {key}; cancelled {n} queued job(s)")


@click.command("pause")
@click.argument("key")
@click.option("--until", help="ISO-8601 instant, or a duration from now like 2h.")
@note_and_actor
@pass_ctx
@handle_errors
def pause(ctx: Context, key: str, until: str | None, actor: str, note: str | None) -> None:
    """Pause KEY (slots in the pause are counted as missed)."""
    app = ctx.app(required=True)
    when = None
    if until:
        if until[:1].isdigit() and "-" not in until:
            try:
                length = parse_duration(until)
            except ValueError:
                raise click.BadParameter(_UNTIL_HINT.format(until), param_hint="--until") from None
            when = app.operations.now() + length
        else:
            try:
                when = parse_instant(until, "--until")
            except click.BadParameter:
                raise click.BadParameter(_UNTIL_HINT.format(until), param_hint="--until") from None
    view = app.schedules.pause(key, until=when, note=note, actor=actor)
    click.echo(f"paused {key}" + (f" until {view['paused_until']}" if when else ""))


_UNTIL_HINT = (
    "{!r} is neither a duration from now like 2h or 30m nor an ISO-8601 instant like "
    "2026-01-31T09:00:00Z"
)


@click.command("resume")
@click.argument("key")
@click.option("--catchup", is_flag=True, help="Let the catch-up policy handle the pause's slots.")
@note_and_actor
@pass_ctx
@handle_errors
def resume(ctx: Context, key: str, catchup: bool, actor: str, note: str | None) -> None:
    """Resume KEY (from now, unless --catchup)."""
    view = ctx.app(required=True).schedules.resume(key, catchup=catchup, note=note, actor=actor)
    click.echo(f"resumed {key}; {_next(view)}")


@click.command("skip")
@click.argument("key")
@click.option("--slot", help="ISO-8601 slot to skip (default: the next one).")
@note_and_actor
@pass_ctx
@handle_errors
def skip(ctx: Context, key: str, slot: str | None, actor: str, note: str | None) -> None:
    """Skip the next slot of KEY (or --slot)."""
    when = parse_instant(slot, "--slot") if slot else None
    done = ctx.app(required=True).schedules.skip(key, when, note=note, actor=actor)
    click.echo(f"skipped {key} at {iso(done)}")


@click.command("unskip")
@click.argument("key")
@click.argument("slot")
@note_and_actor
@pass_ctx
@handle_errors
def unskip(ctx: Context, key: str, slot: str, actor: str, note: str | None) -> None:
    """Undo a skip of a future SLOT."""
    ctx.app(required=True).schedules.unskip(
        key, parse_instant(slot, "SLOT"), note=note, actor=actor
    )
    click.echo(f"unskipped {key} at {slot}")


@click.command("trigger")
@click.argument("key")
@note_and_actor
@pass_ctx
@handle_errors
def trigger(ctx: Context, key: str, actor: str, note: str | None) -> None:
    """Run KEY now (recorded as manual; consumes no slot). Prints the job id."""
    click.echo(ctx.app(required=True).schedules.trigger(key, note=note, actor=actor))


@click.command("backfill")
@click.argument("key")
@click.option("--start", required=True, help="ISO-8601 start of the range (inclusive).")
@click.option("--end", required=True, help="ISO-8601 end of the range (inclusive).")
@click.option("--run", "really", is_flag=True, help="Enqueue (default: only preview).")
@click.option("--force", is_flag=True, help="Allow more slots than the bound.")
@click.option("--json", "as_json", is_flag=True)
@note_and_actor
@pass_ctx
@handle_errors
def backfill(
    ctx: Context,
    key: str,
    start: str,
    end: str,
    really: bool,
    force: bool,
    as_json: bool,
    actor: str,
    note: str | None,
) -> None:
    """Preview (default) or enqueue (--run) the slots of KEY in [--start, --end]."""
    result = ctx.app(required=True).schedules.backfill(
        key,
        parse_instant(start, "--start"),
        parse_instant(end, "--end"),
        dry_run=not really,
        force=force,
        note=note,
        actor=actor,
    )
    if as_json:
        echo_json(result.to_json())
        return
    verb = "would enqueue" if result.dry_run else "enqueued"
    click.echo(
        f"{verb} {len(result.slots)} slot(s) of {key}; {len(result.already)} already in "
        "the history (left alone)"
    )
    for s in result.slots:
        click.echo(f"  {iso(s)}")
    if result.beyond_history:
        click.echo(
            "note: part of the range is older than the slot history kept; nothing tells "
            "whether those slots already ran"
        )


@click.command("reset")
@click.argument("key")
@note_and_actor
@pass_ctx
@handle_errors
def reset(ctx: Context, key: str, actor: str, note: str | None) -> None:
    """Clear operator state (pause, skips) back to what the code says."""
    ctx.app(required=True).schedules.reset(key, note=note, actor=actor)
    click.echo(f"reset {key}")


@click.command("audit")
@click.argument("key", required=False)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 100000))
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
def audit(ctx: Context, key: str | None, limit: int, as_json: bool) -> None:
    """The audit log of operator actions (of KEY, or all)."""
    entries = ctx.reader().schedules.audit(key, limit=limit)
    if as_json:
        echo_json([e.to_json() for e in entries])
        return
    if not entries:
        click.echo("no audit entries" + (f" for {key!r}" if key else ""))
        return
    rows = [
        (iso(e.at) or "", *(printable(t) for t in (e.actor, e.action, e.key or "-", e.note or "")))
        for e in entries
    ]
    header = ("AT (UTC)", "ACTOR", "ACTION", "SCHEDULE", "NOTE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    for r in [header, *rows]:
        cells = [r[i].ljust(widths[i]) for i in range(4)]
        click.echo(("  ".join(cells) + "  " + r[4]).rstrip())


COMMANDS = (create, update, delete, pause, resume, skip, unskip, trigger, backfill, reset, audit)
