"""`onthedot schedules expect` (override a schedule's expectations at run time) and
`onthedot schedules health` (every problem, from the database alone: docs/health.md)."""

from __future__ import annotations

from typing import Any

import click

from onthedot.cli.context import Context, handle_errors, pass_ctx
from onthedot.cli.schedule_controls import note_and_actor
from onthedot.domain.durations import format_duration
from onthedot.domain.expectations import Expectations, redact
from onthedot.schedules.expectations import UNCHANGED

OFF = "off"


def describe_expectations(expect: Expectations) -> str:
    """`grace=10m max_runtime=30m deadline=06:00 ping=https://hc-ping.com/…` (the ones set)."""
    parts = [f"grace={format_duration(expect.grace) if expect.grace is not None else 'default'}"]
    if expect.max_runtime is not None:
        runtime = expect.max_runtime
        parts.append(f"max_runtime={runtime if runtime == 'auto' else format_duration(runtime)}")
    if expect.deadline is not None:
        parts.append(f"deadline={expect.deadline.text()}")
    if expect.ping is not None:
        parts.append(f"ping={redact(expect.ping)}")
    return " ".join(parts)


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
    click.echo(f"{key}: {describe_expectations(found)}")


COMMANDS = (expect,)
