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


# Issue 24 item 3: the password forms `mask_url` missed, through the real CLI. The pieces of
# each password (QXZJ, KVWQ, ...) appear nowhere else in a URL or a message.
PIECES = ("QXZJ", "KVWQ", "WJQZ")


def _forms() -> list[str]:
    port = free_port()  # closed: a connection is refused
    server = "postgresql://onthedot:{}@127.0.0.1:{}/db"
    return [
        f"host=127.0.0.1 port={port} user=onthedot password=QXZJ-KVWQ dbname=db",  # keyword
        f"host=127.0.0.1 port={port} password='QXZJ KVWQ' dbname=db",
        f"host=127.0.0.1 port={port} password='QXZJ",  # unterminated quote
        server.format("QXZJ#KVWQ", port),  # unencoded #, ?, /, @
        server.format("QXZJ?KVWQ", port),
        server.format("QXZJ/KVWQ", port),
        server.format("QXZJ@KVWQ", port),
        server.format("QXZJ%zzKVWQ", port),  # a bad percent escape
        server.format("QXZJ%2", port),
        server.format("QXZJ", port).replace("@127.0.0.1:", "@[::1:"),  # libpq quotes it all
        f"postgresql://onthedot@127.0.0.1:{port}/db?password=QXZJ#KVWQ&connect_timeout=2",
        f"postgresql://onthedot@127.0.0.1:{port}/db?password=QXZJ%zzKVWQ",
        f"postgresql://onthedot@127.0.0.1:{port}/db?password=QXZJ&KVWQ",
        f"postgresql://onthedot@127.0.0.1:{port}/db?sslpassword=QXZJ&WJQZ=KVWQ",
        f"postgresql://onthedot:QXZJ%40KVWQ@127.0.0.1:{port}/db",  # encoded: refused connection
    ]


def test_no_password_of_any_url_form_in_the_cli_output(record_result: dict[str, object]) -> None:
    leaks = []
    for url in _forms():
        for args in (("health",), ("jobs", "list")):
            result = _run(*args, url=url)
            out = result.stdout + result.stderr
            assert result.returncode != 0, (url, out)
            assert len(out.strip().splitlines()) == 1, (url, out)
            leaks += [(url, out) for piece in PIECES if piece in out]
    assert leaks == []
    record_result.update(urls=len(_forms()), leaked=0)


def test_a_refused_connection_with_a_password_prints_no_password() -> None:
    """The server itself answers (a database that does not exist), with the password given
    in every place a URL can hold it."""
    from tests.conftest import _pg_base_url

    base = _pg_base_url()  # postgresql://postgres@host:port/onthedot_tests (trust auth)
    host = base.split("@", 1)[1].rsplit("/", 1)[0]
    urls = [
        f"postgresql://postgres:QXZJ%23KVWQ@{host}/no_such_db",
        f"postgresql://postgres@{host}/no_such_db?password=QXZJ%26KVWQ",
        f"host={host.split(':')[0]} port={host.split(':')[1]} user=postgres password=QXZJ",
    ]
    for url in urls:
        out = _run("health", url=url)
        text = out.stdout + out.stderr
        assert out.returncode == 1, text
        assert not [p for p in PIECES if p in text], (url, text)
    first = _run("health", url=urls[0])
    assert 'database "no_such_db" does not exist' in first.stderr, first.stderr
