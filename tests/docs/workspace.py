"""A page's session: the folder its blocks run in, its shell environment, its Python session,
the servers it started and, when it asks for one, a PostgreSQL schema of its own.

The folder starts as a reader's project would look to the page's commands: `examples/` and
`deploy/` are there (links to the repository's, as in a clone), and `myproject/tasks.py` is
the module the README's "The API in short" writes (the app the docs' `--app
myproject.tasks:app` names), unless the page writes its own. No
`ONTHEDOT_*` variable leaks in from the test run: `onthedot.App()` uses `onthedot.db` in the
folder, as it would for the reader. A block that names `$DOCS_POSTGRES_URL` gets the URL of a
fresh PostgreSQL schema (at 127.0.0.1:5432, or `$ONTHEDOT_TEST_POSTGRES`), already migrated.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sybil import Example

ROOT = Path(__file__).resolve().parents[2]
LINKED = ("examples", "deploy")
README = ROOT / "README.md"
PROJECT_BLOCK = re.compile(r"```python\n(# myproject/tasks\.py\n.*?)```", re.DOTALL)


def readme_project() -> str:
    """The README's `# myproject/tasks.py` block: every page's default project."""
    found = PROJECT_BLOCK.search(README.read_text())
    assert found, "README.md has no `# myproject/tasks.py` block for the docs to use"
    return found.group(1)


KEY = "__docs_workspace__"


@dataclass
class Background:
    """A command that serves until it is stopped (a worker, a web server)."""

    command: str
    process: subprocess.Popen[bytes]
    log: Path
    # The exit statuses of a clean stop: an onthedot worker exits 0 after a graceful stop;
    # web servers (uvicorn under `onthedot web`, runserver) end by the SIGTERM they re-raise.
    clean: frozenset[int] = frozenset({0})

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, grace: float = 60.0) -> None:
        """SIGTERM, as a terminal's Ctrl-C or systemd would; it must exit 0 within `grace`."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
                raise AssertionError(
                    f"`{self.command}` still ran {grace:.0f}s after SIGTERM:\n{self.output()}"
                ) from None
        code = self.process.returncode
        if code not in self.clean:
            raise AssertionError(f"`{self.command}` exited {code} on SIGTERM:\n{self.output()}")


@dataclass
class Workspace:
    page: Path
    folder: Path
    env: dict[str, str]
    cwd: Path
    background: list[Background] = field(default_factory=list)
    _kernel: Any = None
    _schema: str | None = None

    @classmethod
    def create(cls, page: Path) -> Workspace:
        # The page's folder is one level down, so that `mkdir ../elsewhere` stays inside.
        folder = Path(tempfile.mkdtemp(prefix=f"docs-{page.stem.lower()}-")) / "work"
        folder.mkdir()
        for name in LINKED:
            (folder / name).symlink_to(ROOT / name)
        if page.resolve() != README:
            (folder / "myproject").mkdir()
            (folder / "myproject" / "tasks.py").write_text(readme_project())
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ONTHEDOT_", "DJANGO_"))}
        bin_dir = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
        env["VIRTUAL_ENV"] = str(Path(sys.executable).parent.parent)
        env.pop("PYTHONPATH", None)
        return cls(page, folder, env, folder)

    def prepare(self, text: str) -> None:
        """Give the page what the block's text names ($DOCS_POSTGRES_URL)."""
        if "DOCS_POSTGRES_URL" in text:
            self.postgres_url()

    def write_file(self, path: str, source: str, *, append: bool = False, line: int = 0) -> None:
        """A block that is a file: written (or appended) under the page's folder; a Python
        file is compiled at once, so a syntax error points at the page's line."""
        target = self.cwd / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.suffix == ".py":
            try:
                compile("\n" * line + source, str(self.page), "exec", dont_inherit=True)
            except SyntaxError as exc:
                raise AssertionError(f"{path}: SyntaxError: {exc}") from None
        if append and target.exists():
            with target.open("a") as fh:
                fh.write("\n" + source)
        else:
            target.write_text(source)

    def kernel(self) -> Any:
        from tests.docs.kernel import Kernel

        if self._kernel is None:
            self._kernel = Kernel(self)
        return self._kernel

    def postgres_url(self) -> str:
        """A fresh, migrated PostgreSQL schema for this page (the URL is $DOCS_POSTGRES_URL)."""
        if self._schema is None:
            from onthedot import App
            from tests.conftest import new_pg_schema_url

            url, self._schema = new_pg_schema_url()
            app = App(url, log_events=False)
            try:
                app.migrate()
            finally:
                app.close()
            self.env["DOCS_POSTGRES_URL"] = url
        return self.env["DOCS_POSTGRES_URL"]

    def start(
        self, command: str, ready: Any, clean: frozenset[int], timeout: float = 60.0
    ) -> Background:
        """Run `command` in the background until the page ends, once its output shows
        `ready` (a compiled pattern); fail if it exits or stays silent before that."""
        log = self.folder / f".docs-background-{len(self.background)}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["bash", "-c", command],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        job = Background(command, process, log, clean)
        self.background.append(job)
        deadline = time.monotonic() + timeout
        while not ready.search(job.output()):
            if process.poll() is not None:
                self.background.remove(job)
                raise AssertionError(
                    f"`{command}` exited {process.returncode} before it was ready:\n{job.output()}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"`{command}` not ready after {timeout:.0f}s:\n{job.output()}")
            time.sleep(0.05)
        return job

    def close(self) -> None:
        errors: list[str] = []
        for job in reversed(self.background):
            try:
                job.stop()
            except AssertionError as exc:
                errors.append(str(exc))
        if self._kernel is not None:
            self._kernel.close()
        if self._schema is not None:
            from tests.conftest import drop_pg_schema

            drop_pg_schema(self._schema)
        shutil.rmtree(self.folder.parent, ignore_errors=True)
        if errors:
            raise AssertionError("\n\n".join(errors))


def workspace(example: Example) -> Workspace:
    """The session of the page `example` belongs to (made at its first block)."""
    ws: Workspace | None = example.namespace.get(KEY)
    if ws is None:
        ws = example.namespace[KEY] = Workspace.create(Path(example.path))
    ws.prepare(str(example.parsed))
    return ws


def close_workspace(namespace: dict[str, Any]) -> None:
    ws: Workspace | None = namespace.pop(KEY, None)
    if ws is not None:
        ws.close()
