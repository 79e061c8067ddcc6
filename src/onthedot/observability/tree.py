"""One endpoint for a whole `onthedot worker` tree (`--metrics-port`, served by the
supervisor; the `onthedot[prometheus]` extra).

- `/metrics`: every worker process's event counters and histograms, summed (prometheus_client's
  multiprocess mode: each process writes its values to files in one folder, the supervisor
  reads them all at scrape time; a process that died keeps its counts, so totals never go
  back after a restart), the database gauges once, and the tree's own gauges
  (`onthedot_worker_processes` by state, `onthedot_worker_process_restarts_total`);
- `/healthz`: 200 while every worker process runs and beats (see `Supervisor.problem`), 503
  naming the first one that does not;
- `/readyz`: the database answers and its schema is current.

The metric names are those of a single worker (`metrics.py`), so a dashboard reads one process
and a tree alike. `prepare_multiprocess` must run before any child starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from onthedot.observability import metrics
from onthedot.observability.metrics_db import DatabaseCollector
from onthedot.observability.probes import TEXT, Answer, ProbeServer, ok_or
from onthedot.observability.serve import ServedApp, readiness

ENV_MULTIPROC = "PROMETHEUS_MULTIPROC_DIR"


class Tree(Protocol):
    """What the endpoint asks the supervisor."""

    restarts: int

    def problem(self) -> str | None: ...

    def states(self) -> dict[str, int]: ...


class TreeCollector:
    """The supervisor's own gauges."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree

    def collect(self) -> Iterator[Metric]:
        processes = GaugeMetricFamily(
            "onthedot_worker_processes",
            "Worker processes of this supervisor, by state (running: working; starting; "
            "restarting: waiting for its backoff; stopped).",
            labels=["state"],
        )
        for state, count in sorted(self.tree.states().items()):
            processes.add_metric([state], count)
        yield processes
        restarts = CounterMetricFamily(
            "onthedot_worker_process_restarts",
            "Worker processes started again after they died or were killed.",
        )
        restarts.add_metric([], self.tree.restarts)
        yield restarts


class MultiprocessFolder:
    """The folder the processes of the tree write their metric values to."""

    def __init__(self) -> None:
        given = os.environ.get(ENV_MULTIPROC)
        self.owned = not given
        self.path = given or tempfile.mkdtemp(prefix="onthedot-metrics-")
        os.environ[ENV_MULTIPROC] = self.path
        from prometheus_client import values

        # Metrics made from now on, here and in the children, write to the folder, even if the
        # app imported prometheus_client before the variable was set.
        values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]

    def remove(self) -> None:
        if self.owned:
            shutil.rmtree(self.path, ignore_errors=True)
            os.environ.pop(ENV_MULTIPROC, None)


def tree_endpoint(
    app: ServedApp,
    tree: Tree,
    folder: MultiprocessFolder,
    *,
    host: str,
    port: int,
    token: str | None,
) -> ProbeServer:
    """The endpoint, bound (not started: the supervisor's loop serves it, `handle()`)."""
    metrics.instrument(app)  # the supervisor's own events (restarts, timeouts it charged)
    registry = CollectorRegistry(auto_describe=True)
    MultiProcessCollector(registry, path=folder.path)  # type: ignore[no-untyped-call]
    registry.register(DatabaseCollector(app))
    registry.register(TreeCollector(tree))

    def scrape() -> Answer:
        return 200, generate_latest(registry), metrics.CONTENT_TYPE

    routes: dict[str, Callable[[], Answer]] = {
        "/metrics": scrape,
        "/healthz": lambda: ok_or(tree.problem()),
        "/readyz": lambda: ok_or(readiness(app)),
        "/": lambda: (200, b"onthedot worker tree: /metrics /healthz /readyz\n", TEXT),
    }
    return ProbeServer(host, port, routes, token=token, threaded=False)
