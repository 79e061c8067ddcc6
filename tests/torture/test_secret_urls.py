"""A password in the database URL's query string (`?password=...`, libpq's `sslpassword`)
never reaches the output: the real `onthedot health` against a server that is down, a
malformed URL, and a real worker whose database is down (its `database_error` lines)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.torture.harness import APP, wait_for, worker_env
from tests.torture.webproc import ROOT, clean_env, free_port

SECRET = "s3cr3t-Pa55"


def _closed_url(**query: str) -> str:
    params = "&".join(f"{k}={v}" for k, v in query.items())
    return f"postgresql://onthedot@127.0.0.1:{free_port()}/db?{params}"


def _run(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onthedot", *args],
        cwd=ROOT,
        env=clean_env(url),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_health_never_prints_a_password_from_the_query_string(
    record_result: dict[str, object],
) -> None:
    urls = [
        _closed_url(password=SECRET, connect_timeout="2"),
        _closed_url(sslpassword=SECRET, application_name="x"),
        _closed_url(PASSWORD=SECRET),
        f"postgresql://onthedot:{SECRET}@127.0.0.1:{free_port()}/db?password={SECRET}",
        f"postgresql://onthedot@127.0.0.1:notaport/db?password={SECRET}",  # malformed
    ]
    for url in urls:
        result = _run("health", url=url)
        assert result.returncode == 1, result
        assert result.stderr.startswith("unhealthy: "), result.stderr
        assert SECRET not in result.stdout + result.stderr, result.stderr
        assert "***" in result.stderr, result.stderr
    record_result.update(urls=len(urls), leaked=0)


def test_worker_database_errors_never_print_a_password(
    tmp_path: Path, record_result: dict[str, object]
) -> None:
    log = tmp_path / "worker.log"
    url = _closed_url(password=SECRET, connect_timeout="1")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "onthedot", "--app", APP, "worker"],
            cwd=ROOT,
            env=worker_env(url),
            stdout=out,
            stderr=out,
        )
    try:
        wait_for(lambda: "event=database_error" in log.read_text(), "a database_error line")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    text = log.read_text()
    lines = [line for line in text.splitlines() if "event=database_error" in line]
    assert lines and all("password=***" in line for line in lines), text
    assert SECRET not in text, text
    record_result.update(database_error_lines=len(lines), leaked=0)
