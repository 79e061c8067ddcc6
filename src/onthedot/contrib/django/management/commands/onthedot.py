"""`python manage.py onthedot <command> ...`: every onthedot CLI command (`worker`, `migrate`,
`schedules ...`, `web`, `check`, ...) with the project's settings loaded and its App (see
`onthedot.contrib.django.get_app`) given as `--app`."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

APP_PATH = "onthedot.contrib.django.runtime:get_app"


class Command(BaseCommand):
    help = "Run an onthedot command (worker, migrate, schedules, web, check, ...)."
    # onthedot's own commands check what they need; Django's system checks would also run
    # before a worker starts and touch every app.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("onthedot_args", nargs=argparse.REMAINDER)

    def run_from_argv(self, argv: list[str]) -> None:
        # Everything after `onthedot` belongs to onthedot's parser, `--help` included.
        self.run_cli(argv[2:], standalone=True)

    def handle(self, *args: Any, **options: Any) -> None:
        """For `call_command("onthedot", "schedules", "list")`."""
        self.run_cli([*args, *options.get("onthedot_args", [])], standalone=False)

    def run_cli(self, args: list[str], *, standalone: bool) -> None:
        from onthedot.cli.main import cli

        if args[:1] == ["worker"] and "--processes" not in args:
            # One process under manage.py: a child spawned as a new program (not forked from
            # this loaded process) would run without django.setup(), and a tree of Django
            # workers is untested. Run more `manage.py onthedot worker` processes to use more
            # cores (systemd instances, container replicas).
            args = [*args, "--processes", "1"]

        cli.main(
            args=["--app", APP_PATH, *args],
            prog_name="manage.py onthedot",
            standalone_mode=standalone,
        )
