"""A worker started on a SQLite file that did not exist: its first line says `new file`, and
these warnings follow when the new, empty database looks like the wrong one (a worker run from
another folder than usual makes a database of its own there and runs nothing of the old one):

- a file of the same name exists beside the app's module (where the project usually runs);
- the app declares schedules: their history, pauses and queued jobs live in the database they
  ran on, and a new one starts them afresh."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from onthedot.cli.context import Context
from onthedot.cli.output import say


def warn_of_new_database(ctx: Context) -> None:
    """Print the warnings (stderr, `warning: ...`), if the command's database is new."""
    for line in new_database_warnings(ctx):
        say(f"warning: {line}", level=logging.WARNING)


def new_database_warnings(ctx: Context) -> list[str]:
    """Why the new SQLite file of this command may be the wrong database (empty: not new)."""
    new = ctx.new_file
    if new is None:
        return []
    app = ctx.app()
    found: list[str] = []
    usual = _beside_module(ctx, new)
    if usual is not None:
        found.append(
            f"{new} is a new, empty database, but {usual} exists beside your app's module: "
            f"run from {usual.parent}, or pass --database sqlite:///{usual}"
        )
    declared = len(app.schedules.declared())
    if declared:
        found.append(
            f"{new} is a new, empty database and the app declares {declared} schedule(s): "
            "if they ran before, their history, pauses and queued jobs are in another file; "
            "stop this worker and run from that file's folder, or pass --database"
        )
    return found


def _beside_module(ctx: Context, new: Path) -> Path | None:
    """An existing file named as the database, relative to the folder of the app's module or
    to the folder its package is imported from; None when there is none (or the URL gives an
    absolute path: it names one file wherever the worker runs)."""
    config = ctx.app().database
    if not config.relative or not ctx.app_path or config.file is None:
        return None
    module_name = ctx.app_path.partition(":")[0]
    module_file = getattr(sys.modules.get(module_name), "__file__", None)
    if not module_file:
        return None
    here = Path(module_file).resolve()
    depth = module_name.count(".") + (here.name == "__init__.py")
    for folder in here.parents[: depth + 1]:  # the module's folder up to its import root
        candidate = folder / config.file
        if candidate.exists() and candidate.resolve() != new:
            return candidate.resolve()
    return None
