"""Fixtures of the torture suite: a private PostgreSQL cluster (never the shared server), a
fresh database in it per test, and a record of the numbers each scenario checked.

The private cluster needs the PostgreSQL server binaries; without them the tests using it skip,
except under CI=true where they fail: CI must prove the crash and outage scenarios.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI
from tests.torture.pgcluster import PrivateCluster, unavailable_reason

RESULTS = Path(os.environ.get("ONTHEDOT_TORTURE_RESULTS", "/tmp/onthedot-torture-results.jsonl"))


@pytest.fixture(scope="session")
def private_cluster() -> Iterator[PrivateCluster]:
    reason = unavailable_reason()
    if reason is not None:
        message = f"cannot build a private PostgreSQL cluster: {reason}"
        if IN_CI:
            pytest.fail(message + " (required under CI=true)")
        pytest.skip(message)
    cluster = PrivateCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def private_pg_url(private_cluster: PrivateCluster) -> str:
    """A fresh database in the private cluster (started if a previous test left it down)."""
    private_cluster.start()
    return private_cluster.create_database(f"t_{uuid.uuid4().hex[:12]}")


_OUTCOME = pytest.StashKey[str]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each test's outcome, so the recorded numbers say whether the run passed."""
    report = yield
    if report.when == "call":
        item.stash[_OUTCOME] = report.outcome
    return report


@pytest.fixture
def record_result(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """A dict the test fills with what it checked; printed and appended (one JSON line) to
    $ONTHEDOT_TORTURE_RESULTS (default /tmp/onthedot-torture-results.jsonl) for
    docs/reliability.md."""
    numbers: dict[str, Any] = {}
    yield numbers
    if numbers:
        outcome = request.node.stash.get(_OUTCOME, "unknown")
        line = json.dumps({"test": request.node.nodeid, "outcome": outcome, **numbers}, default=str)
        print(f"\ntorture result: {line}")
        try:
            with RESULTS.open("a") as handle:
                handle.write(line + "\n")
        except OSError:
            pass
