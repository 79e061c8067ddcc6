"""A worker's own small HTTP server (`onthedot worker --metrics-port PORT`), on a daemon thread:

- `GET /metrics`: the Prometheus exposition (`metrics.render`); behind `Authorization: Bearer`
  when a metrics token is given ($ONTHEDOT_WEB_METRICS_TOKEN);
- `GET /healthz`: liveness, 200 while the process runs and its keeper loop is alive: its last
  heartbeat, or its last heartbeat attempt refused by an unreachable database, is younger
  than the lease (a database outage is readiness' business: the worker rides it out, and a
  restart would not help), 503 otherwise;
- `GET /readyz`: readiness, 200 when the database answers and its schema is current.

The probes never need the token: they tell nothing but ok or why not.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

from onthedot.observability.events import DatabaseError, Event, EventBus, WorkerHeartbeat

Answer = tuple[int, bytes, str]
TEXT = "text/plain; charset=utf-8"


class HeartbeatWatch:
    """Remembers when the keeper of `worker_id` last heartbeat, or last tried to and met an
    unreachable database (monotonic clock)."""

    def __init__(self, events: EventBus, worker_id: str, lease: float) -> None:
        self.worker_id = worker_id
        self.lease = lease
        self.started = time.monotonic()
        self.last: float | None = None
        self._unsubscribe = events.subscribe(self, WorkerHeartbeat, DatabaseError)

    def __call__(self, event: Event) -> None:
        if isinstance(event, WorkerHeartbeat) and event.worker_id == self.worker_id:
            self.last = time.monotonic()
        elif isinstance(event, DatabaseError) and event.where == "heartbeat":
            self.last = time.monotonic()  # the keeper runs; the database does not answer

    def close(self) -> None:
        self._unsubscribe()

    def problem(self) -> str | None:
        """Why this worker is not live, or None."""
        if self.last is None:
            return f"worker {self.worker_id}: no heartbeat yet"
        age = time.monotonic() - self.last
        if age > self.lease:
            return f"worker {self.worker_id}: last heartbeat {age:.1f}s ago (lease {self.lease}s)"
        return None


class ProbeServer:
    """Serves `routes` (path -> answer) on host:port until `stop()`: on a thread of its own
    (`start()`), or, with `threaded=False`, one request per `handle()` call from the caller's
    own loop (the supervisor, which must run no thread: it forks)."""

    def __init__(
        self,
        host: str,
        port: int,
        routes: dict[str, Callable[[], Answer]],
        *,
        token: str | None = None,
        protected: frozenset[str] = frozenset({"/metrics"}),
        threaded: bool = True,
    ) -> None:
        self.routes = routes
        self.token = token
        self.protected = protected
        handler = _handler(self)
        self.httpd = (
            ThreadingHTTPServer((host, port), handler)
            if threaded
            else HTTPServer((host, port), handler)
        )
        if isinstance(self.httpd, ThreadingHTTPServer):
            self.httpd.daemon_threads = True
        self.httpd.timeout = 0  # handle(): only called once the socket is readable
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, name="onthedot-metrics", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> ProbeServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.thread.is_alive():
            self.httpd.shutdown()
        self.httpd.server_close()

    def fileno(self) -> int:
        return self.httpd.fileno()

    def handle(self) -> None:
        """Serve one waiting request on the caller's thread."""
        self.httpd.handle_request()

    def answer(self, path: str, authorization: str | None) -> Answer:
        route = self.routes.get(path.split("?", 1)[0])
        if route is None:
            return 404, b"not found\n", TEXT
        if path in self.protected and self.token and not _bearer(authorization, self.token):
            return 401, b"a bearer token is required\n", TEXT
        try:
            return route()
        except Exception as exc:  # a probe answers, whatever broke
            return 503, f"unavailable: {type(exc).__name__}\n".encode(), TEXT


def _bearer(header: str | None, token: str) -> bool:
    scheme, _, value = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        value.strip().encode(), token.encode()
    )


def _handler(server: ProbeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 2.0  # a client that says nothing holds the (single-threaded) server no longer

        def do_GET(self) -> None:
            status, body, content_type = server.answer(self.path, self.headers.get("Authorization"))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # a scrape every few seconds is not worth a log line

    return Handler


def ok_or(problem: str | None) -> Answer:
    """200 "ok", or 503 with the problem."""
    if problem is None:
        return 200, b"ok\n", TEXT
    return 503, (problem + "\n").encode(), TEXT
