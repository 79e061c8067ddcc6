"""The Celery application of the benchmark: Redis broker, late acks, no result backend."""

from __future__ import annotations

import os
import time

from celery import Celery

from bench.jobs import burn, mark_first, mark_last, signal_started

app = Celery("bench", broker=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6391/0"))
app.conf.update(
    task_acks_late=True,  # at-least-once, like onthedot
    task_ignore_result=True,
    task_default_queue="bench",
    worker_prefetch_multiplier=int(os.environ.get("BENCH_CELERY_PREFETCH", "4")),
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@app.task(name="noop")
def noop() -> None:
    mark_first()


@app.task(name="lat")
def lat(sample: int) -> None:
    signal_started(sample)


@app.task(name="io")
def io(ms: float) -> None:
    """Real work waiting on I/O: a blocking sleep, as a sync Celery task does it."""
    mark_first()
    time.sleep(ms / 1000)
    mark_last()


@app.task(name="cpu")
def cpu(ms: float) -> None:
    mark_first()
    burn(ms)
    mark_last()


# bench.limits_peers: the shared job body, with no limit, a generous one, and N/s (per worker
# process: Celery's rate_limit is not global). Celery has no concurrency limit per key.
_LIMIT_RATE = os.environ.get("BENCH_LIMIT_RATE", "50") + "/s"


def _limited(k: str, ms: float) -> None:
    from bench.limits_peers import body

    time.sleep(ms / 1000)
    body(k, ms)


lim_free = app.task(name="lim_free")(_limited)
lim_conc = app.task(name="lim_conc")(_limited)
lim_generous = app.task(name="lim_generous", rate_limit="100000/s")(_limited)
lim_rated = app.task(name="lim_rated", rate_limit=_LIMIT_RATE)(_limited)
