"""The lines a long-running command prints about itself (start, stop, errors), in the log's
format: plain text, or with `--log-format json` one JSON object each, like every log line, so
that a log shipper reading the process's stderr never meets a line it cannot parse."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import click

from onthedot.observability.logjson import JsonFormatter

log = logging.getLogger("onthedot.cli")


def _json_handler() -> logging.Handler | None:
    for handler in logging.getLogger().handlers:
        if isinstance(handler.formatter, JsonFormatter):
            return handler
    return None


def json_lines() -> bool:
    """Whether the log is written as JSON lines (`--log-format json`)."""
    return _json_handler() is not None


def say(text: str, *, level: int = logging.INFO) -> None:
    """Print one line about the command to stderr, as a log record in JSON mode."""
    handler = _json_handler()
    if handler is None:
        click.echo(text, err=True)
        return
    record = log.makeRecord(log.name, level, "(cli)", 0, text, (), None)
    handler.handle(record)  # whatever the logger's level: this line is the command's output


@contextmanager
def errors_as_lines() -> Iterator[None]:
    """In JSON mode, a command's error (click prints `Error: ...` as text) is a JSON line of
    level error, and the exit status stays the same."""
    try:
        yield
    except click.ClickException as exc:
        if not json_lines():
            raise
        say(exc.format_message(), level=logging.ERROR)
        sys.exit(exc.exit_code)
