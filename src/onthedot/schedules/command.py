"""The built-in job behind command schedules: run a program, keep its exit code and output."""

from __future__ import annotations

import shlex

from onthedot.domain.payload import JsonObject

OUTPUT_TAIL = 4000  # characters of combined stdout/stderr kept in the job's result


class CommandFailed(Exception):
    """The command exited with a non-zero status (retried like any failing job)."""


def run_command(
    command: str | list[str], shell: bool = False, timeout: float | None = None
) -> JsonObject:
    """Run `command` without a shell (unless `shell=True`), within `timeout` seconds.

    Returns {"exit_code", "output"} with the tail of the output; raises CommandFailed on a
    non-zero exit and TimeoutError when the timeout passes (the process is killed)."""
    import subprocess  # here, not at import: every worker registers this job, few run it

    argv: str | list[str]
    if shell:
        argv = command if isinstance(command, str) else shlex.join(command)
    else:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
    try:
        proc = subprocess.run(
            argv,
            shell=shell,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        tail = (exc.output or b"").decode("utf-8", "replace")[-OUTPUT_TAIL:]
        raise TimeoutError(f"command timed out after {timeout}s; output tail: {tail!r}") from None
    except FileNotFoundError as exc:
        raise CommandFailed(f"command not found: {exc.filename}") from None
    output = proc.stdout.decode("utf-8", "replace")[-OUTPUT_TAIL:]
    if proc.returncode != 0:
        raise CommandFailed(f"exit code {proc.returncode}; output tail: {output!r}")
    return {"exit_code": proc.returncode, "output": output}
