"""enqueue: ids, options, unique keys, bulk inserts, argument validation, transactions."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from onthedot import App, JobFilter, JobState, ManualClock
from onthedot.domain.jobs import Outcome, OutcomeKind
from onthedot.domain.payload import MAX_PAYLOAD_BYTES
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, job, new_job, succeed


def test_ids_in_input_order(storage: Storage) -> None:
    names = ["c", "a", "b", "a"]
    ids = storage.at(T0).enqueue([new_job(n, args=[i]) for i, n in enumerate(names)])
    assert len(ids) == 4
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert [job(storage, i).name for i in ids] == names
    assert [job(storage, i).args for i in ids] == [[0], [1], [2], [3]]
    assert storage.at(T0).enqueue([]) == []


def test_new_job_fields(storage: Storage) -> None:
    (job_id,) = storage.at(T0).enqueue(
        [
            new_job(
                "full",
                args=[1, "x"],
                kwargs={"k": [None, True, 1.5]},
                max_attempts=7,
                timeout=2.5,
                queue="q1",
                priority=-4,
            )
        ],
    )
    j = job(storage, job_id)
    assert (j.name, j.queue, j.priority, j.state) == ("full", "q1", -4, JobState.QUEUED)
    assert (j.args, j.kwargs) == ([1, "x"], {"k": [None, True, 1.5]})
    assert (j.attempts, j.max_attempts, j.timeout) == (0, 7, 2.5)
    # No run_at: the verb's now. The creation instant is the same now, on every backend.
    assert j.run_at == T0
    assert j.created_at == T0
    assert j.started_at is None and j.finished_at is None and j.worker_id is None
    assert j.result is None and j.error is None and j.errors == []


def test_options_through_the_job_function(app: App, clock: ManualClock) -> None:
    @app.job(name="send", queue="mail", priority=3, max_attempts=5, timeout=9)
    def send(to: str, *, urgent: bool = False) -> None: ...

    default = job(app.storage, send.enqueue("a@x"))
    assert (default.queue, default.priority, default.max_attempts, default.timeout) == (
        "mail",
        3,
        5,
        9.0,
    )
    assert default.run_at == T0 and default.kwargs == {}

    when = datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC)
    custom = job(
        app.storage,
        send.enqueue("b@x", urgent=True, run_at=when, priority=-2, queue="bulk", max_attempts=1),
    )
    assert (custom.args, custom.kwargs) == (["b@x"], {"urgent": True})
    assert (custom.run_at, custom.priority, custom.queue, custom.max_attempts) == (
        when,
        -2,
        "bulk",
        1,
    )

    delayed = job(app.storage, send.enqueue("c@x", delay=90))
    assert delayed.run_at == T0 + timedelta(seconds=90)
    assert job(app.storage, send.enqueue("d@x", delay="2m")).run_at == T0 + timedelta(minutes=2)
    # enqueue_with passes arguments explicitly; app.enqueue resolves by name.
    explicit = job(app.storage, send.enqueue_with(["e@x"], {"urgent": False}, priority=8))
    assert (explicit.args, explicit.kwargs, explicit.priority) == (["e@x"], {"urgent": False}, 8)
    assert job(app.storage, app.enqueue("send", "f@x")).args == ["f@x"]


def test_unique_key_dedupes_while_queued_or_running(storage: Storage) -> None:
    first = storage.at(T0).enqueue([new_job("u", unique_key="report:1")])[0]
    assert storage.at(T0).enqueue([new_job("u", unique_key="report:1")]) == [first]
    other = storage.at(T0).enqueue([new_job("u", unique_key="report:2")])[0]
    assert other != first

    assert [c.id for c in storage.at(T0).claim_jobs("w1", "default", 1, 30)] == [first]
    assert job(storage, first).state is JobState.RUNNING
    assert storage.at(T0).enqueue([new_job("u", unique_key="report:1")]) == [first]

    assert storage.at(at(1)).finish_jobs("w1", [succeed(first)]) == 1
    again = storage.at(at(2)).enqueue([new_job("u", unique_key="report:1")])[0]
    assert again not in (first, other)
    assert job(storage, again).state is JobState.QUEUED
    assert storage.count_jobs(JobFilter(name="u")) == 3


@pytest.mark.parametrize("kind", [OutcomeKind.FAILED, OutcomeKind.CANCELLED])
def test_unique_key_free_after_failure_or_cancel(storage: Storage, kind: OutcomeKind) -> None:
    first = storage.at(T0).enqueue([new_job("u", unique_key="k")])[0]
    storage.at(T0).claim_jobs("w1", "default", 1, 30)
    storage.at(at(1)).finish_jobs("w1", [Outcome(first, kind, error="E: x")])
    assert storage.at(at(2)).enqueue([new_job("u", unique_key="k")]) != [first]


def test_unique_key_held_through_retry(storage: Storage) -> None:
    first = storage.at(T0).enqueue([new_job("u", unique_key="k")])[0]
    storage.at(T0).claim_jobs("w1", "default", 1, 30)
    storage.at(at(1)).finish_jobs(
        "w1", [Outcome(first, OutcomeKind.RETRY, error="E: x", retry_in=10)]
    )
    assert job(storage, first).state is JobState.QUEUED
    assert storage.at(at(2)).enqueue([new_job("u", unique_key="k")]) == [first]


def test_unique_key_within_one_batch(app: App) -> None:
    @app.job(name="sync")
    def sync(n: int) -> None: ...

    ids = sync.enqueue_many([[1], [2], [3]], unique_key="only-one")
    assert len(set(ids)) == 1
    assert app.storage.count_jobs(JobFilter(name="sync")) == 1
    assert job(app.storage, ids[0]).args == [1]
    mixed = app.storage.at(T0).enqueue(
        [new_job("m", unique_key="a"), new_job("m"), new_job("m", unique_key="a")]
    )
    assert mixed[0] == mixed[2] and len(set(mixed)) == 2


def test_enqueue_many_bulk(app: App, clock: ManualClock) -> None:
    @app.job(name="bulk")
    def bulk(i: int, tag: str = "") -> None: ...

    n = 3000
    calls: list[Any] = []
    for i in range(n):
        calls.append([i] if i % 3 == 0 else {"i": i, "tag": "d"} if i % 3 == 1 else ([i], {}))
    ids = bulk.enqueue_many(calls, priority=2, queue="bulkq")
    assert len(ids) == n and len(set(ids)) == n and ids == sorted(ids)
    assert app.storage.count_jobs(JobFilter(queue="bulkq", state=JobState.QUEUED)) == n
    for i in (0, 1, 2, n - 2, n - 1):
        j = job(app.storage, ids[i])
        expected = ([i], {}) if i % 3 != 1 else ([], {"i": i, "tag": "d"})
        assert (j.args, j.kwargs) == expected
        assert (j.priority, j.queue, j.run_at, j.created_at) == (2, "bulkq", T0, T0)
    # The bulk path hands out jobs like any other: all of them, in id order.
    claimed = app.storage.at(T0).claim_jobs("w", "bulkq", n, 30)
    assert [c.id for c in claimed] == ids
    assert bulk.enqueue_many([]) == []


def test_enqueue_many_delayed_and_item_errors(app: App, clock: ManualClock) -> None:
    @app.job(name="later")
    def later(i: int) -> None: ...

    ids = later.enqueue_many([[1], [2]], delay=60)
    assert {job(app.storage, i).run_at for i in ids} == {T0 + timedelta(seconds=60)}
    with pytest.raises(TypeError, match=r"'later'.*enqueue_many items"):
        later.enqueue_many([[1], 5])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="'later'"):
        later.enqueue_many([[1], [2, 3]])  # one bad item: nothing of the batch is inserted
    assert app.storage.count_jobs(JobFilter(name="later")) == 2


@pytest.fixture
def typed(app: App) -> Any:
    @app.job(name="typed.job")
    def typed_job(a: Any, b: Any = None, **extra: Any) -> None: ...

    return typed_job


def _one_line_naming_job(exc: BaseException) -> None:
    text = str(exc)
    assert "\n" not in text and text.strip() == text
    assert "'typed.job'" in text


BAD_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((1, 2, 3), {}),
    ((1,), {"a": 2}),
    ((1,), {"b": 1, "a": 2}),
]

NOT_JSON: list[tuple[Any, type[Exception], str]] = [
    ({1, 2}, TypeError, "set"),
    (datetime(2030, 1, 1, tzinfo=UTC), TypeError, "datetime"),
    (math.nan, ValueError, "NaN"),
    (-math.inf, ValueError, "Infinity"),
    ({1: "one"}, TypeError, "key"),
    ({"deep": [{"x": {(1, 2): 0}}]}, TypeError, "key"),
    ([b"bytes"], TypeError, "bytes"),
    (object(), TypeError, "object"),
]

BAD_OPTIONS: list[tuple[dict[str, Any], type[Exception]]] = [
    ({"priority": 10**7}, ValueError),
    ({"priority": "high"}, TypeError),
    ({"queue": "q" * 101}, ValueError),
    ({"queue": "a,b"}, ValueError),
    ({"run_at": datetime(2030, 1, 1)}, ValueError),  # naive on purpose
    ({"run_at": T0, "delay": 5}, ValueError),
    ({"max_attempts": 0}, ValueError),
    ({"unique_key": ""}, ValueError),
    ({"delay": "soon"}, ValueError),
]


def test_arguments_must_bind(app: App, typed: Any) -> None:
    for args, kwargs in BAD_CALLS:
        with pytest.raises(TypeError) as info:
            typed.enqueue(*args, **kwargs)
        _one_line_naming_job(info.value)
    assert app.storage.count_jobs(JobFilter()) == 0


def test_arguments_must_be_json(app: App, typed: Any) -> None:
    for value, error, fragment in NOT_JSON:
        as_arg, as_kwarg = (
            (lambda v=value: typed.enqueue(v)),
            (lambda v=value: typed.enqueue(1, extra=v)),
        )
        for call in (as_arg, as_kwarg):
            with pytest.raises(error) as info:
                call()
            _one_line_naming_job(info.value)
            assert fragment in str(info.value), (value, str(info.value))
        with pytest.raises(error):
            typed.enqueue_many([[1], [value]])
    assert app.storage.count_jobs(JobFilter()) == 0


def test_payload_limit(app: App, typed: Any) -> None:
    with pytest.raises(ValueError, match="byte") as info:
        typed.enqueue("x" * MAX_PAYLOAD_BYTES)
    _one_line_naming_job(info.value)
    with pytest.raises(ValueError, match="byte"):
        typed.enqueue(1, b=["y" * 1000] * 1100)
    assert app.storage.count_jobs(JobFilter()) == 0
    job_id = typed.enqueue("z" * (MAX_PAYLOAD_BYTES - 100))  # just under the limit is fine
    assert len(job(app.storage, job_id).args[0]) == MAX_PAYLOAD_BYTES - 100


def test_invalid_options(app: App, typed: Any) -> None:
    for options, error in BAD_OPTIONS:
        with pytest.raises(error) as info:
            typed.enqueue(1, **options)
        assert "\n" not in str(info.value), options
    assert app.storage.count_jobs(JobFilter()) == 0


# -- enqueue inside the caller's transaction (PostgreSQL) --------------------------------------


def test_transactional_enqueue_rollback_and_commit(pg_app: App, pg_url: str) -> None:
    @pg_app.job(name="tx")
    def tx(n: int) -> None: ...

    with psycopg.connect(pg_url) as conn:
        conn.execute("CREATE TABLE orders (id int)")
        conn.commit()
        conn.execute("INSERT INTO orders VALUES (1)")
        rolled_back = tx.enqueue(1, connection=conn)
        assert pg_app.get_job(rolled_back) is None  # not visible outside the transaction
        conn.rollback()
        assert pg_app.get_job(rolled_back) is None
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (0,)
        conn.commit()

        with conn.transaction():  # no transaction open: this block begins and commits one
            conn.execute("INSERT INTO orders VALUES (2)")
            committed = tx.enqueue(2, connection=conn)
            many = tx.enqueue_many([[3], [4]], connection=conn)
            assert pg_app.get_job(committed) is None
            assert all(pg_app.get_job(i) is None for i in many)
        assert job(pg_app.storage, committed).args == [2]
        assert [job(pg_app.storage, i).args for i in many] == [[3], [4]]
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (1,)
    assert pg_app.storage.count_jobs(JobFilter(name="tx")) == 3


def test_transactional_enqueue_on_a_dict_row_connection(pg_app: App, pg_url: str) -> None:
    @pg_app.job(name="tx")
    def tx(n: int) -> None: ...

    with psycopg.connect(pg_url, row_factory=dict_row) as conn:
        job_id = tx.enqueue(5, connection=conn, unique_key="once")
        assert tx.enqueue(6, connection=conn, unique_key="once") == job_id
        conn.commit()
    assert job(pg_app.storage, job_id).args == [5]


def test_connection_on_sqlite_is_refused(sqlite_url: str) -> None:
    app = App(sqlite_url, log_events=False)
    try:

        @app.job(name="tx")
        def tx(n: int) -> None: ...

        with pytest.raises(ValueError, match="PostgreSQL") as info:
            tx.enqueue(1, connection=object())
        assert "\n" not in str(info.value)
        assert app.storage.count_jobs(JobFilter()) == 0
    finally:
        app.close()


def test_bulk_enqueue_keeps_awkward_strings_intact(app: App) -> None:
    """The bulk path (COPY text format on PostgreSQL, executemany on SQLite) escapes what it
    must: backslashes, tabs, newlines and quotes survive the round trip (a job name holds no
    control character since issue 24: backslash and quotes there)."""

    @app.job(name='awkward\\name "q"')
    def awkward(text: str, extra: dict[str, str] | None = None) -> None: ...

    values = ["back\\slash", "tab\tand\nnewline\r", 'quote "x"', "\\N", "emoji \U0001f600", ""]
    ids = awkward.enqueue_many([([v], {"extra": {"k": v}}) for v in values])
    got = [app.get_job(i) for i in ids]
    assert [j.args for j in got if j] == [[v] for v in values]
    assert [j.kwargs for j in got if j] == [{"extra": {"k": v}} for v in values]
    assert {j.name for j in got if j} == {'awkward\\name "q"'}


def test_aenqueue_runs_inside_the_callers_async_transaction(pg_app: App, pg_url: str) -> None:
    """`Storage.aenqueue`: the rows are the caller's until it commits; a rollback drops them."""
    storage = pg_app.storage

    async def scenario() -> tuple[list[int], list[int]]:
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            dropped = await storage.aenqueue([new_job("atx", args=[1])], connection=conn)
            assert storage.get_job(dropped[0]) is None  # not visible outside the transaction
            await conn.rollback()
            kept = await storage.aenqueue(
                [new_job("atx", args=[2]), new_job("atx", args=[3])], connection=conn
            )
            assert all(storage.get_job(i) is None for i in kept)
            await conn.commit()
        return dropped, kept

    dropped, kept = asyncio.run(scenario())
    assert storage.get_job(dropped[0]) is None
    assert [job(storage, i).args for i in kept] == [[2], [3]]
    assert storage.count_jobs(JobFilter(name="atx")) == 2


def test_aenqueue_on_sqlite_is_refused_in_one_line(sqlite_url: str) -> None:
    app = App(sqlite_url, log_events=False)
    try:
        with pytest.raises(ValueError, match="PostgreSQL") as info:
            asyncio.run(app.storage.aenqueue([new_job("atx")], connection=object()))
        assert "\n" not in str(info.value)
        assert app.storage.count_jobs(JobFilter()) == 0
    finally:
        app.close()
