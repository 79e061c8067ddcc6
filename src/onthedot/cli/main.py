"""The root `onthedot` group: its global options, and every subcommand registered on it."""

from __future__ import annotations

import logging
import sys

import click

from onthedot.cli.context import ENV_APP, Context
from onthedot.cli.database import health, migrate
from onthedot.cli.import_beat import import_beat
from onthedot.cli.jobs import enqueue, jobs, queues
from onthedot.cli.schedules import check, preview, schedules
from onthedot.cli.web import dev, web
from onthedot.cli.worker import worker

LOGGING_COMMANDS = ("worker", "web", "dev")
SUBCOMMANDS = (migrate, health, worker, enqueue, jobs, queues, check, preview, schedules, web, dev)


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, commands=SUBCOMMANDS)
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
    else:
        logging.basicConfig(
            level=level, format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr
        )
    ctx.obj = Context(app_path, database, verbose)
    ctx.call_on_close(ctx.obj.close)


cli.add_command(import_beat)


def main() -> None:
    """The console script `onthedot`."""
    cli(prog_name="onthedot")
