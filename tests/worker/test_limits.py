"""Flow control through the App and a real worker (docs/limits.md): the issue's spellings,
declaration errors in one line, keys computed at enqueue, limits held across a worker's
threads, overrides, and what holds a queued job."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

import pytest

from onthedot import App, JobState


def burst(app: App, **options: Any) -> None:
    options.setdefault("install_signals", False)
    options.setdefault("scheduler", False)
    app.worker(burst=True, **options).run()


class Overlap:
    """The most jobs of each key that ran at once, as the jobs themselves saw it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: dict[object, int] = defaultdict(int)
        self.most: dict[object, int] = defaultdict(int)

    def run(self, key: object) -> None:
        with self.lock:
            self.now[key] += 1
            self.most[key] = max(self.most[key], self.now[key])
        time.sleep(0.02)  # long enough for other threads to start beside it
        with self.lock:
            self.now[key] -= 1


def test_the_issues_spellings_run_as_written(app: App) -> None:
    seen = Overlap()

    @app.job(concurrency=5)
    def sync_inventory() -> None:
        seen.run("inventory")

    @app.job(concurrency=1, key="tenant_id")
    def rebuild_report(tenant_id: int) -> None:
        seen.run(("tenant", tenant_id))

    @app.job(rate="10/s", key="host", burst=20)
    def call_api(host: str, path: str) -> None: ...

    app.limit("stripe", concurrency=20, rate="100/s")

    @app.job(limits=["stripe"])
    def charge(customer_id: int, cents: int) -> None: ...

    ids = [sync_inventory.enqueue() for _ in range(12)]
    ids += [rebuild_report.enqueue(t % 3) for t in range(12)]
    ids += [call_api.enqueue("example.org", f"/{i}") for i in range(5)]
    ids += [charge.enqueue(c, 100) for c in range(5)]
    burst(app, concurrency=8)
    assert {app.get_job(i).state for i in ids} == {JobState.SUCCEEDED}  # type: ignore[union-attr]
    assert seen.most["inventory"] <= 5
    assert all(seen.most[("tenant", t)] == 1 for t in range(3))


def test_the_key_is_computed_at_enqueue_and_stored(app: App) -> None:
    @app.job(concurrency=1, key=lambda customer, amount=0: customer["id"])
    def pay(customer: dict[str, int], amount: int = 0) -> None: ...

    app.limit("per-region", concurrency=2, key="region")

    @app.job(limits=["per-region"], concurrency=3, key="region")
    def ship(region: str = "eu") -> None: ...

    pay_id = pay.enqueue({"id": 42}, amount=3)
    ship_id = ship.enqueue()
    assert app.storage.job_limits(pay_id)[4] == [f"{pay.name}|42"]  # type: ignore[index]
    assert app.storage.job_limits(ship_id)[4] == [  # type: ignore[index]
        f"{ship.name}|region=eu",
        "per-region|region=eu",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"rate": "ten"}, "rate='ten' is not a rate"),
        ({"rate": "0/s"}, "is not a rate"),
        ({"concurrency": 0}, "concurrency=0 must be a whole number >= 1"),
        ({"concurrency": True}, "concurrency=True must be a whole number"),
        ({"concurrency": 1, "key": "tenant"}, "key='tenant' names no parameter of the job"),
        ({"limits": ["nope"]}, "limits= names 'nope', which is not declared"),
        ({"burst": 3, "concurrency": 1}, "burst= needs rate="),
        ({"rate": "1/s", "burst": 0}, "burst=0 must be a whole number >= 1"),
    ],
)
def test_bad_declarations_fail_in_one_line(app: App, options: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError)) as caught:

        @app.job(**options)
        def report(tenant_id: int) -> None: ...

    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_named_limit_is_checked_at_declaration(app: App) -> None:
    with pytest.raises(ValueError, match="a limit needs concurrency= or rate="):
        app.limit("empty")
    with pytest.raises(ValueError, match="limit name 'a b' is invalid"):
        app.limit("a b", concurrency=1)


def test_the_limit_shared_by_two_jobs_counts_both(app: App) -> None:
    seen = Overlap()
    app.limit("db", concurrency=2)

    @app.job(limits=["db"])
    def a() -> None:
        seen.run("db")

    @app.job(limits=["db"])
    def b() -> None:
        seen.run("db")

    ids = [a.enqueue() for _ in range(6)] + [b.enqueue() for _ in range(6)]
    burst(app, concurrency=8)
    assert {app.get_job(i).state for i in ids} == {JobState.SUCCEEDED}  # type: ignore[union-attr]
    assert seen.most["db"] == 2


def test_operators_override_and_reset_a_limit(app: App) -> None:
    @app.job(concurrency=4, name="limited.job")
    def job() -> None: ...

    (view,) = [v for v in app.limits.overview() if v.name == "limited.job"]
    assert (view.row.effective.concurrency, view.row.overridden) == (4, False)
    row = app.limits.set("limited.job", concurrency=1, rate="2/m", actor="ops", note="incident")
    assert (row.effective.concurrency, row.effective.rate, row.overridden) == (1, 2 / 60, True)
    entry = app.schedules.audit("limit:limited.job")[0]
    assert (entry.action, entry.actor, entry.note) == ("limit_set", "ops", "incident")
    row = app.limits.reset("limited.job", actor="ops")
    assert (row.effective.concurrency, row.effective.rate, row.overridden) == (4, None, False)
    with pytest.raises(ValueError, match="no limit named 'nope'"):
        app.limits.set("nope", concurrency=1)
    with pytest.raises(ValueError, match="--rate"):
        app.limits.set("limited.job")


def test_what_holds_a_queued_job_is_explained(app: App) -> None:
    @app.job(concurrency=1, key="tenant_id", name="rebuild")
    def rebuild(tenant_id: int) -> None: ...

    app.limits.sync()
    first, second = rebuild.enqueue(7), rebuild.enqueue(7)
    assert [c.id for c in app.storage.claim_limited("w", "default", 5, 30)] == [first]
    lines = app.explain_job(second)
    assert "limit rebuild (tenant_id=7) at 1/1 running; next start when one of them ends" in lines


def test_a_saturated_key_is_an_event_and_the_gauges_show_the_busiest_keys(app: App) -> None:
    pytest.importorskip("prometheus_client")
    from onthedot.observability.events import LimitHeld, LimitSaturated
    from onthedot.observability.metrics import instrument, render

    metrics = instrument(app)
    seen: list[object] = []
    app.events.subscribe(seen.append, LimitSaturated, LimitHeld)

    @app.job(concurrency=1, key="tenant", name="one")
    def one(tenant: int) -> None: ...

    ids = [one.enqueue(t % 7) for t in range(14)]
    text = render(app).decode()
    # Seven keys: the five busiest have their own series, the rest are summed.
    assert text.count('onthedot_limit_waiting{key="tenant=') == 5
    assert 'onthedot_limit_waiting{key="(other)",limit="one"} 4.0' in text
    burst(app, concurrency=4)
    assert {app.get_job(i).state for i in ids} == {JobState.SUCCEEDED}  # type: ignore[union-attr]
    saturated = [e for e in seen if isinstance(e, LimitSaturated)]
    assert saturated and {e.limit for e in saturated} == {"one"}
    assert saturated[0].concurrency == 1
    assert metrics.limit_saturated.labels("one")._value.get() == len(saturated)
