"""`onthedot limits`, `limits set NAME` and `limits reset NAME` (docs/limits.md)."""

from __future__ import annotations

import click

from onthedot.cli.context import Context, echo_json, handle_errors, pass_ctx
from onthedot.cli.schedule_controls import note_and_actor
from onthedot.domain.fields import printable
from onthedot.domain.limits import LimitRow, LimitSetting, rate_text, shown
from onthedot.limits import LimitView


def describe(s: LimitSetting) -> str:
    parts = []
    if s.concurrency is not None:
        parts.append(f"concurrency {s.concurrency}")
    if s.rate is not None:
        parts.append(f"rate {rate_text(s.rate)} burst {s.burst or 1}")
    return ", ".join(parts) or "no limit"


def row_line(row: LimitRow) -> str:
    line = f"{printable(row.effective.name)}: {describe(row.effective)}"
    if row.overridden:
        line += f" (overridden; the code says {describe(row.code)})"
    return line


def view_json(v: LimitView) -> dict[str, object]:
    e = v.row.effective
    return {
        "name": e.name,
        "concurrency": e.concurrency,
        "rate": rate_text(e.rate) if e.rate is not None else None,
        "burst": e.burst,
        "overridden": v.row.overridden,
        "declared": v.declared,
        "registered": v.registered,
        "keys": [
            {"key": k.lkey, "running": k.running, "waiting": k.waiting, "tokens": k.tokens}
            for k in v.busiest
        ],
    }


@click.group(invoke_without_command=True)
@click.option("--top", default=5, show_default=True, type=click.IntRange(1, 1000))
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
@handle_errors
@click.pass_context
def limits(click_ctx: click.Context, ctx: Context, top: int, as_json: bool) -> None:
    """Each limit and its busiest keys (running, waiting, tokens); `set` and `reset` it."""
    if click_ctx.invoked_subcommand is not None:
        return
    views = ctx.reader_with_app().limits.overview(top)
    if as_json:
        echo_json([view_json(v) for v in views])
        return
    if not views:
        click.echo("no limits declared")
    for v in views:
        unregistered = "" if v.registered else " (not registered: no worker with it started yet)"
        click.echo(row_line(v.row) + unregistered)
        for k in v.busiest:
            tokens = "" if k.tokens is None else f", {k.tokens:.1f} tokens"
            click.echo(
                f"  {printable(shown(k.lkey))}: {k.running} running, {k.waiting} waiting{tokens}"
            )


@limits.command("set")
@click.argument("name")
@click.option("--concurrency", type=int, help="At most this many running at once.")
@click.option("--rate", help='At most this many starts per unit: "10/s", "100/m", "5/h".')
@click.option("--burst", type=int, help="The token bucket's size (with a rate).")
@note_and_actor
@pass_ctx
@handle_errors
def limits_set(
    ctx: Context,
    name: str,
    concurrency: int | None,
    rate: str | None,
    burst: int | None,
    actor: str,
    note: str | None,
) -> None:
    """Override limit NAME's settings until `reset` (audited; in force at the next claim)."""
    row = ctx.app(required=True).limits.set(
        name, concurrency=concurrency, rate=rate, burst=burst, actor=actor, note=note
    )
    click.echo(row_line(row))


@limits.command("reset")
@click.argument("name")
@note_and_actor
@pass_ctx
@handle_errors
def limits_reset(ctx: Context, name: str, actor: str, note: str | None) -> None:
    """Return limit NAME to the settings its code declares (audited)."""
    click.echo(row_line(ctx.app(required=True).limits.reset(name, actor=actor, note=note)))
