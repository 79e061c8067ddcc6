"""A private, throwaway PostgreSQL cluster for tests that stop, kill or restart the server.

The shared server on 127.0.0.1:5432 is never touched: `initdb` builds a cluster in a temporary
folder owned by the `postgres` user, `pg_ctl` starts it on a free port (TCP on 127.0.0.1 and a
socket in that folder), and the folder is removed at teardown. `restart()` is `pg_ctl restart -m
fast`, which is what Debian's `pg_ctlcluster <version> <name> restart` runs for a packaged
cluster; `stop("immediate")` is a crash of the server (no shutdown checkpoint).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import psycopg


def _bindir() -> Path | None:
    """The PostgreSQL server binaries (initdb, pg_ctl), newest version first."""
    explicit = os.environ.get("ONTHEDOT_TEST_PG_BINDIR")
    candidates = [explicit] if explicit else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def unavailable_reason() -> str | None:
    """Why a private cluster cannot be built here, or None when it can."""
    if _bindir() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl) found"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root but there is no `postgres` user to own the cluster"
        if shutil.which("runuser") is None:
            return "running as root but `runuser` is missing"
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateCluster:
    """One PostgreSQL cluster of our own: `start`, `stop`, `restart`, `remove`."""

    def __init__(self, *settings: str, env: dict[str, str] | None = None) -> None:
        """`settings`: more server settings, `name=value` each (passed as `-c name=value`);
        `env`: more environment for the server processes (e.g. libfaketime's)."""
        bindir = _bindir()
        assert bindir is not None, unavailable_reason()
        self.bindir = bindir
        # Under /tmp itself: pytest's own temporary folders are private to the test user.
        self.root = Path("/tmp") / f"onthedot-torture-pg-{uuid.uuid4().hex[:10]}"
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        self.settings = settings
        self.env = env or {}
        self._make_root()
        try:
            self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-N")
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _make_root(self) -> None:
        if self.as_root:
            subprocess.run(
                ["install", "-d", "-o", "postgres", "-m", "0700", str(self.root)], check=True
            )
        else:
            self.root.mkdir(mode=0o700)

    def _run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.bindir / tool), *args]
        if self.env:
            command = ["env", *(f"{k}={v}" for k, v in self.env.items()), *command]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise RuntimeError(
                f"{tool} {' '.join(args)} failed ({result.returncode}): "
                f"{result.stdout}{result.stderr}{self.server_log()[-2000:]}"
            )
        return result

    def server_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    @property
    def admin_url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _options(self) -> str:
        # fsync=off only spares the disk: a server crash (`stop -m immediate`) keeps the OS page
        # cache. Commits stay synchronous: an acknowledged commit must survive the crash.
        return (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c max_connections=200" + "".join(f" -c {setting}" for setting in self.settings)
        )

    def running(self) -> bool:
        return self._run("pg_ctl", "-D", str(self.data), "status", check=False).returncode == 0

    def start(self) -> None:
        if not self.running():
            self._run(
                "pg_ctl", "-D", str(self.data), "-o", self._options(), "-l", str(self.log),
                "-w", "-t", "60", "start",
            )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """`fast`: disconnect everyone and shut down cleanly; `immediate`: a crash."""
        if self.running():
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def restart(self) -> None:
        """`pg_ctl restart -m fast` (Debian: `pg_ctlcluster <version> <name> restart`)."""
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", self._options(), "-l", str(self.log),
            "-m", "fast", "-w", "-t", "60", "restart",
        )  # fmt: skip

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def remove(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
