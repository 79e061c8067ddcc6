"""What every command shares: the `Context` that loads the user's App once, the error
handling that turns onthedot errors into one line, and the parsing of JSON and ISO-8601
options."""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from functools import wraps
from pathlib import Path
from typing import ParamSpec, TypeVar

import click

from onthedot.app import App
from onthedot.cli.output import say
from onthedot.domain.errors import (
    ConfigurationError,
    DatabaseUnavailable,
    OnthedotError,
    SchemaOutOfDate,
)
from onthedot.domain.payload import JsonValue
from onthedot.loading import app_in

P = ParamSpec("P")
R = TypeVar("R")
ENV_APP = "ONTHEDOT_APP"


class Context:
    def __init__(self, app_path: str | None, database: str | None, verbose: bool = False) -> None:
        self.app_path = app_path
        self.database = database
        self.verbose = verbose
        self._app: App | None = None
        # The SQLite file the command found missing as it loaded the app (the first use
        # creates it), for "new file" in what it says; None otherwise.
        self.new_file: Path | None = None

    def close(self) -> None:
        """Release the app's connections when the command ends."""
        if self._app is not None:
            self._app.close()

    def app(self, required: bool = False) -> App:
        """The user's app (from --app / $ONTHEDOT_APP), or a bare App when none is given."""
        if self._app is None:
            if self.app_path:
                self._app = load_app(self.app_path)
                if self.database:
                    self._app.use_database(self.database)
            elif required:
                raise click.UsageError(
                    "no app given: this command needs your app's jobs and schedules: pass "
                    "--app module:attr or set ONTHEDOT_APP (the module where your App is defined)"
                )
            else:
                self._app = App(self.database)
            self.new_file = self._app.database.new_file()
            if self.verbose:  # -v: every command says which database it opens
                say(f"onthedot: {self.describe()}")  # JSON too with --log-format json
        return self._app

    def reader(self) -> App:
        """The app for a command that only reads: a SQLite file that does not exist is never
        created (a read in the wrong folder would otherwise answer from an empty database)."""
        app = self.with_folder()
        config = app.database
        path = config.file
        if path and not Path(path).exists():
            raise click.ClickException(
                f"no database at {Path(path).resolve()} ({config.display}): run from your "
                "project's folder, pass --database or $ONTHEDOT_DATABASE_URL, or create it "
                f"with `{app.commands.migrate}`"
            )
        return app

    def with_folder(self) -> App:
        """The app, once the folder of its SQLite file exists: a folder that does not exist is
        never created, and no wait brings it, so every command (a worker too) stops at once
        with this one line."""
        app = self.app()
        config = app.database
        if config.file:
            path = Path(config.file).resolve()
            if not path.parent.is_dir():
                raise click.ClickException(
                    f"no database at {path} ({config.display}): folder {path.parent} does not "
                    "exist; pass the right --database or $ONTHEDOT_DATABASE_URL"
                )
        return app

    def reader_with_app(self) -> App:
        """`reader()` for a command that needs the app's declarations (--app)."""
        self.app(required=True)
        return self.reader()

    def describe(self) -> str:
        """Which database this command uses: `database <url> (<absolute path>)`, with `, new
        file` when the SQLite file did not exist as the command started."""
        app = self.app()
        return f"database {database_label(app, new=self.new_file is not None)}"


def database_label(app: App, *, new: bool = False) -> str:
    """The app's database as a person checks it: the masked URL, and for a SQLite file its
    absolute path (and `new file` when `new`)."""
    config = app.database
    if config.file:
        return f"{config.display} ({Path(config.file).resolve()}{', new file' if new else ''})"
    return config.display


def app_queues(app: App, option: str | None) -> list[str]:
    """The queues of `--queues` (claimed in that order), or by default every queue the app's
    jobs and declared schedules name, those of the runtime schedules stored in its database
    (read now: one created later is served from the next start), and `default`."""
    if option is not None:
        names = [q.strip() for q in option.split(",") if q.strip()]
        if not names:
            raise click.BadParameter("give at least one queue", param_hint="--queues")
        return names
    found = {q for jf in app.jobs.values() for q in (jf.queue, *jf.extra_queues)}
    found |= {s.queue for s in app.schedules.declared().values() if s.queue}
    try:
        rows = app.operations.schedule_rows()
    except (DatabaseUnavailable, SchemaOutOfDate):
        rows = []  # the worker waits for the database (or refuses the schema) as it starts
    for row in rows:
        if row.source == "dynamic" and row.removed_at is None:
            sched = app.schedules.definition_for(row)
            if sched is not None and sched.queue:
                found.add(sched.queue)
    return sorted(found | {"default"})


pass_ctx = click.make_pass_decorator(Context)


def load_app(path: str) -> App:
    """Import `module:attr` (or `module`, taking its `app`) and return the App there (see
    `onthedot.loading`)."""
    module_name, _, attr = path.partition(":")
    attr = attr or "app"
    if not module_name:
        raise click.UsageError(f"invalid app path {path!r}: use module:attr, e.g. myproj.tasks:app")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise click.UsageError(
            f"cannot import module {module_name!r} named by --app: {exc}; run from the project "
            "folder or fix PYTHONPATH"
        ) from None
    try:
        return app_in(module, attr, path)
    except ConfigurationError as exc:
        raise click.UsageError(f"--app {exc}") from None


def handle_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn onthedot errors into one clear line and a non-zero exit."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (OnthedotError, ValueError, TypeError) as exc:
            raise click.ClickException(one_line(exc)) from None

    return wrapper


def one_line(exc: BaseException) -> str:
    """An error as one line of plain text: its message's first line (never its repr, which
    would wrap it in quotes), or its type's name when it has no message."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def echo_json(value: object) -> None:
    """Print `value` as indented JSON (datetimes and other strangers as their str)."""
    click.echo(json.dumps(value, indent=2, default=str))


def parse_json_option(text: str | None, what: str) -> JsonValue:
    """The JSON value of option `what`, or None when the option is not given."""
    if text is None:
        return None
    try:
        value: JsonValue = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"{what} is not valid JSON ({exc.msg} at char {exc.pos})"
        ) from None
    return value


def parse_instant(text: str, what: str) -> datetime:
    """An ISO-8601 instant in UTC (a naive one is taken as UTC)."""
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{what} {text!r} is not ISO-8601: use e.g. 2026-01-31T09:00:00Z"
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
