"""A private PgBouncer (Debian's package) in transaction mode, in front of a PostgreSQL server.

`PgBouncer(host, port)` writes its configuration into a folder of its own under /tmp, starts
`pgbouncer` on a free port of 127.0.0.1 (as the `postgres` user when the tests run as root:
PgBouncer refuses to run as root) with `pool_mode = transaction` and `auth_type = trust`, and
serves every database of that server (`* = host=... port=...`). `stop()` ends that one process
and removes the folder. `pgbouncer_or_skip()` skips without the binary, or fails under CI=true.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import psycopg
import pytest

BINARY_CANDIDATES = ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer")


def pgbouncer_binary() -> str | None:
    found = shutil.which("pgbouncer")
    if found:
        return found
    return next((path for path in BINARY_CANDIDATES if Path(path).exists()), None)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgBouncer:
    """One PgBouncer process of our own, in transaction mode."""

    def __init__(self, server_host: str, server_port: int, *, pool_size: int = 20) -> None:
        binary = pgbouncer_binary()
        assert binary is not None, "pgbouncer is not installed (Debian: apt-get install pgbouncer)"
        self.as_root = os.geteuid() == 0
        self.root = Path("/tmp") / f"onthedot-pgbouncer-{uuid.uuid4().hex[:10]}"
        self.port = _free_port()
        self.log = self.root / "pgbouncer.log"
        self.root.mkdir(mode=0o755)
        (self.root / "users.txt").write_text('"postgres" ""\n')
        (self.root / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={server_host} port={server_port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            f"unix_socket_dir = {self.root}\n"
            "auth_type = trust\n"
            f"auth_file = {self.root / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\n"
            "max_client_conn = 1000\n"
            # psycopg sends no startup options, but tests may set extra_float_digits
            "ignore_startup_parameters = extra_float_digits\n"
            f"logfile = {self.log}\n"
            f"pidfile = {self.root / 'pgbouncer.pid'}\n"
        )
        if self.as_root:
            subprocess.run(["chown", "-R", "postgres", str(self.root)], check=True)
        command = [binary, str(self.root / "pgbouncer.ini")]
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        with open(self.root / "stderr.txt", "wb") as err:
            self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = (self.root / "stderr.txt").read_text(errors="replace")
                raise RuntimeError(
                    f"pgbouncer exited ({self.process.returncode}): {err}{self.logs()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)  # a process starting up: there is nothing to wait on but the port
        raise RuntimeError(f"pgbouncer did not listen on {self.port}: {self.logs()}")

    def logs(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def url(self, database: str, query: str = "") -> str:
        """A URL through PgBouncer, with onthedot's `pooler=transaction`."""
        extra = f"&{query}" if query else ""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}?pooler=transaction{extra}"

    def server_connections(self, database: str) -> int:
        """Server connections PgBouncer holds for `database` (its admin console)."""
        admin = f"postgresql://postgres@127.0.0.1:{self.port}/pgbouncer"
        with psycopg.connect(admin, autocommit=True, prepare_threshold=None) as conn:
            cur = conn.execute("SHOW SERVERS")
            assert cur.description is not None
            names = [c.name for c in cur.description]
            return sum(1 for row in cur.fetchall() if row[names.index("database")] == database)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:  # PgBouncer itself (under runuser when root): SIGINT is its immediate shutdown
                os.kill(int((self.root / "pgbouncer.pid").read_text().strip()), signal.SIGINT)
            except (OSError, ValueError):
                self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        shutil.rmtree(self.root, ignore_errors=True)


def pgbouncer_or_skip() -> None:
    """Skip when pgbouncer is missing; under CI=true, fail instead."""
    from tests.conftest import IN_CI

    if pgbouncer_binary() is None:
        message = "pgbouncer is not installed (Debian: apt-get install pgbouncer)"
        if IN_CI:
            pytest.fail(message + " (required under CI=true)")
        pytest.skip(message)
