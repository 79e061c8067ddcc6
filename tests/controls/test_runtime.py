"""Runtime schedules: create, update, delete, get, list (source `dynamic`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from onthedot import App, JobState, ManualClock, ScheduleError
from onthedot.observability.events import ScheduleChanged
from onthedot.testing import drain, tick

T0 = datetime(2030, 1, 1, tzinfo=UTC)


@pytest.fixture
def ops(db_url: str) -> Iterator[App]:
    app = App(db_url, clock=ManualClock(T0), log_events=False)
    app.migrate()

    @app.job(name="greet", runtime=True)
    def greet(name: str, punct: str = "!") -> str:
        return f"hello {name}{punct}"

    app.schedule("declared", "every 1h", greet, args=["code"])
    tick(app)
    yield app
    app.close()


def test_create_fires_from_the_next_slot_and_runs(ops: App) -> None:
    view = ops.schedules.create("dyn", "*/5 * * * *", "greet", args=["ops"], actor="alice")
    assert view["source"] == "dynamic" and view["status"] == "active"
    assert view["next"][0] == "2030-01-01T00:05:00Z"
    assert tick(ops, T0 + timedelta(minutes=4)) == []
    fired = tick(ops, T0 + timedelta(minutes=5))
    assert [(f.key, f.slot) for f in fired] == [("dyn", T0 + timedelta(minutes=5))]
    drain(ops)
    job = ops.get_job(fired[0].job_id or 0)
    assert job is not None and job.state is JobState.SUCCEEDED and job.result == "hello ops!"
    assert [e.action for e in ops.schedules.audit("dyn")] == ["created"]
    assert ops.schedules.audit("dyn")[0].actor == "alice"


def test_create_reports_every_problem_and_stores_nothing(ops: App) -> None:
    with pytest.raises(ScheduleError) as err:
        ops.schedules.create("bad", "*/0 * * * *", "greet", args=[1, 2, 3], timezone="Mars/Base")
    message = str(err.value)
    assert "bad minute" in message.lower() or "*/0" in message
    assert "Mars/Base" in message
    assert "too many positional arguments" in message
    assert next(iter(ops.storage.list_schedule_rows(["bad"])), None) is None
    assert ops.schedules.audit("bad") == []


def test_create_refuses_declared_and_existing_keys(ops: App) -> None:
    with pytest.raises(ScheduleError, match="declared in code"):
        ops.schedules.create("declared", "every 1m", "greet", args=["x"])
    ops.schedules.create("dyn", "every 1m", "greet", args=["x"])
    with pytest.raises(ScheduleError, match="already exists"):
        ops.schedules.create("dyn", "every 2m", "greet", args=["x"])


def test_update_timing_restarts_without_phantom_run(ops: App) -> None:
    ops.schedules.create("dyn", "0 * * * *", "greet", args=["x"])
    tick(ops, T0 + timedelta(minutes=30))
    # Every 10 minutes would have fired at :10 and :20 already; the edit at :30 restarts now.
    view = ops.schedules.update("dyn", spec="*/10 * * * *")
    assert view["spec"] == "*/10 * * * *"
    assert tick(ops, T0 + timedelta(minutes=31)) == []
    fired = tick(ops, T0 + timedelta(minutes=40))
    assert [f.slot for f in fired] == [T0 + timedelta(minutes=40)]
    details = ops.schedules.audit("dyn")[0].details or {}
    assert details["timing_changed"] is True


def test_update_of_arguments_is_not_a_timing_change(ops: App) -> None:
    ops.schedules.create("dyn", "*/10 * * * *", "greet", args=["x"])
    before = next(iter(ops.storage.list_schedule_rows(["dyn"])), None)
    ops.schedules.update("dyn", args=["y"], kwargs={"punct": "?"})
    after = next(iter(ops.storage.list_schedule_rows(["dyn"])), None)
    assert before is not None and after is not None
    assert (after.cursor, after.fingerprint) == (before.cursor, before.fingerprint)
    fired = tick(ops, T0 + timedelta(minutes=10))
    drain(ops)
    job = ops.get_job(fired[0].job_id or 0)
    assert job is not None and job.result == "hello y?"


def test_update_validates_and_refuses_declared(ops: App) -> None:
    ops.schedules.create("dyn", "every 1m", "greet", args=["x"])
    with pytest.raises(ScheduleError, match=r"timezone|time zone"):
        ops.schedules.update("dyn", timezone="Nowhere/Land")
    with pytest.raises(ScheduleError, match="declared in code"):
        ops.schedules.update("declared", spec="every 2h")
    with pytest.raises(ScheduleError, match="unknown field"):
        ops.schedules.update("dyn", colour="blue")


def test_delete_stops_at_once_and_cancels_queued_jobs(ops: App) -> None:
    ops.schedules.create("dyn", "every 1m", "greet", args=["x"])
    tick(ops, T0 + timedelta(minutes=1))
    tick(ops, T0 + timedelta(minutes=2))
    assert ops.schedules.delete("dyn", actor="bob") == 2
    assert all(j.state is JobState.CANCELLED for j in ops.list_jobs(schedule_key="dyn"))
    assert tick(ops, T0 + timedelta(minutes=3)) == []
    with pytest.raises(ScheduleError):
        ops.schedules.get("dyn")
    assert ops.schedules.audit("dyn")[0].action == "deleted"


def test_delete_can_keep_jobs_and_refuses_declared(ops: App) -> None:
    ops.schedules.create("dyn", "every 1m", "greet", args=["x"])
    tick(ops, T0 + timedelta(minutes=1))
    assert ops.schedules.delete("dyn", keep_jobs=True) == 0
    assert [j.state for j in ops.list_jobs(schedule_key="dyn")] == [JobState.QUEUED]
    with pytest.raises(ScheduleError, match="declared in code"):
        ops.schedules.delete("declared")


def test_list_and_get_show_both_sources(ops: App) -> None:
    ops.schedules.create("dyn", "every 1m", "greet", args=["x"])
    views = {v["key"]: v for v in ops.schedules.list()}
    assert views["declared"]["source"] == "code" and views["dyn"]["source"] == "dynamic"
    assert ops.schedules.get("dyn")["description"]


def test_runtime_changes_emit_events(ops: App) -> None:
    seen: list[ScheduleChanged] = []
    ops.events.subscribe(seen.append, ScheduleChanged)
    ops.schedules.create("dyn", "every 1m", "greet", args=["x"], actor="carol")
    ops.schedules.update("dyn", args=["y"], actor="carol")
    ops.schedules.delete("dyn", actor="carol")
    assert [(e.key, e.action, e.actor) for e in seen] == [
        ("dyn", "created", "carol"),
        ("dyn", "updated", "carol"),
        ("dyn", "deleted", "carol"),
    ]


def test_invalid_stored_definition_does_not_stop_other_schedules(ops: App) -> None:
    ops.schedules.create("dyn", "every 1m", "greet", args=["x"])
    # The same database read by code that no longer registers the job.
    other = App(ops.database_url, clock=ops.clock, log_events=False)
    other.schedule("declared", "every 1h", "greet-renamed")  # invalid on purpose: never ticked
    lonely = App(ops.database_url, clock=ops.clock, log_events=False)
    fired = tick(lonely, T0 + timedelta(minutes=1))
    assert fired == []  # "dyn" is invalid there (unknown job) and is left alone
    row = next(iter(lonely.storage.list_schedule_rows(["dyn"])), None)
    assert row is not None and row.next_due_at is not None and row.next_due_at > T0
    lonely.close()
    other.close()


def test_only_jobs_opened_to_runtime_schedules_can_be_their_target(ops: App) -> None:
    """Issue 24 item 1, through the Python API (the web admin and the CLI call the same)."""

    @ops.job(name="refund")
    def refund(order: int) -> None: ...

    assert ops.schedules.runtime_jobs() == ["greet"]
    attempts = [
        (("cmd", "every 1h", "onthedot.command", ["id"], {"shell": True}), {}),
        (("cmd", "every 1h"), {"command": "id > pwned.txt", "shell": True}),
        (("cmd", "every 1h", "refund", [1]), {}),
    ]
    for args, kwargs in attempts:
        with pytest.raises(ScheduleError) as err:
            ops.schedules.create(*args, **kwargs)
        assert "\n" not in str(err.value)
        assert "cannot run shell commands" in str(err.value) or (
            "job 'refund' is not open to runtime schedules: register it with "
            "@app.job(runtime=True)" in str(err.value)
        )
    assert next(iter(ops.storage.list_schedule_rows(["cmd"])), None) is None
    ops.schedules.create("dyn", "every 1h", "greet", args=["x"])
    for change in ({"job": "onthedot.command"}, {"command": "id"}, {"job": "refund"}):
        with pytest.raises(ScheduleError, match=r"shell commands|not open to runtime"):
            ops.schedules.update("dyn", **change, args=[1])
    assert ops.schedules.get_definition("dyn").job == "greet"
