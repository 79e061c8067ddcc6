"""`onthedot schedules expect` (override a schedule's expectations at run time) and
`onthedot schedules health` (every problem, from the database alone: docs/health.md)."""

from __future__ import annotations

import sys
from typing import Any

import click

from onthedot.cli.context import Context, echo_json, handle_errors, pass_ctx
from onthedot.cli.schedule_controls import note_and_actor
from onthedot.schedules.expectations import UNCHANGED

OFF = "off"


def _given(value: str | None) -> Any:
    """A CLI option as `expect` takes it: not given, "off" (None), or the text."""
    if value is None:
        return UNCHANGED
    return None if value.strip().lower() == OFF else value


@click.command("expect")
@click.argument("key")
@click.option("--grace", help="How late its job may start, e.g. 10m ('off': the default).")
@click.option("--max-runtime", help="How long a run may last: 30m, or auto ('off': none).")
@click.option("--deadline", help="Succeeded by: 06:00 (its zone) or 4h after the slot, or off.")
@click.option("--ping", help="healthchecks.io-style URL called at start/success/fail, or off.")
@click.option("--clear", is_flag=True, help="Drop every override first (back to the code's).")
@note_and_actor
@pass_ctx
@handle_errors
def expect(
    ctx: Context,
    key: str,
    grace: str | None,
    max_runtime: str | None,
    deadline: str | None,
    ping: str | None,
    clear: bool,
    actor: str,
    note: str | None,
) -> None:
    """Override the expectations of KEY (declared or runtime) at run time."""
    found = ctx.app(required=True).schedules.expect(
        key,
        grace=_given(grace),
        max_runtime=_given(max_runtime),
        deadline=_given(deadline),
        ping=_given(ping),
        clear=clear,
        note=note,
        actor=actor,
    )
    click.echo(f"{key}: {found.describe()}")


@click.command("health")
@click.option("--json", "as_json", is_flag=True, help="The whole report as JSON.")
@pass_ctx
@handle_errors
def health(ctx: Context, as_json: bool) -> None:
    """Every open problem of every schedule, from the database alone (it works when every
    worker is down); exit 0 when all are healthy, 1 otherwise. With --app, the code's
    expectations; without, those the schedulers last applied."""
    report = (ctx.reader_with_app() if ctx.app_path else ctx.reader()).health.report()
    if as_json:
        echo_json(report.to_json())
    else:
        if report.fleet is not None:
            click.echo(report.fleet)
        for problem in report.problems:
            click.echo(problem.line())
        if report.ok:
            click.echo(f"ok: {len(report.schedules)} schedule(s) healthy")
    if not report.ok:
        sys.exit(1)


COMMANDS = (expect, health)
