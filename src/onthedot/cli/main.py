"""The root `onthedot` group: its global options, and every subcommand registered on it.

A subcommand's module is imported only when that command runs (or `--help` lists them all), so
`onthedot worker` does not pay for the web and schedule-control commands."""

from __future__ import annotations

import importlib
import logging
import sys

import click

from onthedot.cli.context import ENV_APP, Context

# name -> the module defining it (the command is the module attribute of that name)
SUBCOMMANDS = {
    "migrate": "database",
    "health": "database",
    "worker": "worker",
    "enqueue": "jobs",
    "jobs": "jobs",
    "queues": "jobs",
    "check": "schedules",
    "preview": "schedules",
    "schedules": "schedules",
    "web": "web",
    "dev": "web",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = SUBCOMMANDS.get(cmd_name)
        if module is None:
            return None
        command = getattr(importlib.import_module(f"onthedot.cli.{module}"), cmd_name)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--app", "app_path", envvar=ENV_APP, help="module:attr of your App ($ONTHEDOT_APP).")
@click.option(
    "--database",
    envvar="ONTHEDOT_DATABASE_URL",
    help="Database URL (overrides the app's; $ONTHEDOT_DATABASE_URL).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log debug events too.")
@click.version_option(package_name="onthedot")
@click.pass_context
def cli(ctx: click.Context, app_path: str | None, database: str | None, verbose: bool) -> None:
    """onthedot: background jobs and schedules that fire on the dot, exactly once per slot."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    ctx.obj = Context(app_path, database)
    ctx.call_on_close(ctx.obj.close)


def main() -> None:
    """The console script `onthedot`."""
    cli(prog_name="onthedot")
