"""`ping=`: the worker running a schedule's job calls `<ping>/start`, then `<ping>` or
`<ping>/fail`, healthchecks.io-style, from a thread of its own: a receiver that hangs never
holds the job up. A local receiver records the calls."""

from __future__ import annotations

import threading
from datetime import timedelta

from onthedot import App, JobState
from onthedot.observability.events import JobStarted
from onthedot.testing import check_health, drain, tick
from tests.receiver import Receiver, receiving
from tests.scheduler.helpers import MakeApp, utc
from tests.waiting import wait_for

T0 = utc(2030, 1, 1)
S = timedelta(seconds=1)


def ping_app(make_app: MakeApp, ping: str | None) -> App:
    app = make_app(T0, lease=30.0)

    @app.job(name="work", runtime=True)
    def work() -> None: ...

    @app.job(name="boom", max_attempts=1)
    def boom() -> None:
        raise RuntimeError("no")

    app.schedule("ok", "every 60s", work, ping=ping + "/ok" if ping else None)
    app.schedule("bad", "every 60s", boom, ping=ping + "/bad?rid=1" if ping else None)
    tick(app)
    return app


def calls(receiver: Receiver, n: int) -> list[str]:
    return wait_for(lambda: (p := receiver.paths()) and len(p) >= n and sorted(p), f"{n} pings")


def test_start_success_and_fail_are_pinged(make_app: MakeApp) -> None:
    with receiving() as receiver:
        app = ping_app(make_app, receiver.url)
        tick(app, T0 + 60 * S)
        assert drain(app) == 2
        assert calls(receiver, 4) == ["/bad/fail?rid=1", "/bad/start?rid=1", "/ok", "/ok/start"]
        ok = [p for p in receiver.paths() if p.startswith("/ok")]
        assert ok == ["/ok/start", "/ok"]  # in order


def test_a_hanging_receiver_never_holds_a_job_up(make_app: MakeApp) -> None:
    with receiving() as receiver:
        receiver.hold = threading.Event()  # every ping waits until released
        app = ping_app(make_app, receiver.url)
        tick(app, T0 + 60 * S)
        assert drain(app) == 2  # both jobs done while the first ping still hangs
        assert [j.state for j in app.list_jobs()] == [JobState.FAILED, JobState.SUCCEEDED]
        assert len(receiver.paths()) == 1
        receiver.hold.set()
        calls(receiver, 4)


def test_a_runtime_schedules_ping_comes_from_its_health_row(make_app: MakeApp) -> None:
    with receiving() as receiver:
        app = ping_app(make_app, None)
        app.schedules.create("dyn", "every 60s", "work", ping=receiver.url + "/dyn")
        tick(app, T0 + 60 * S)
        check_health(app, T0 + 61 * S)  # writes the ping applied to the health row
        assert app.storage.ping_targets() == {"dyn": receiver.url + "/dyn"}
        drain(app)
        assert calls(receiver, 2) == ["/dyn", "/dyn/start"]


def test_without_any_ping_no_job_event_is_built_for_it(make_app: MakeApp) -> None:
    app = ping_app(make_app, None)
    app.worker(burst=True, install_signals=False)
    assert not app.events.wants(JobStarted)
