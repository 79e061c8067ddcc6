"""A page's shell session: `sh` blocks command by command, `console` transcripts.

One command per line (a trailing `\\` continues it), run by bash in the page's folder with
the page's environment; `export` and `cd` carry to the next commands and blocks, as in one
terminal. A command must exit 0 within `TIMEOUT`. Three kinds are not run as they stand:

- `pip install ...` is checked, not run: the project's extras it names exist, and what the
  page imports and runs is installed by them (`checks.check_pip`).
- `python -m pytest ...` naming no file of the page's own is this test suite: it is
  collected (`--collect-only`) in the repository, so its paths and options are checked.
- A command that serves until stopped (`onthedot ... worker` without `--burst`, `web`, `dev`,
  `manage.py runserver`, `uvicorn`) runs in the background, as in a second terminal, from the
  moment its output says it is ready until the page ends; then SIGTERM, and it must exit 0.

`&&` joins commands of different kinds (`pip install . && python examples/quickstart.py`).
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
from pathlib import Path

from sybil import Example

from tests.docs import checks
from tests.docs.workspace import ROOT, Workspace, workspace

TIMEOUT = 180.0

# What a serving command prints once it serves: a worker's start event, uvicorn, runserver.
READY = re.compile(
    r"worker_started|Application startup complete|Uvicorn running on|Starting development server"
)
# onthedot's options that take a value (the word after them is not the subcommand).
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
VALUE_OPTIONS = frozenset({"--app", "--database", "--log-format"})


def commands(source: str) -> list[str]:
    """The block's commands: lines joined at a trailing backslash; blanks and comments out."""
    out: list[str] = []
    pending = ""
    for line in source.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        if full and not full.startswith("#"):
            out.append(full)
    return out


def split_and(command: str) -> list[str]:
    """`a && b` as ["a", "b"] (outside quotes)."""
    parts, quote, start, i = [], "", 0, 0
    while i < len(command):
        c = command[i]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif command.startswith("&&", i):
            parts.append(command[start:i].strip())
            start = i = i + 2
            continue
        i += 1
    parts.append(command[start:].strip())
    return parts


def words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return []


def onthedot_subcommand(argv: list[str]) -> str | None:
    """The onthedot subcommand of `onthedot ...` or `python manage.py onthedot ...`."""
    if argv[:1] == ["onthedot"]:
        rest = argv[1:]
    elif argv[:3] == ["python", "manage.py", "onthedot"]:
        rest = argv[3:]
    else:
        return None
    skip = False
    for word in rest:
        if skip:
            skip = False
        elif word in VALUE_OPTIONS:
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def serves(argv: list[str]) -> bool:
    sub = onthedot_subcommand(argv)
    if sub in ("web", "dev") or (sub == "worker" and "--burst" not in argv):
        return "--help" not in argv
    return argv[:1] == ["uvicorn"] or argv[:3] == ["python", "manage.py", "runserver"]


def run_command(ws: Workspace, command: str, example: Example) -> subprocess.CompletedProcess[str]:
    """Run one command as the page's terminal would, keeping its exports and `cd`."""
    state = ws.folder / ".docs-shell-state"
    script = (
        f"{command}\n__rc=$?\n{{ export -p; printf 'cd %q\\n' \"$PWD\"; }} > {state}\nexit $__rc\n"
    )
    with subprocess.Popen(
        ["bash", "-c", script],
        cwd=ws.cwd,
        env=ws.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # on a timeout the whole group goes, never an orphan server
    ) as process:
        try:
            out, err = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    if state.exists():
        keep_state(ws, state.read_text())
        state.unlink()
    return done


def keep_state(ws: Workspace, text: str) -> None:
    """The environment and folder bash reported after a command, for the next one."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("declare -x "):
            name, eq, value = line[len("declare -x ") :].partition("=")
            if eq:
                env[name] = shlex.split(value)[0] if value else ""
        elif line.startswith("cd "):
            ws.cwd = Path(shlex.split(line[3:])[0])
    if env:
        ws.env = env


def without_assignments(argv: list[str]) -> list[str]:
    """The command after its leading `NAME=value` words (variables set for that command)."""
    i = 0
    while i < len(argv) and ASSIGNMENT.match(argv[i]):
        i += 1
    return argv[i:]


def run_one(ws: Workspace, command: str, example: Example) -> None:
    for part in split_and(command):
        argv = without_assignments(words(part))
        if argv[:2] == ["pip", "install"] or argv[:4] == ["python", "-m", "pip", "install"]:
            checks.check_pip(argv, example.document, ws)
        elif argv[:3] == ["python", "-m", "pytest"] and not page_paths(ws, argv[3:]):
            collect_tests(part)
        elif serves(argv):
            worker = onthedot_subcommand(argv) == "worker"
            ws.start(part, READY, frozenset({0}) if worker else frozenset({0, -15, 143}))
        else:
            done = run_command(ws, part, example)
            if done.returncode != 0:
                raise AssertionError(
                    f"`{part}` exited {done.returncode}\n--- stdout ---\n{done.stdout}"
                    f"--- stderr ---\n{done.stderr}"
                )


def page_paths(ws: Workspace, args: list[str]) -> bool:
    """Whether a pytest command names files of the page's own (then it runs, as any command)
    rather than this suite's (tests/...: collected in the repository)."""
    paths = [a for a in args if not a.startswith("-")]
    return bool(paths) and all((ws.cwd / p.split("::")[0]).exists() for p in paths)


def collect_tests(command: str) -> None:
    done = subprocess.run(
        [*shlex.split(command, comments=True), "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"`{command} --collect-only` failed:\n{done.stdout}{done.stderr}"


def run_block(example: Example) -> None:
    ws = workspace(example)
    for command in commands(str(example.parsed)):
        run_one(ws, command, example)


def run_transcript(example: Example) -> None:
    """`$ command` lines, each followed by the output it must print (`...`: anything)."""
    ws = workspace(example)
    steps: list[tuple[str, list[str]]] = []
    for line in str(example.parsed).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:].strip(), []))
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise AssertionError(f"a console block starts with `$ command`, not {line!r}")
    for command, expected in steps:
        full = commands(command + "\n")
        done = run_command(ws, full[0], example)
        actual = "\n".join(x.rstrip() for x in (done.stdout + done.stderr).splitlines())
        want = "\n".join(expected).strip()
        pattern = ".*?".join(re.escape(piece) for piece in want.split("..."))
        if not re.fullmatch(pattern, actual.strip(), re.DOTALL):
            raise AssertionError(
                f"`{command}` (exit {done.returncode}) printed:\n{actual}\n--- expected ---\n{want}"
            )
