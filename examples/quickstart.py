"""The bundled example: jobs, a retry and a schedule, processed by a worker on SQLite.

Run it with `python examples/quickstart.py`. It uses the default database (onthedot.db in the
current directory), runs a worker with the scheduler for a few seconds, and prints what ran.
"""

from __future__ import annotations

import logging
import sys

import onthedot

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stdout)

app = onthedot.App()  # sqlite:///onthedot.db unless ONTHEDOT_DATABASE_URL says otherwise


@app.job(name="example.send_welcome")
def send_welcome(user_id: int, plan: str = "free") -> str:
    return f"welcome mail sent to user {user_id} ({plan})"


@app.job(name="example.flaky", max_attempts=3, backoff=0.2)
def flaky() -> str:
    ctx = onthedot.current_job()
    if ctx.attempt < 2:
        raise ConnectionError(f"upstream timed out (attempt {ctx.attempt})")
    return f"succeeded on attempt {ctx.attempt}"


@app.job(name="example.report", schedule="every 2s")
def report() -> str:
    ctx = onthedot.current_job()
    return f"report for slot {ctx.slot:%H:%M:%S}"


def main() -> None:
    first = send_welcome.enqueue(1, plan="pro")
    send_welcome.enqueue_many([[2], [3], {"user_id": 4, "plan": "team"}])
    flaky.enqueue()
    worker = app.worker(concurrency=4, stop_after=7, install_signals=True)
    worker.run()
    print()
    print(f"{'id':>4}  {'state':<10} {'attempts':>8}  {'job':<22} result")
    for job in reversed(app.list_jobs(limit=200)):
        if job.id < first:
            continue
        print(
            f"{job.id:>4}  {job.state.value:<10} {job.attempts:>8}  {job.name:<22} "
            f"{job.result if job.result is not None else job.error}"
        )
    app.close()


if __name__ == "__main__":
    main()
