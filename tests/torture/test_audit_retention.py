"""The audit log has a retention (issue 12, item 18), on both backends with a real worker
process: its prune turn deletes audit entries older than the audit retention (90 days by
default) along with the jobs past the job retention, and keeps the younger ones."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from onthedot import App, JobFilter
from onthedot.domain.jobs import NewJob, Outcome, OutcomeKind
from onthedot.domain.ledger import AuditEntry
from tests.torture.chaos_app import create_tables, make_app
from tests.torture.harness import ChaosLog, Fleet, wait_for

pytestmark = pytest.mark.slow

AGES = {"ancient": 400, "old": 100, "month": 30, "fresh": 0}  # days
KEPT = {"month", "fresh"}


@pytest.fixture
def client(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[App]:
    monkeypatch.chdir(tmp_path)
    application = make_app(db_url, log_events=False)
    application.migrate()
    create_tables(db_url)
    yield application
    application.close()


def test_the_prune_turn_prunes_the_audit_log(
    client: App, db_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    storage = client.storage
    now = datetime.now(UTC)
    for label, days in AGES.items():
        storage.add_audit(
            AuditEntry(actor="ops", action="paused", key=label, at=now - timedelta(days=days))
        )
    # A job finished 10 days ago (job retention: 7 days): its removal shows the prune ran.
    then = storage.at(now - timedelta(days=10))
    (old_job,) = then.enqueue([NewJob(name="chaos.work", args=[0], kwargs={})])
    (claimed,) = then.claim_jobs("w-old", "default", 1, 30)
    assert then.finish_jobs("w-old", [Outcome(claimed.id, OutcomeKind.SUCCEEDED, attempt=1)]) == 1

    fleet = Fleet(db_url, tmp_path, ChaosLog())
    try:
        fleet.wait_started(fleet.start("--no-scheduler"))
        wait_for(lambda: client.get_job(old_job) is None, "the prune turn", 30)
        # The pass deletes the jobs first, then the other tables in a transaction of their own.
        wait_for(lambda: _kept(client) <= KEPT, "the pass's last step", 30)
        kept = _kept(client)
        record_result.update(backend=db_url.split(":")[0], kept=sorted(kept))
        assert kept == KEPT
        fleet.stop_all()
    finally:
        fleet.close()
    assert storage.count_jobs(JobFilter()) == 0


def _kept(client: App) -> set[str]:
    return {e.key for e in client.schedules.audit(limit=100) if e.key is not None}
