"""Outbound heartbeats (`ping=`), healthchecks.io-style: when a schedule's job starts, the
worker running it calls `<ping>/start`; when it succeeds, `<ping>`; when it fails for good,
`<ping>/fail`. An outside monitor then sees a dead fleet by the absence of pings.

Never on the job's path: the event subscriber only looks the schedule up in a dict and puts a
request on a bounded queue; a thread of its own sends it (a timeout per request, two quick
retries, then dropped with a warning). Which schedules have a ping: the code's declarations,
and the health rows (runtime schedules and an operator's overrides), read every REFRESH
seconds by that thread. While no schedule has one, the subscriber wants no event at all, so
the executors build none."""

from __future__ import annotations

import logging
import queue
import threading
import urllib.request
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit, urlunsplit

from onthedot.clock import REAL, Clock
from onthedot.domain.errors import DatabaseUnavailable, OnthedotError, SchemaOutOfDate
from onthedot.domain.expectations import redact
from onthedot.observability.events import Event, JobFailed, JobStarted, JobSucceeded
from onthedot.schedules.outbound import send

log = logging.getLogger("onthedot.pings")

TIMEOUT = 5.0
RETRIES = (1.0, 3.0)  # pauses before the second and third try
REFRESH = 30.0
QUEUE_SIZE = 1000
_SUFFIX: dict[type[Event], str] = {JobStarted: "/start", JobSucceeded: "", JobFailed: "/fail"}


def ping_url(base: str, suffix: str) -> str:
    """`base` with `suffix` appended to its path (before any query string)."""
    parts = urlsplit(base)
    return urlunsplit(
        parts._replace(path=parts.path.rstrip("/") + suffix if suffix else parts.path)
    )


class Pinger:
    """Subscribe it to the app's events (all of them: it says which it wants); `start` its
    thread. `declared`: the code's pings by schedule key; `stored`: the database's."""

    def __init__(
        self,
        declared: Callable[[], Mapping[str, str]],
        stored: Callable[[], Mapping[str, str]],
        *,
        timeout: float = TIMEOUT,
        refresh: float = REFRESH,
        clock: Clock = REAL,
    ) -> None:
        self._declared = declared
        self.clock = clock  # paces the refresh of the stored targets
        self._stored = stored
        self.timeout = timeout
        self.refresh = refresh
        self.urls: dict[str, str] = {}
        self._queue: queue.Queue[str] = queue.Queue(QUEUE_SIZE)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.sent = 0  # pings the receiver accepted (for tests and diagnostics)

    # -- the subscriber (runs on the worker's threads: never blocks) ---------------------------
    def accepts(self, event_type: type[Event]) -> bool:
        return event_type in _SUFFIX and bool(self.urls)

    def __call__(self, event: Event) -> None:
        key = getattr(event, "schedule_key", None)
        url = self.urls.get(key) if key is not None else None
        if url is None:
            return
        try:
            self._queue.put_nowait(ping_url(url, _SUFFIX[type(event)]))
        except queue.Full:
            log.warning("ping of schedule %r dropped: %d pings waiting", key, QUEUE_SIZE)

    # -- the sender ----------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._load(stored=False)  # the code's at once; the database's on the thread
                self._stop.clear()
                self._thread = threading.Thread(
                    target=self._run, name="onthedot-pings", daemon=True
                )
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(self.timeout * 3 + 5)

    def _load(self, *, stored: bool) -> None:
        urls = dict(self._declared())
        if stored:
            try:
                urls.update(self._stored())
            except (DatabaseUnavailable, SchemaOutOfDate) as exc:
                # The worker says this once per retry itself (event=database_error): a second
                # line for the same cause would only add noise while it waits for the database.
                log.debug("ping targets not refreshed: %s", exc)
                urls = {**self.urls, **urls}
            except OnthedotError as exc:
                log.warning("ping targets not refreshed: %s", exc)
                urls = {**self.urls, **urls}
        self.urls = urls

    def _run(self) -> None:
        next_load = float("-inf")
        while not self._stop.is_set():
            if self.clock.monotonic() >= next_load:
                self._load(stored=True)
                next_load = self.clock.monotonic() + self.refresh
            try:
                url = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            self._send(url)

    def _send(self, url: str) -> None:
        error = None
        for pause in (0.0, *RETRIES):
            if pause and self._stop.wait(pause):
                return
            error = self._get(url)
            if error is None:
                self.sent += 1
                return
        log.warning("ping %s failed: %s", redact(url), error)

    def _get(self, url: str) -> str | None:
        request = urllib.request.Request(url, headers={"User-Agent": "onthedot-pings"})
        return send(request, self.timeout)
