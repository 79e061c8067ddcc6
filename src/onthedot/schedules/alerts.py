"""The webhook notifier (`App(alert_webhook=...)` or $ONTHEDOT_ALERT_WEBHOOK): a small background
service in every worker that runs the scheduler. It claims the alerts the health check queued
(one claimer per alert across the fleet, held for a while), POSTs each as JSON with the
standard library's urllib (a timeout on every request), and records the attempt: sent, retried
later with a growing pause, or given up after MAX_ATTEMPTS.

Delivery: each alert is claimed in the database before its POST, so across the fleet one
process sends it. If that process dies between the POST and recording it, the claim expires
and another process sends it again: at least once on the wire, exactly once otherwise. Every
POST carries the same `id` (and an `Idempotency-Key` header) for a receiver to drop a repeat.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from datetime import datetime, timedelta
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

from onthedot.clock import Clock, backoff_delay
from onthedot.domain.errors import OnthedotError
from onthedot.domain.jobs import iso
from onthedot.domain.payload import JsonObject
from onthedot.domain.watch import AlertRecord, ProblemKind
from onthedot.schedules.outbound import send

if TYPE_CHECKING:
    from onthedot.storage.interface import Storage

log = logging.getLogger("onthedot.alerts")

ENV_WEBHOOK = "ONTHEDOT_ALERT_WEBHOOK"
ENV_ADMIN_URL = "ONTHEDOT_ADMIN_URL"
TIMEOUT = 10.0  # seconds per POST
HOLD = 3 * TIMEOUT  # a claim outlives one POST with room to record it
POLL = 2.0  # seconds between looks for alerts to send
MAX_ATTEMPTS = 10  # then given up (about an hour and a half of tries)
PRUNE_EVERY = 3600.0

_TITLES = {
    ProblemKind.LATE: "is late",
    ProblemKind.OVERRAN: "overran its max_runtime",
    ProblemKind.DEADLINE_MISSED: "missed its deadline",
    ProblemKind.FAILED: "failed",
}


def check_webhook_url(url: str, what: str = "alert_webhook") -> str:
    """`url` itself, or ValueError (one line) unless it is an http(s) URL with a host."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ValueError(f"{what} is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{what} must be an http:// or https:// URL with a host, got {url[:60]!r}")
    return url


def alert_body(alert: AlertRecord, admin_url: str | None) -> JsonObject:
    """The JSON a webhook receives: the problem, its cause, links, and a Slack `text`."""
    p = alert.problem
    base = (admin_url or "").rstrip("/")
    links: JsonObject = {
        "schedule": f"{base}/schedules/{quote(p.key, safe='')}",
        "health": f"{base}/health",
    }
    recovered = alert.event == "recovered"
    title = _TITLES.get(p.kind, str(p.kind))
    if recovered:
        text = (
            f":white_check_mark: onthedot: schedule `{p.key}` recovered ({p.kind} at slot "
            f"{iso(p.slot)}): {p.resolution}"
        )
    else:
        text = (
            f":rotating_light: onthedot: schedule `{p.key}` {title}: slot {iso(p.slot)}. "
            f"Cause: {p.detail}"
        )
    if admin_url:
        text += f" <{links['schedule']}|open>"
    return {
        "id": f"onthedot-{p.id}-{alert.event}",
        "event": alert.event,
        "schedule": p.key,
        "slot": iso(p.slot),
        "kind": str(p.kind),
        "cause": {"code": p.cause, "text": p.detail, "facts": p.facts},
        "opened_at": iso(p.opened_at),
        "resolved_at": iso(p.resolved_at),
        "resolution": p.resolution,
        "links": links,
        "text": text,
    }


class AlertNotifier:
    """Sends queued alerts to one webhook; `run` until `stop` (a thread of its own)."""

    def __init__(
        self,
        storage: Storage,
        url: str,
        *,
        worker_id: str,
        clock: Clock,
        admin_url: str | None = None,
        retention: timedelta = timedelta(days=7),
        timeout: float = TIMEOUT,
    ) -> None:
        self.storage = storage
        self.url = check_webhook_url(url)
        self.worker_id = worker_id
        self.clock = clock
        self.admin_url = admin_url
        self.retention = retention
        self.timeout = timeout
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self.run, name="onthedot-alerts", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout + 5)
            self._thread = None

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.deliver_once()
                self._prune()
            except OnthedotError as exc:  # the database is down: the next pass tries again
                log.warning("alert delivery paused: %s", exc)
            except Exception:
                log.exception("alert delivery failed")
            self.clock.sleep(POLL, self._stop)

    def deliver_once(self, limit: int = 20) -> int:
        """Claim and send due alerts; returns how many were sent."""
        sent = 0
        for alert in self.storage.claim_alerts(self.worker_id, limit=limit, hold=HOLD):
            if self._stop.is_set():
                break  # the claims expire; another process sends them
            error = self._post(alert_body(alert, self.admin_url))
            retry_at = None
            if error is not None and alert.attempts + 1 < MAX_ATTEMPTS:
                retry_at = self._now() + timedelta(
                    seconds=backoff_delay(alert.attempts, first=5.0, cap=1800.0)
                )
            elif error is not None:
                log.error(
                    "alert %s of schedule %r given up after %d attempts: %s",
                    alert.event, alert.problem.key, alert.attempts + 1, error,
                )  # fmt: skip
            self.storage.finish_alert(alert.id, self.worker_id, error=error, retry_at=retry_at)
            sent += error is None
        return sent

    def _post(self, body: JsonObject) -> str | None:
        """POST `body`; None when the receiver accepted it (2xx), else the error, one line."""
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "User-Agent": "onthedot-alerts",
                "Idempotency-Key": str(body["id"]),
            },
        )
        error = send(request, self.timeout)
        return None if error is None else f"webhook: {error}"

    def _prune(self) -> None:
        if self.storage.acquire_maintenance("prune-health", PRUNE_EVERY, self.worker_id):
            self.storage.prune_health(older_than=self._now() - self.retention)

    def _now(self) -> datetime:
        return self.storage.db_now()
