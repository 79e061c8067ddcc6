"""One worker process of `onthedot worker`: the whole command with `--processes 1`, and each
child of the supervisor (forked from it, or started as `... worker --processes 1` with the
supervisor's pipe in its environment). Both run `run_worker` with the same options, so every
option of the command reaches every process."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import click

from onthedot.app import App
from onthedot.cli.context import Context, app_queues
from onthedot.cli.exit import threads_until
from onthedot.cli.leftovers import burst_reason
from onthedot.cli.new_database import warn_of_new_database
from onthedot.cli.output import say
from onthedot.domain.errors import OnthedotError
from onthedot.observability.events import Event, WorkerStarted
from onthedot.worker.channel import Channel

ENV_TREE_METRICS = "ONTHEDOT_TREE_METRICS"  # "1": count this child's events for the supervisor


@dataclass(frozen=True)
class WorkerOptions:
    """The options of `onthedot worker`, as given."""

    queues: str | None
    concurrency: int
    burst: bool
    no_scheduler: bool
    batch_size: int | None
    prefetch: int | None
    grace: float
    metrics_port: int | None
    metrics_host: str
    processes: int | None

    def argv(self) -> list[str]:
        """These options on a command line (a child started as a new program: one process,
        its metrics counted for the supervisor's endpoint rather than served)."""
        out: list[str] = []
        for flag, value in (
            ("--queues", self.queues),
            ("--concurrency", self.concurrency),
            ("--batch-size", self.batch_size),
            ("--prefetch", self.prefetch),
            ("--grace", self.grace),
        ):
            if value is not None:
                out += [flag, str(value)]
        out += ["--burst"] if self.burst else []
        out += ["--no-scheduler"] if self.no_scheduler else []
        return [*out, "--processes", "1"]


def run_worker(
    ctx: Context,
    app: App,
    options: WorkerOptions,
    channel: Channel | None = None,
    backlog: int | None = None,
) -> int:
    """Run one worker until it stops; the number of jobs it finished. With a `channel` it is
    a supervised child: it serves no endpoint of its own and reports to the supervisor.
    `backlog`: its share of the jobs waiting (None: read here)."""
    names = app_queues(app, options.queues)
    w = app.worker(
        queues=names,
        concurrency=options.concurrency,
        burst=options.burst,
        scheduler=not options.no_scheduler,
        batch_size=options.batch_size,
        prefetch=options.prefetch,
        grace=options.grace,
        watch=channel,
        backlog=queued_in(app, names) if backlog is None else backlog,
    )
    scheduler = "" if options.no_scheduler or options.burst else ", with the scheduler"
    say(
        f"worker {w.id} on queue(s) {', '.join(names)}, concurrency {options.concurrency}"
        f"{scheduler} ({ctx.describe()})"
    )
    if channel is None:  # a supervised child: its supervisor has said it
        warn_of_new_database(ctx)
    server = None
    if options.metrics_port is not None and channel is None:
        from onthedot.cli.metrics_options import serve_alone

        server = serve_alone(app, w.id, options.metrics_host, options.metrics_port)
    try:
        done = w.run()
    finally:
        if server is not None:
            server.stop()
    reason = burst_reason(app, names, w.stop_reason)  # names ready jobs it does not know
    if w.forced:
        reason += f"; forced: {w.left_running} job(s) cut short, rescued after their lease"
    say(f"worker {w.id} stopped ({reason}); {w.tally.describe()}")
    if channel is not None:
        channel.stopped(reason, done)
    threads_until((w.stopped_at or time.monotonic()) + options.grace)
    if w.forced:
        sys.exit(1)  # work was cut short: a supervisor or a shell should see it
    return done


def queued_in(app: App, queues: list[str]) -> int:
    """Jobs queued in these unpaused queues (from the job counts: one cheap read), 0 when
    the database does not answer: the first claims are sized by it (`worker/sizing.py`)."""
    try:
        stats = app.queue_stats()
    except (OnthedotError, OSError):
        return 0
    return sum(s.queued for s in stats if s.queue in queues and not s.paused)


def run_child(
    ctx: Context, app: App, options: WorkerOptions, channel: Channel, backlog: int | None = None
) -> int:
    """A supervised child's whole life; its exit status. An error no restart can fix is told
    to the supervisor (`fatal`), which stops the tree with it."""
    channel.start_pulse()

    def started(event: Event) -> None:
        if isinstance(event, WorkerStarted):
            channel.started(event.worker_id)

    app.events.subscribe(started, WorkerStarted)
    if os.environ.get(ENV_TREE_METRICS) == "1":
        from onthedot.observability import metrics

        metrics.instrument(app)  # counted in the supervisor's multiprocess folder
    try:
        run_worker(ctx, app, options, channel, backlog)
    except (OnthedotError, click.ClickException) as exc:
        channel.fatal(_one_line(exc))
        return 1
    finally:
        channel.stop_pulse()
    return 0


def _one_line(exc: Exception) -> str:
    text = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
    lines = text.strip().splitlines()
    return lines[0] if lines else type(exc).__name__
