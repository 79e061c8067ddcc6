"""`onthedot check`, `onthedot preview` and the `onthedot schedules` group: list, explain
and history here, the operator controls from `schedule_controls`."""

from __future__ import annotations

import sys
from datetime import datetime

import click

from onthedot.cli.context import Context, echo_json, handle_errors, parse_instant, pass_ctx
from onthedot.cli.schedule_controls import COMMANDS as CONTROLS
from onthedot.cli.schedule_health import COMMANDS as HEALTH
from onthedot.clock import SystemClock
from onthedot.domain.fields import printable
from onthedot.domain.jobs import iso
from onthedot.domain.specs import load_timezone, parse_spec


@click.command()
@pass_ctx
@handle_errors
def check(ctx: Context) -> None:
    """Validate every declared schedule; exit 1 on any error (a deploy gate)."""
    report = ctx.app(required=True).schedules.check()
    click.echo(report.render())
    if not report.ok:
        sys.exit(1)


@click.command()
@click.argument("spec")
@click.option("--timezone", "tz_name", default="UTC", show_default=True)
@click.option("--after", help="ISO-8601 instant to start after (default: now).")
@click.option("--count", default=10, show_default=True, type=click.IntRange(1, 10000))
@click.option("--json", "as_json", is_flag=True, help="A JSON array of UTC ISO-8601 strings.")
@handle_errors
def preview(spec: str, tz_name: str, after: str | None, count: int, as_json: bool) -> None:
    """Print the next COUNT slots of SPEC (cron, 'every 90s', 'every 2 weeks at 09:00')."""
    parsed = parse_spec(spec)
    tz = load_timezone(tz_name)
    t = parse_instant(after, "--after") if after else SystemClock().now()
    slots: list[datetime] = []
    while len(slots) < count:
        nxt = parsed.next_after(t, tz)
        if nxt is None:
            break
        slots.append(nxt)
        t = nxt
    if as_json:
        echo_json([iso(s) for s in slots])
        return
    click.echo(f"{parsed.describe()} ({tz.key})")
    for s in slots:
        local = s.astimezone(tz)
        click.echo(f"{iso(s)}  {local.strftime('%a %Y-%m-%d %H:%M:%S %Z')}")
    if not slots:
        click.echo("(no upcoming slots)")


@click.group(commands=(*CONTROLS, *HEALTH))
def schedules() -> None:
    """List, explain and inspect schedules."""


@schedules.command("list")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
def schedules_list(ctx: Context, as_json: bool) -> None:
    """Every schedule: spec, description, status, next slots, last outcome, missed counts."""
    views = ctx.reader_with_app().schedules.views()
    if as_json:
        echo_json(views)
        return
    if not views:
        click.echo("no schedules")
        return
    for v in views:
        state = v["status"]
        if v["paused"] and v["paused_by"]:
            state += f" by {printable(v['paused_by'])}"
        click.echo(f"{printable(v['key'])}  [{v['source']}, {state}]")
        click.echo(f"  {v['spec']}  ({v['description']}, {v['timezone']})")
        click.echo(f"  next: {', '.join(v['next']) or '-'}")
        click.echo(
            f"  last: {v['last_slot'] or '-'} {v['last_outcome'] or ''}  "
            f"missed={v['missed']} coalesced={v['coalesced']}"
        )


@schedules.command("explain")
@click.argument("key")
@pass_ctx
@handle_errors
def schedules_explain(ctx: Context, key: str) -> None:
    """Why KEY did or did not fire."""
    click.echo(ctx.reader_with_app().schedules.explain(key))


@schedules.command("history")
@click.argument("key")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 100000))
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
def schedules_history(ctx: Context, key: str, limit: int, as_json: bool) -> None:
    """The slot history of KEY, newest first."""
    records = ctx.reader().operations.slot_history(key, limit=limit)
    if as_json:
        echo_json(
            [
                {
                    "slot": iso(r.slot),
                    "outcome": r.outcome,
                    "job_id": r.job_id,
                    "job_state": r.job_state,
                }
                for r in records
            ]
        )
        return
    if not records:
        click.echo(f"no slot history for {key!r}")
    for r in records:
        job = f"job {r.job_id} ({r.job_state})" if r.job_id else ""
        click.echo(f"{iso(r.slot)}  {r.outcome:<17} {job}")
