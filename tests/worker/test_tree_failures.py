"""Issue 25 item 2: an error no restart can fix stops the whole tree with one line and a
non-zero exit (a missing extra, refused connection details, an unmigrated schema, a role that
may not write); only crashes during work are restarted; a worker process that cannot start is
given up, and the tree stops rather than run short-handed. Real processes, as a user runs
`onthedot worker`."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from onthedot import App
from tests.worker.tree import STARTS, onthedot, wait_or_kill

DEADLINE = 60  # seconds: before the fix, these runs never ended (restarts, or short-handed)


@pytest.fixture
def app(pg_url: str) -> Iterator[App]:
    application = App(pg_url, log_events=False)
    application.job(name="nap.nap")(lambda seconds: None)
    application.migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE nap_started (job_id bigint PRIMARY KEY, pid integer)")
    yield application
    application.close()


def lines(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("burst", [False, True])
def test_a_missing_extra_stops_the_tree_with_one_line(
    app: App, pg_url: str, tmp_path: Path, burst: bool
) -> None:
    """`--metrics-port` without prometheus_client: before, the children were restarted with
    growing delays while no job ran; with --burst the command exited 0 having done nothing."""
    hidden = tmp_path / "hidden"
    (hidden / "prometheus_client").mkdir(parents=True)
    (hidden / "prometheus_client" / "__init__.py").write_text(
        "raise ImportError(\"No module named 'prometheus_client'\")\n"
    )
    app.jobs["nap.nap"].enqueue(0.01)
    log = tmp_path / "tree.log"
    args = ["worker", "--processes", "2", "--metrics-port", "0", *(["--burst"] if burst else [])]
    proc = onthedot(pg_url, log, *args, env={"PYTHONPATH": str(hidden)})
    code = wait_or_kill(proc, DEADLINE)
    output = log.read_text()
    assert code == 1, output
    assert "pip install 'onthedot[prometheus]'" in output.splitlines()[-1], output
    assert "worker_process_restarted" not in output
    assert "worker_started" not in output  # no child ran


def test_refused_connection_details_stop_the_tree(app: App, pg_url: str, tmp_path: Path) -> None:
    """No such database: before, each child waited for the database for ever."""
    parts = urlsplit(pg_url)
    missing = urlunsplit(parts._replace(path=f"/no_db_{uuid.uuid4().hex[:8]}"))
    log = tmp_path / "tree.log"
    proc = onthedot(missing, log, "worker", "--processes", "2")
    code = wait_or_kill(proc, DEADLINE)
    output = lines(log)
    assert code == 1, output
    assert "does not exist" in output[-1] and "refused the connection" in output[-1], output
    assert not any("worker_started" in line for line in output)


def test_an_unmigrated_schema_stops_the_tree(pg_url: str, tmp_path: Path) -> None:
    log = tmp_path / "tree.log"
    proc = onthedot(pg_url, log, "worker", "--processes", "2")
    code = wait_or_kill(proc, DEADLINE)
    output = lines(log)
    assert code == 1, output
    assert "run `onthedot migrate`" in output[-1], output


@pytest.mark.parametrize("start", STARTS)
def test_an_error_only_a_child_meets_stops_the_tree_with_its_line(
    app: App, pg_url: str, tmp_path: Path, start: str
) -> None:
    """A role that may read onthedot's tables but not write them: the supervisor's checks
    pass, each child is refused as it registers. Before, that child's ClickException was a
    quick failure, restarted with growing delays."""
    role = f"ro_{uuid.uuid4().hex[:8]}"
    schema = psycopg.conninfo.conninfo_to_dict(pg_url)["options"].split("=", 1)[1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    try:
        parts = urlsplit(pg_url)
        url = urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port}"))
        log = tmp_path / "tree.log"
        proc = onthedot(url, log, "worker", "--processes", "2", "--no-scheduler", start=start)
        code = wait_or_kill(proc, DEADLINE)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE "{role}"')
    output = lines(log)
    assert code == 1, output
    assert "permission denied" in output[-1] and "onthedot's role needs" in output[-1], output
    assert not any("worker_process_restarted" in line for line in output), output


@pytest.mark.slow
@pytest.mark.parametrize("start", STARTS)
def test_a_process_that_cannot_start_is_given_up_and_the_tree_stops(
    app: App, pg_url: str, tmp_path: Path, start: str
) -> None:
    """Worker process 1 dies every time it starts, process 0 runs fine. Before, the
    supervisor gave slot 1 up with one ERROR line and ran on with half its processes."""
    log = tmp_path / "tree.log"
    env = {"NAP_DIE_AT_START": "1"}
    proc = onthedot(pg_url, log, "worker", "--processes", "2", start=start, env=env)
    code = wait_or_kill(proc, DEADLINE)
    output = lines(log)
    assert code == 1, output
    assert output[-1].startswith("Error: worker process 1 failed to start 5 times in a row"), output
    assert "exit code 3" in output[-1]
    restarts = [line for line in output if "worker_process_restarted" in line]
    assert len(restarts) == 4 and all("process=1" in line for line in restarts), restarts
