"""Flow control's verbs (docs/limits.md): claim_limited, sync_limits, set_limit, reset_limit,
list_limits, limit_loads, job_limits; and the unlimited claim leaving limited jobs alone."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence

from onthedot.domain.jobs import NewJob
from onthedot.domain.limits import LimitSetting
from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, job, new_job, run_threads, succeed


def limited(name: str, *keys: str, **fields: object) -> NewJob:
    """A job under these limit keys (the first is its home key)."""
    return new_job(name, limit_key=keys[0], limits=json.dumps(list(keys)), **fields)


def homes(storage: Storage, claimed: Sequence[int]) -> list[str]:
    rows = storage.job_limits  # (state, queue, name, due in, keys)
    return [rows(i)[4][0] for i in claimed]  # type: ignore[index]


def register(storage: Storage, name: str, concurrency: int | None = None, **kw: object) -> None:
    storage.sync_limits([LimitSetting(name, concurrency, kw.get("rate"), kw.get("burst"))])  # type: ignore[arg-type]


def test_unlimited_claim_leaves_limited_jobs(storage: Storage) -> None:
    register(storage, "l", 5)
    s = storage.at(T0)
    (lim,) = s.enqueue([limited("x", "l|")])
    (free,) = s.enqueue([new_job("y")])
    assert [c.id for c in s.claim_jobs("w", "default", 10, 30)] == [free]
    assert [c.id for c in s.claim_limited("w", "default", 10, 30)] == [lim]
    assert job(storage, lim).state.value == "running"


def test_concurrency_per_key_and_a_finish_frees_a_slot(storage: Storage) -> None:
    register(storage, "r", 2)
    s = storage.at(T0)
    a = s.enqueue([limited("x", "r|t=1") for _ in range(5)])
    b = s.enqueue([limited("x", "r|t=2") for _ in range(5)])
    first = [c.id for c in s.claim_limited("w", "default", 10, 30)]
    assert Counter(homes(storage, first)) == {"r|t=1": 2, "r|t=2": 2}
    assert s.claim_limited("w", "default", 10, 30) == []  # both keys full
    done = next(i for i in first if i in a)
    assert storage.at(at(1)).finish_jobs("w", [succeed(done)]) == 1
    again = [c.id for c in storage.at(at(1)).claim_limited("w", "default", 10, 30)]
    assert len(again) == 1 and again[0] in a
    assert not set(again) & set(b)


def test_round_robin_across_keys_never_starves_a_small_key(storage: Storage) -> None:
    register(storage, "f", 100)
    s = storage.at(T0)
    s.enqueue([limited("x", "f|A", run_at=at(-10)) for _ in range(50)])
    (small,) = s.enqueue([limited("x", "f|B")])
    claimed = [c.id for c in s.claim_limited("w", "default", 2, 30)]
    assert small in claimed  # one of each key, though A's jobs are older
    # A lone key still gets every slot asked for.
    assert len(s.claim_limited("w", "default", 10, 30)) == 10


def test_rate_is_a_token_bucket_on_the_storage_clock(storage: Storage) -> None:
    register(storage, "api", None, rate=2.0, burst=3)
    s = storage.at(T0)
    s.enqueue([limited("x", "api|") for _ in range(10)])
    assert len(s.claim_limited("w", "default", 10, 30)) == 3  # the burst
    assert storage.at(at(0.4)).claim_limited("w", "default", 10, 30) == []
    assert len(storage.at(at(0.5)).claim_limited("w", "default", 10, 30)) == 1
    assert len(storage.at(at(2.5)).claim_limited("w", "default", 10, 30)) == 3  # refill, capped


def test_every_limit_of_a_job_must_allow_it(storage: Storage) -> None:
    register(storage, "own", 5)
    register(storage, "shared", 1)
    s = storage.at(T0)
    ids = s.enqueue([limited("x", f"own|k={i}", "shared|") for i in range(3)])
    claimed = [c.id for c in s.claim_limited("w", "default", 10, 30)]
    assert len(claimed) == 1 and claimed[0] in ids
    # The running job counts against the key it is not at home in, in the next claims too.
    assert s.claim_limited("w", "default", 10, 30) == []
    (load,) = storage.limit_loads(["shared|"])
    assert load.running == 1
    assert storage.at(at(1)).finish_jobs("w", [succeed(claimed[0])]) == 1
    assert len(storage.at(at(1)).claim_limited("w", "default", 10, 30)) == 1


def test_an_unregistered_limit_holds_its_jobs(storage: Storage) -> None:
    s = storage.at(T0)
    (job_id,) = s.enqueue([limited("x", "later|")])
    assert s.claim_limited("w", "default", 10, 30) == []
    register(storage, "later", 1)
    assert [c.id for c in s.claim_limited("w", "default", 10, 30)] == [job_id]


def test_a_crashed_workers_job_holds_its_slot_until_rescued(storage: Storage) -> None:
    register(storage, "c", 1)
    s = storage.at(T0)
    ids = s.enqueue([limited("x", "c|") for _ in range(2)])
    assert [c.id for c in s.claim_limited("dead", "default", 10, 5)] == [ids[0]]
    assert storage.at(at(60)).claim_limited("w", "default", 10, 30) == []  # lease expired
    assert [r.id for r in storage.at(at(60)).rescue_jobs()] == [ids[0]]
    assert len(storage.at(at(60)).claim_limited("w", "default", 10, 30)) == 1


def test_limited_bulk_enqueue_keeps_every_key(storage: Storage) -> None:
    register(storage, "b", 1)
    ids = storage.at(T0).enqueue([limited("x", f"b|{i}") for i in range(4)])
    assert [storage.job_limits(i)[4] for i in ids] == [[f"b|{i}"] for i in range(4)]  # type: ignore[index]
    assert len(storage.at(T0).claim_limited("w", "default", 10, 30)) == 4


def test_names_filter_the_limited_claim(storage: Storage) -> None:
    register(storage, "n", 5)
    storage.at(T0).enqueue([limited("known", "n|"), limited("other", "n|")])
    claimed = storage.at(T0).claim_limited("w", "default", 10, 30, names=["known"])
    assert [c.name for c in claimed] == ["known"]


def test_settings_sync_set_and_reset(storage: Storage) -> None:
    register(storage, "s", 3, rate=10.0)
    (row,) = storage.list_limits()
    assert (row.effective.concurrency, row.effective.rate, row.overridden) == (3, 10.0, False)
    assert storage.set_limit(LimitSetting("s", 1, 5.0, 2))
    assert not storage.set_limit(LimitSetting("nope", 1, None, None))
    register(storage, "s", 4)  # a deploy with new code values keeps the override in force
    (row,) = storage.list_limits()
    assert (row.effective.concurrency, row.effective.rate, row.effective.burst) == (1, 5.0, 2)
    assert (row.code.concurrency, row.code.rate, row.overridden) == (4, None, True)
    assert storage.reset_limit("s") and not storage.reset_limit("nope")
    (row,) = storage.list_limits()
    assert (row.effective.concurrency, row.effective.rate, row.overridden) == (4, None, False)


def test_an_override_takes_effect_at_the_next_claim(storage: Storage) -> None:
    register(storage, "o", 1)
    s = storage.at(T0)
    s.enqueue([limited("x", "o|") for _ in range(3)])
    assert len(s.claim_limited("w", "default", 10, 30)) == 1
    storage.set_limit(LimitSetting("o", 3, None, None))
    assert len(s.claim_limited("w", "default", 10, 30)) == 2


def test_loads_and_a_jobs_limits(storage: Storage) -> None:
    register(storage, "m", 1, rate=1.0)
    s = storage.at(T0)
    ids = s.enqueue([limited("x", "m|a") for _ in range(3)] + [limited("x", "m|b")])
    s.claim_limited("w", "default", 10, 30)
    loads = {k.lkey: k for k in s.limit_loads()}
    assert (loads["m|a"].running, loads["m|a"].waiting) == (1, 2)
    assert (loads["m|b"].running, loads["m|b"].waiting) == (1, 0)
    assert loads["m|a"].tokens is not None and loads["m|a"].tokens < 1
    assert [k.lkey for k in s.limit_loads(["m|b"])] == ["m|b"]
    state, queue, name, due_in, keys = s.job_limits(ids[1])  # type: ignore[misc]
    assert (state, queue, name, due_in, keys) == ("queued", "default", "x", 0.0, ["m|a"])
    assert s.job_limits(10**9) is None


def test_concurrent_claims_never_exceed_a_limit(
    storage: Storage, other_storages: Callable[[int], Sequence[Storage]]
) -> None:
    register(storage, "cc", 3)
    storage.enqueue([limited("x", f"cc|{i % 2}") for i in range(40)])
    others = other_storages(6)

    def claim(i: int) -> list[int]:
        return [c.id for c in others[i].claim_limited(f"w{i}", "default", 4, 30)]

    claimed = [i for ids in run_threads(6, claim) for i in ids]
    assert len(claimed) == len(set(claimed))
    assert Counter(homes(storage, claimed)) == {"cc|0": 3, "cc|1": 3}


def test_a_limited_job_lost_twice_is_charged_the_second_time(storage: Storage) -> None:
    # A limited job is never claimed alone (claim_alone reads the unlimited ready index), so
    # once lost beside others (solo) its next shared claim is charged: a job that kills its
    # worker fails in the end instead of running for ever.
    register(storage, "p", 5)
    a, b = storage.at(T0).enqueue([limited("q", "p|", max_attempts=1) for _ in range(2)])
    assert len(storage.at(T0).claim_limited("w1", "default", 2, 5, shared=True)) == 2
    assert {r.requeued for r in storage.at(at(6)).rescue_jobs()} == {True}
    again = storage.at(at(7)).claim_limited("w2", "default", 2, 5, shared=True)
    assert sorted(c.id for c in again) == [a, b]
    lost = storage.at(at(20)).rescue_jobs()
    assert {(r.id, r.requeued) for r in lost} == {(a, False), (b, False)}
    assert job(storage, a).state.value == "failed"


def test_a_paused_queue_holds_its_limited_jobs_in_the_claim(storage: Storage) -> None:
    register(storage, "pq", 5)
    (job_id,) = storage.at(T0).enqueue([limited("x", "pq|", queue="mail")])
    storage.set_queue_paused("mail", True, "ops")
    assert storage.at(T0).claim_limited("w", "mail", 10, 30) == []
    storage.set_queue_paused("mail", False, "ops")
    assert [c.id for c in storage.at(T0).claim_limited("w", "mail", 10, 30)] == [job_id]
