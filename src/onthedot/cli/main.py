"""Entry point, app loading and error handling for the `onthedot` command."""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from onthedot.app import App
from onthedot.domain.errors import OnthedotError

F = TypeVar("F", bound=Callable[..., Any])
ENV_APP = "ONTHEDOT_APP"


class Context:
    def __init__(self, app_path: str | None, database: str | None) -> None:
        self.app_path = app_path
        self.database = database
        self._app: App | None = None

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
                    "no app given: pass --app module:attr or set ONTHEDOT_APP "
                    "(the module where your App and jobs are defined)"
                )
            else:
                self._app = App(self.database)
        return self._app


def load_app(path: str) -> App:
    """Import `module:attr` (or `module`, taking its `app`) and return the App there."""
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
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise click.UsageError(f"module {module_name!r} has no attribute {attr!r}")
    if callable(obj) and not isinstance(obj, App):
        obj = obj()
    if not isinstance(obj, App):
        raise click.UsageError(f"{path!r} is a {type(obj).__name__}, not an onthedot App")
    return obj


def handle_errors(fn: F) -> F:
    """Turn onthedot errors into one clear line and a non-zero exit."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except OnthedotError as exc:
            raise click.ClickException(str(exc).strip().splitlines()[0]) from None
        except (ValueError, TypeError) as exc:
            raise click.ClickException(
                str(exc).strip().splitlines()[0] if str(exc) else type(exc).__name__
            ) from None

    return wrapper  # type: ignore[return-value]


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str))


def parse_json_option(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"{what} is not valid JSON ({exc.msg} at char {exc.pos})"
        ) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    from onthedot.cli import jobs, operate, schedules, web  # noqa: F401  (register commands)

    cli(prog_name="onthedot")
