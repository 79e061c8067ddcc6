"""Running the `onthedot` command in-process (click's CliRunner) for the bad-input tests, and
checking that what comes out is a clean error or a clean result, never a traceback."""

from __future__ import annotations

from click.testing import CliRunner, Result

from onthedot import App
from onthedot.cli.main import cli
from tests.torture.chaos_app import make_app

APP = "tests.torture.clitools:fresh_app"
opened: list[App] = []


def fresh_app() -> App:
    """The `--app` target: a new App per invocation (closed by `close_opened`)."""
    application = make_app(log_events=False)
    opened.append(application)
    return application


def close_opened() -> None:
    while opened:
        opened.pop().close()


def run(*args: str, database: str | None = None, app: bool = True) -> Result:
    """Invoke `onthedot [--app APP] [--database URL] ARGS...` in-process."""
    argv = (["--app", APP] if app else []) + (["--database", database] if database else [])
    env = {"ONTHEDOT_APP": None, "ONTHEDOT_DATABASE_URL": None}
    return CliRunner().invoke(cli, [*argv, *args], env=env)


def clean(result: Result) -> Result:
    """The command ended on purpose: exit 0, or a usage/one-line error; never an exception."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"uncaught {result.exception!r}:\n{result.output}") from (
            result.exception
        )
    assert "Traceback" not in result.output, result.output
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    return result


def one_line_error(result: Result) -> str:
    """The result is a failure with exactly one `Error: ...` line; return that line."""
    clean(result)
    assert result.exit_code != 0, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output[:3000]
    return errors[0]
