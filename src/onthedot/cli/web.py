"""`onthedot web` (the web admin) and `onthedot dev` (a worker, the scheduler and the web admin
in one process, for local development)."""

from __future__ import annotations

import errno
import ipaddress
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import click

from onthedot.cli.context import Context, app_queues, handle_errors, pass_ctx

if TYPE_CHECKING:
    from onthedot.app import App
    from onthedot.web.security import Credentials

P = ParamSpec("P")
R = TypeVar("R")
START_TIMEOUT = 30.0
# Whose X-Forwarded-Proto / X-Forwarded-For are believed: a TLS proxy on this machine (the
# documented setup) by default; never a client's own.
ENV_FORWARDED = "ONTHEDOT_WEB_FORWARDED_ALLOW_IPS"
LOOPBACK_PROXIES = "127.0.0.1,::1"


def forwarded_option(fn: Callable[P, R]) -> Callable[P, R]:
    return click.option(
        "--forwarded-allow-ips",
        "forwarded",
        default=LOOPBACK_PROXIES,
        show_default=True,
        envvar=ENV_FORWARDED,
        metavar="IPS",
        help="Comma-separated addresses or networks of the proxies whose X-Forwarded-Proto "
        "and X-Forwarded-For are believed (HTTPS cookies get Secure, logins count the "
        "client's address); '' for none, '*' for any. Also $" + ENV_FORWARDED + ".",
    )(fn)


def _proxies(value: str) -> list[str]:
    """The trusted proxies of --forwarded-allow-ips, each an address, a network or `*`."""
    found = [v.strip() for v in value.split(",") if v.strip()]
    for item in found:
        try:
            if item != "*":
                ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise click.BadParameter(
                f"{item[:60]!r} is not an IP address or network: give the proxy's address, "
                "e.g. 127.0.0.1 or 10.0.0.0/8",
                param_hint="--forwarded-allow-ips",
            ) from None
    return found


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
    app.operations.ping()


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--read-only", is_flag=True, help="Hide every action; refuse POSTs with 403.")
@forwarded_option
@pass_ctx
@handle_errors
def web(ctx: Context, host: str, port: int, read_only: bool, forwarded: str) -> None:
    """Serve the web admin. Any address but loopback needs $ONTHEDOT_WEB_USER and
    $ONTHEDOT_WEB_PASSWORD (HTTP Basic) or $ONTHEDOT_WEB_TOKEN (bearer)."""
    proxies = _proxies(forwarded)
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
    sock = _bind(host, port)
    mode = " (read-only)" if read_only else ""
    bound = sock.getsockname()[1]
    click.echo(f"onthedot web admin{mode} on {_url(host, bound)} ({ctx.describe()})", err=True)
    config = uvicorn.Config(
        asgi(app, read_only=read_only, credentials=credentials, allowed_hosts=served_hosts(host)),
        host=host,
        port=bound,
        log_level="info",
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies or None,
        server_header=False,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl+C: uvicorn re-raises it once it has shut down
        pass


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port, or one `Error:` line saying the port is taken and how
    to choose another (the socket is handed to uvicorn, so nothing else can take it first)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise click.ClickException(
                f"port {port} on {host} is already in use (another onthedot web or dev?): "
                f"choose another with --port, e.g. --port {port + 1 if port < 65535 else 8080}"
            ) from None
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option("--queues", "-q", help="Comma-separated queues (default: every queue of the app).")
@click.option("--concurrency", "-c", default=4, show_default=True, type=click.IntRange(1, 1000))
@forwarded_option
@pass_ctx
@handle_errors
def dev(
    ctx: Context, host: str, port: int, queues: str | None, concurrency: int, forwarded: str
) -> None:
    """Run a worker, the scheduler and the web admin in one process (local development);
    prints the URL. Ctrl+C stops all three."""
    proxies = _proxies(forwarded)
    credentials = _credentials(host)
    import uvicorn

    from onthedot.web.factory import asgi
    from onthedot.web.hosts import served_hosts

    app = ctx.app(required=True)
    report = app.schedules.check()
    if not report.ok:
        click.echo(report.render(), err=True)
        click.echo(f"not started: fix the schedules above (`{app.commands('check')}`)", err=True)
        sys.exit(1)
    _ready(app)
    names = app_queues(app, queues)
    sock = _bind(host, port)
    config = uvicorn.Config(
        asgi(app, credentials=credentials, allowed_hosts=served_hosts(host)),
        host=host,
        port=port,
        log_level="warning",
        proxy_headers=bool(proxies),
        forwarded_allow_ips=proxies or None,
        server_header=False,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="onthedot-web", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not server.started:
        server.should_exit = True
        raise click.ClickException(f"the web admin could not listen on {host}:{port}")
    bound = sock.getsockname()[1]
    click.echo(
        f"onthedot dev: web admin at {_url(host, bound)} · worker on {','.join(names)} "
        f"(concurrency {concurrency}) with the scheduler · Ctrl+C to stop",
        err=True,
    )
    sys.stderr.flush()
    worker = app.worker(queues=names, concurrency=concurrency)
    try:
        worker.run()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    click.echo(f"onthedot dev stopped ({worker.stop_reason}); {worker.tally.describe()}", err=True)
