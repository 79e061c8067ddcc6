"""A page's Python session: one interpreter (`kernel_main.py`) per page, in the page's
folder, that runs the page's Python blocks one after another in one namespace, as a reader's
REPL would. It is started at the page's first Python block and stopped with the page."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.docs.workspace import Workspace

MAIN = Path(__file__).with_name("kernel_main.py")
TIMEOUT = 180.0


class Kernel:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.log = ws.folder / ".docs-python.log"
        to_kernel_r, self._to_kernel = os.pipe()
        self._from_kernel, from_kernel_w = os.pipe()
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-u", str(MAIN), str(to_kernel_r), str(from_kernel_w)],
                cwd=ws.cwd,
                env=ws.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                pass_fds=(to_kernel_r, from_kernel_w),
                start_new_session=True,
            )
        os.close(to_kernel_r)
        os.close(from_kernel_w)
        self._replies = os.fdopen(self._from_kernel, "r")

    def run(self, source: str, path: str, line: int) -> None:
        """Run one block; raise AssertionError with its traceback and output if it raised."""
        start = self.log.stat().st_size
        request = {"source": source, "path": path, "line": line}
        request.update(env=self.ws.env, cwd=str(self.ws.cwd))
        os.write(self._to_kernel, (json.dumps(request) + "\n").encode())
        reply = self._reply()
        if not reply["ok"]:
            with self.log.open("rb") as fh:
                fh.seek(start)
                output = fh.read().decode(errors="replace")
            raise AssertionError(
                f"{reply['error']}\n--- output of the block ---\n{output}".rstrip()
            )

    def _reply(self) -> dict[str, Any]:
        import select

        ready, _, _ = select.select([self._replies], [], [], TIMEOUT)
        if not ready:
            self.close()
            raise AssertionError(f"the block still ran after {TIMEOUT:.0f}s")
        text = self._replies.readline()
        if not text:
            code = self.process.wait()
            raise AssertionError(
                f"the Python session died (exit {code}):\n{self.log.read_text(errors='replace')}"
            )
        reply: dict[str, Any] = json.loads(text)
        return reply

    def close(self) -> None:
        os.close(self._to_kernel)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._replies.close()
