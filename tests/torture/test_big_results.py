"""Results are capped like arguments (issue 12 item 17), on both backends: a job returning more
than `MAX_PAYLOAD_BYTES` of JSON is failed at once (no retry) with one line naming the size and
the limit, and nothing of the result is stored; a result just under the limit is stored intact.
"""

from __future__ import annotations

from onthedot import App, JobState
from onthedot.domain.payload import MAX_PAYLOAD_BYTES


def test_a_result_over_the_limit_fails_the_job_once_and_is_not_stored(
    app: App, record_result: dict[str, object]
) -> None:
    calls: list[int] = []

    @app.job(name="big.result", max_attempts=3)
    def big(n: int) -> str:
        calls.append(n)
        return "x" * n

    over = big.enqueue(10 * 1024 * 1024)
    under = big.enqueue(MAX_PAYLOAD_BYTES - 100)
    app.worker(burst=True, scheduler=False, install_signals=False).run()

    failed = app.get_job(over)
    kept = app.get_job(under)
    record_result.update(
        over_state=str(failed.state), over_attempts=failed.attempts, under_state=str(kept.state)
    )
    assert failed.state is JobState.FAILED, failed
    assert failed.attempts == 1, "a result too large is not retried"
    assert failed.result is None
    assert failed.error is not None and "\n" not in failed.error
    assert str(MAX_PAYLOAD_BYTES) in failed.error and "10485762" in failed.error, failed.error
    assert kept.state is JobState.SUCCEEDED
    assert kept.result == "x" * (MAX_PAYLOAD_BYTES - 100)
