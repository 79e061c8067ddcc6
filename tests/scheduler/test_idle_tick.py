"""The cost of a tick follows the due rows, not the number of schedules: an idle tick over
thousands of schedules examines no row (the index on next_due_at answers)."""

from __future__ import annotations

from datetime import timedelta

from onthedot.schedules.scheduler import Scheduler
from onthedot.testing import scheduler_for, tick
from tests.scheduler.helpers import MakeApp, clock_of, row, utc

T0 = utc(2030, 1, 1)
SCHEDULES = 2000


def test_an_idle_tick_touches_no_row(make_app: MakeApp) -> None:
    app = make_app(T0)
    app.job(name="work")(lambda: None)
    for i in range(SCHEDULES):
        app.schedule(f"yearly-{i:04d}", f"{i % 60} {i % 24} 15 6 *", "work")
    for i in range(3):
        app.schedule(f"hourly-{i}", f"{40 + i} * * * *", "work")
    assert tick(app) == []  # first sight of all of them at T0
    scheduler: Scheduler = scheduler_for(app)
    clock_of(app).set(T0 + timedelta(minutes=30))
    results = scheduler.tick()
    assert [r.rows for r in results] == [0]
    assert results[0].recorded == []
    # An hour later exactly the three hourly schedules are due: only they are examined.
    clock_of(app).set(T0 + timedelta(hours=1, minutes=5))
    results = scheduler.tick()
    assert [r.rows for r in results] == [3]
    assert sorted(r.key for r in results[0].recorded) == ["hourly-0", "hourly-1", "hourly-2"]
    assert row(app, "yearly-0001").next_due_at == utc(2030, 6, 15, 1, 1)
    assert [r.rows for r in scheduler.tick()] == [0]
