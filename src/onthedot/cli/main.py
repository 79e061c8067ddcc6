"""The root `onthedot` group: its global options, and every subcommand registered on it.

A subcommand's module is imported only when that command runs (or `--help` lists them all), so
`onthedot worker` does not pay for the web and schedule-control commands."""

from __future__ import annotations

import importlib
import logging
import sys

import click

from onthedot.cli.context import ENV_APP, Context
from onthedot.cli.exit import finish

LOGGING_COMMANDS = ("worker", "web", "dev")

# name -> (the module defining it, the command's attribute there): imported only when it runs
SUBCOMMANDS = {
    "migrate": ("database", "migrate"),
    "health": ("database", "health"),
    "worker": ("worker", "worker"),
    "enqueue": ("jobs", "enqueue"),
    "jobs": ("jobs", "jobs"),
    "queues": ("jobs", "queues"),
    "check": ("schedules", "check"),
    "limits": ("limits", "limits"),
    "preview": ("schedules", "preview"),
    "schedules": ("schedules", "schedules"),
    "web": ("web", "web"),
    "dev": ("web", "dev"),
    "import-beat": ("import_beat", "import_beat"),
    "prune": ("prune", "prune"),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = SUBCOMMANDS.get(cmd_name)
        if where is None:
            return None
        module, attribute = where
        command = getattr(importlib.import_module(f"onthedot.cli.{module}"), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--app", "app_path", envvar=ENV_APP, help="module:attr of your App ($ONTHEDOT_APP).")
@click.option(
    "--database",
    envvar="ONTHEDOT_DATABASE_URL",
    help="Database URL (overrides the app's; $ONTHEDOT_DATABASE_URL).",
)
@click.option(
    "-v", "--verbose", is_flag=True, help="Say which database is used; log debug events too."
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    envvar="ONTHEDOT_LOG_FORMAT",
    show_default=True,
    help="Log lines as text, or as one JSON object each ($ONTHEDOT_LOG_FORMAT).",
)
@click.version_option(package_name="onthedot")
@click.pass_context
def cli(
    ctx: click.Context, app_path: str | None, database: str | None, verbose: bool, log_format: str
) -> None:
    """onthedot: background jobs and schedules that fire on the dot, exactly once per slot."""
    # Long-running commands log their events; a one-shot command prints its answer and nothing
    # else (warnings still show), unless -v.
    quiet = ctx.invoked_subcommand not in LOGGING_COMMANDS
    level = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    if log_format == "json":
        from onthedot.observability.logjson import json_handler

        logging.basicConfig(level=level, handlers=[json_handler(sys.stderr)])
        logging.captureWarnings(True)  # a Python warning is a JSON line too
    else:
        logging.basicConfig(
            level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr
        )
    ctx.obj = Context(app_path, database, verbose)
    ctx.call_on_close(ctx.obj.close)


def main() -> None:
    """The console script `onthedot`."""
    try:
        cli(prog_name="onthedot")
    except SystemExit as exc:  # click's standalone mode always ends with one
        finish(exc.code)
    finish(0)
