"""Why a connection to PostgreSQL failed, in one line: the server's own reason when it refused
(database or role missing, wrong password, too many clients, pg_hba.conf), else "unreachable"
with libpq's reason (refused, timed out, unknown host)."""

from __future__ import annotations

import logging
import re

from onthedot.domain.errors import DatabaseRefused, DatabaseUnavailable

_TOO_MANY = (
    r'too many clients already|too many connections for \w+ "[^"]*"'
    r"|remaining connection slots are reserved[^\n]*"
)
_REASONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'database "[^"]*" does not exist'), "create it or fix the URL"),
    (re.compile(r'role "[^"]*" does not exist'), "create it or fix the user in the URL"),
    (
        re.compile(r'password authentication failed for user "[^"]*"'),
        "fix the password (in the URL, PGPASSWORD or ~/.pgpass)",
    ),
    (
        re.compile(r"fe_sendauth: no password supplied"),
        "the server asks for a password: give it in the URL, PGPASSWORD or ~/.pgpass",
    ),
    (
        re.compile(_TOO_MANY),
        "lower pool_size or the number of workers, or raise the server's connection limit",
    ),
    (re.compile(r"no pg_hba\.conf entry for [^\n]*"), "add a line for it to pg_hba.conf"),
    (re.compile(r"the database system is [a-z ]+"), "wait for it, or check the server"),
)
_FATAL = re.compile(r"FATAL:\s+(.+)")
# Refusals only a change of configuration fixes (not "too many clients", not "starting up").
_CONFIGURATION = re.compile(
    r'(database|role) "[^"]*" does not exist|password authentication failed|'
    r"fe_sendauth: no password supplied|no pg_hba\.conf entry"
)


def _libpq_detail(text: str) -> str:
    """libpq's reason without the `connection to server at ... failed:` preamble."""
    first = text.strip().splitlines()[0] if text.strip() else "no reason given"
    return first.rpartition(" failed: ")[2].strip() or first


def describe_connect_error(display: str, exc: BaseException) -> tuple[str, bool]:
    """One line saying why connecting to `display` failed, and whether the server itself
    refused (True: it runs and answered) rather than being out of reach."""
    text = str(exc)
    for pattern, fix in _REASONS:
        match = pattern.search(text)
        if match:
            return f"PostgreSQL at {display} refused the connection: {match.group(0)}: {fix}", True
    fatal = _FATAL.search(text)
    if fatal:
        return f"PostgreSQL at {display} refused the connection: {fatal.group(1).strip()}", True
    return (
        f"PostgreSQL at {display} is unreachable ({_libpq_detail(text)}): check the host, port "
        "and that the server runs",
        False,
    )


def connect_failure(display: str, exc: BaseException) -> DatabaseUnavailable:
    """The error for a failed connection: `DatabaseRefused` when only a change of
    configuration helps, else `DatabaseUnavailable` (waited out)."""
    line = describe_connect_error(display, exc)[0]
    if _CONFIGURATION.search(str(exc)):
        return DatabaseRefused(line)
    return DatabaseUnavailable(line)


POOL_NAME = "onthedot"


class QuietPoolFilter(logging.Filter):
    """Drops psycopg_pool's `error connecting in 'onthedot'` warnings: every reconnect attempt
    logs one, dozens while a database is away, and onthedot reports the same reason itself,
    once per retry (`event=database_error`). Other pools' warnings pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (str(record.msg).startswith("error connecting in") and args[:1] == (POOL_NAME,))


QUIET_POOL = QuietPoolFilter()
