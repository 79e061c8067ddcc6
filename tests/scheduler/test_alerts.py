"""The webhook notifier: a local receiver gets one POST per problem and one per recovery (JSON
with schedule, slot, kind, cause, links and a Slack `text`), retried on failure, sent once
across several notifiers claiming at the same time; a bad URL is refused at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from onthedot import App, ManualClock
from onthedot.schedules.alerts import MAX_ATTEMPTS, AlertNotifier
from onthedot.testing import check_health, drain, tick
from tests.receiver import Receiver, receiving
from tests.scheduler.helpers import MakeApp, utc

T0 = utc(2030, 1, 1)
S = timedelta(seconds=1)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as found:
        yield found


def webhook_app(make_app: MakeApp, url: str, **options: Any) -> App:
    app = make_app(T0, lease=30.0, alert_webhook=url, **options)

    @app.job(name="work")
    def work() -> None: ...

    app.schedule("nightly-report", "every 60s", work, grace="10s")
    tick(app)
    return app


def notifier(app: App, worker_id: str = "w1") -> AlertNotifier:
    (service,) = app.scheduler(worker_id=worker_id).services
    assert isinstance(service, AlertNotifier)
    return service


def late_problem(app: App) -> None:
    tick(app, T0 + 60 * S)
    (problem,) = check_health(app, T0 + 71 * S)
    assert problem.open


def test_one_post_per_problem_and_recovery_with_the_whole_story(
    make_app: MakeApp, receiver: Receiver
) -> None:
    app = webhook_app(make_app, receiver.url + "/hooks/ops", admin_url="https://admin.example")
    late_problem(app)
    sender = notifier(app)
    assert sender.deliver_once() == 1
    assert sender.deliver_once() == 0  # sent: never again
    (body,) = receiver.posts()
    assert body["event"] == "problem" and body["schedule"] == "nightly-report"
    assert (body["slot"], body["kind"]) == ("2030-01-01T00:01:00Z", "late")
    assert body["cause"]["code"] == "no_live_worker"
    assert body["cause"]["text"] == "no live worker: no worker is registered"
    assert body["links"] == {
        "schedule": "https://admin.example/schedules/nightly-report",
        "health": "https://admin.example/health",
    }
    assert body["text"].startswith(
        ":rotating_light: onthedot: schedule `nightly-report` is late: slot "
        "2030-01-01T00:01:00Z. Cause: no live worker"
    )
    assert body["text"].endswith("<https://admin.example/schedules/nightly-report|open>")
    assert receiver.requests[0].path == "/hooks/ops"
    assert receiver.requests[0].headers["Idempotency-Key"] == body["id"]
    # The job runs: the problem ends, and one more POST says so.
    clock = app.clock
    assert isinstance(clock, ManualClock)
    clock.set(T0 + 80 * S)
    drain(app)
    (recovered,) = check_health(app, T0 + 90 * S)
    assert not recovered.open
    assert sender.deliver_once() == 1
    first, second = receiver.posts()
    assert second["event"] == "recovered" and second["id"] != first["id"]
    assert second["resolution"].startswith("job 1 of slot 2030-01-01T00:01:00Z started")
    assert second["text"].startswith(":white_check_mark: onthedot: schedule `nightly-report`")


def test_a_failed_post_is_retried_later_then_sent_once(
    make_app: MakeApp, receiver: Receiver
) -> None:
    app = webhook_app(make_app, receiver.url)
    late_problem(app)
    sender = notifier(app)
    receiver.statuses[:] = [500, 503]
    assert sender.deliver_once() == 0
    assert sender.deliver_once() == 0  # not due yet: the retry waits 5 s
    clock = app.clock
    assert isinstance(clock, ManualClock)
    clock.set(clock.now() + 5 * S)
    assert sender.deliver_once() == 0  # 503
    clock.set(clock.now() + 10 * S)
    assert sender.deliver_once() == 1
    assert [b["id"] for b in receiver.posts()] == ["onthedot-1-problem"] * 3
    assert sender.deliver_once() == 0


def test_an_unreachable_webhook_is_given_up_after_its_attempts(make_app: MakeApp) -> None:
    with receiving() as gone:
        url = gone.url
    app = webhook_app(make_app, url)  # nothing listens there any more
    late_problem(app)
    sender = notifier(app)
    clock = app.clock
    assert isinstance(clock, ManualClock)
    for _ in range(MAX_ATTEMPTS):
        assert sender.deliver_once() == 0
        clock.set(clock.now() + 2000 * S)
    assert app.storage.claim_alerts("any", limit=10, hold=30) == []  # given up for good


def test_notifiers_racing_send_each_alert_once(make_app: MakeApp, receiver: Receiver) -> None:
    apps = [webhook_app(make_app, receiver.url) for _ in range(3)]
    tick(apps[0], T0 + 60 * S)
    check_health(apps[0], T0 + 71 * S)
    senders = [notifier(app, f"w{i}") for i, app in enumerate(apps)]
    receiver.hold = threading.Event()  # every POST waits: the claims overlap
    threads = [threading.Thread(target=s.deliver_once) for s in senders]
    for t in threads:
        t.start()
    receiver.hold.set()
    for t in threads:
        t.join(30)
    assert len(receiver.posts()) == 1


def test_a_bad_webhook_url_is_refused_with_one_line(make_app: MakeApp) -> None:
    with pytest.raises(ValueError, match=r"^alert_webhook must be an http:// or https:// URL"):
        make_app(T0, alert_webhook="hooks.example.com/x")


def test_the_webhook_comes_from_the_environment(
    make_app: MakeApp, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONTHEDOT_ALERT_WEBHOOK", receiver.url)
    app = make_app(T0)
    assert app.scheduler().services != ()
    monkeypatch.delenv("ONTHEDOT_ALERT_WEBHOOK")
    assert make_app(T0).scheduler().services == ()
