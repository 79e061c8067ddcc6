"""A primary and a streaming standby of our own, for failover tests (never the shared server).

The primary is a `PrivateCluster` (initdb, trust, which also allows replication from
127.0.0.1); the standby is made from it by `pg_basebackup -R -X stream` and started on a port of
its own. Synchronous: the primary runs with `synchronous_standby_names = '*'`, so a commit
returns only once the standby has flushed it. The standby runs with no synchronous standby of
its own, so once promoted it commits alone. `crash_primary()` SIGKILLs the postmaster and every
one of its processes (a machine gone, not a shutdown); `promote()` is `pg_ctl promote`.
"""

from __future__ import annotations

import os
import shutil
import signal
import uuid
from pathlib import Path

import psycopg

from tests.torture.pgcluster import PrivateCluster, free_port


class Node(PrivateCluster):
    """A PrivateCluster with extra server settings, or a standby copied from a primary."""

    def __init__(self, extra: str, primary: Node | None = None) -> None:
        self.extra = extra
        if primary is None:
            super().__init__()
            return
        self.bindir = primary.bindir
        self.settings = primary.settings
        self.env = primary.env
        self.root = Path("/tmp") / f"onthedot-torture-pg-{uuid.uuid4().hex[:10]}"
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        self._make_root()
        try:
            self._run(
                "pg_basebackup", "-D", str(self.data), "-R", "-X", "stream", "-c", "fast",
                "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
            )  # fmt: skip
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _options(self) -> str:
        return f"{super()._options()} {self.extra}"

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def crash(self) -> None:
        """SIGKILL the postmaster and all its children at once."""
        pid = self.postmaster_pid()
        children = [
            int(entry.name)
            for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and _parent(entry) == pid
        ]
        for victim in [pid, *children]:
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _parent(proc: Path) -> int:
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        return -1
    return int(stat.rpartition(")")[2].split()[1])


class ReplicatedPair:
    """A primary and one streaming standby; `url(db)` names both, read-write first."""

    def __init__(self, *, synchronous: bool) -> None:
        self.synchronous = synchronous
        sync = '-c "synchronous_standby_names=*"' if synchronous else ""  # quoted: no glob
        self.primary = Node(f"-c wal_level=replica -c max_wal_senders=5 {sync}")
        self.standby: Node | None = None
        try:
            self.primary.start()
            self.standby = Node("-c synchronous_standby_names=", primary=self.primary)
            self.standby.start()
        except BaseException:
            self.remove()
            raise

    def create_database(self, name: str) -> str:
        self.primary.create_database(name)
        return self.url(name)

    def url(self, database: str) -> str:
        assert self.standby is not None
        hosts = f"127.0.0.1:{self.primary.port},127.0.0.1:{self.standby.port}"
        return (
            f"postgresql://postgres@{hosts}/{database}"
            "?target_session_attrs=read-write&connect_timeout=3"
        )

    def replication_state(self) -> str:
        """The standby's state as the primary sees it: `sync`, `async` or '' (not streaming)."""
        with psycopg.connect(self.primary.admin_url, autocommit=True) as conn:
            row = conn.execute("SELECT sync_state FROM pg_stat_replication").fetchone()
        return str(row[0]) if row else ""

    def crash_primary(self) -> None:
        self.primary.crash()

    def promote(self) -> None:
        assert self.standby is not None
        self.standby._run("pg_ctl", "-D", str(self.standby.data), "-w", "-t", "60", "promote")

    def remove(self) -> None:
        for node in (self.standby, self.primary):
            if node is not None:
                try:
                    node.remove()
                except Exception:
                    shutil.rmtree(node.root, ignore_errors=True)
