"""How a person runs onthedot's commands where an App lives, so that every hint in a message
names the command to type there: `onthedot migrate` from a shell, `python manage.py migrate`
in a Django project (whose `migrate` also brings onthedot's schema up to date), `python
manage.py onthedot worker` for a worker there. The App holds one (`app.commands`); an
integration that runs the CLI its own way sets its own."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CommandLine:
    prefix: str = "onthedot"  # what runs an onthedot command: `onthedot worker`
    migrate_command: str | None = None  # what brings the schema up to date (None: `migrate`)

    def __call__(self, command: str) -> str:
        """The full command line of onthedot's `command` (`worker`, `check`, ...)."""
        return f"{self.prefix} {command}"

    @property
    def migrate(self) -> str:
        return self.migrate_command or self("migrate")
