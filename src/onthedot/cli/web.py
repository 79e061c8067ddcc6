"""`onthedot web` (the web admin) and `onthedot dev` (a worker, the scheduler and the web admin
in one process, for local development)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING

import click

from onthedot.cli.context import Context, handle_errors, pass_ctx

if TYPE_CHECKING:
    from onthedot.app import App
    from onthedot.web.security import Credentials

START_TIMEOUT = 30.0


def _credentials(host: str) -> Credentials:
    """The admin's credentials from the environment; refuses to listen on a non-loopback
    `host` without them. Imported here: the web admin is an optional extra."""
    try:
        from onthedot.web.security import Credentials, check_bind
    except ImportError as exc:
        raise click.ClickException(
            f"the web admin needs its extra: pip install 'onthedot[web]' ({exc})"
        ) from None
    credentials = Credentials.from_env()
    check_bind(host, credentials)
    return credentials


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def _ready(app: App) -> None:
    """Fail fast, in one line, when the database does not answer or its schema is behind."""
    app.storage.ping()


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--read-only", is_flag=True, help="Hide every action; refuse POSTs with 403.")
@pass_ctx
@handle_errors
def web(ctx: Context, host: str, port: int, read_only: bool) -> None:
    """Serve the web admin. Any address but loopback needs $ONTHEDOT_WEB_USER and
    $ONTHEDOT_WEB_PASSWORD (HTTP Basic) or $ONTHEDOT_WEB_TOKEN (bearer)."""
    credentials = _credentials(host)
    import uvicorn

    from onthedot.web.factory import asgi
    from onthedot.web.hosts import served_hosts

    app = ctx.app()
    _ready(app)
    if not ctx.app_path:
        click.echo(
            "note: no --app given: schedules declared in code are unknown to this process "
            "and show as removed; pass --app module:attr",
            err=True,
        )
    mode = " (read-only)" if read_only else ""
    click.echo(f"onthedot web admin{mode} on {_url(host, port)}", err=True)
    uvicorn.run(
        asgi(app, read_only=read_only, credentials=credentials, allowed_hosts=served_hosts(host)),
        host=host,
        port=port,
        log_level="info",
        proxy_headers=False,
        server_header=False,
    )


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--queues", "-q", help="Comma-separated queues (default: every queue of the app).")
@click.option("--concurrency", "-c", default=4, show_default=True, type=click.IntRange(1, 1000))
@pass_ctx
@handle_errors
def dev(ctx: Context, host: str, port: int, queues: str | None, concurrency: int) -> None:
    """Run a worker, the scheduler and the web admin in one process (local development);
    prints the URL. Ctrl+C stops all three."""
    credentials = _credentials(host)
    import uvicorn

    from onthedot.web.factory import asgi
    from onthedot.web.hosts import served_hosts

    app = ctx.app(required=True)
    report = app.schedules.check()
    if not report.ok:
        click.echo(report.render(), err=True)
        click.echo("not started: fix the schedules above (`onthedot check`)", err=True)
        sys.exit(1)
    _ready(app)
    names = _queues(app, queues)
    config = uvicorn.Config(
        asgi(app, credentials=credentials, allowed_hosts=served_hosts(host)),
        host=host,
        port=port,
        log_level="warning",
        server_header=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="onthedot-web", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        server.should_exit = True
        raise click.ClickException(f"the web admin could not listen on {host}:{port}")
    bound = server.servers[0].sockets[0].getsockname()[1] if port == 0 else port
    click.echo(
        f"onthedot dev: web admin at {_url(host, bound)} · worker on {','.join(names)} "
        f"(concurrency {concurrency}) with the scheduler · Ctrl+C to stop",
        err=True,
    )
    sys.stderr.flush()
    worker = app.worker(queues=names, concurrency=concurrency)
    try:
        done = worker.run()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    click.echo(f"onthedot dev stopped ({worker.stop_reason}); {done} job(s) finished", err=True)


def _queues(app: App, option: str | None) -> list[str]:
    if option:
        names = [q.strip() for q in option.split(",") if q.strip()]
        if not names:
            raise click.BadParameter("give at least one queue", param_hint="--queues")
        return names
    found = {jf.queue for jf in app.jobs.values()}
    found |= {s.queue for s in app.schedules.declared().values() if s.queue}
    return sorted(found | {"default"})
