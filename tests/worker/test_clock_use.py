"""Every wait of the worker and the scheduler goes through a Clock (docs/architecture.md, "Time
and waiting"): no module of `worker/` or `schedules/` reads `time.monotonic()` or sleeps with
`time.sleep`/`asyncio.sleep` itself, and a clock assigned to the app reaches a worker built
before."""

from __future__ import annotations

import ast
from pathlib import Path

from onthedot import App, ManualClock

SRC = Path(__file__).resolve().parents[2] / "src" / "onthedot"
FORBIDDEN = {("time", "monotonic"), ("time", "sleep"), ("asyncio", "sleep"), ("time", "time")}


def _direct_calls(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and (node.value.id, node.attr) in FORBIDDEN
        ):
            found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.value.id}.{node.attr}")
        if isinstance(node, ast.ImportFrom) and node.module in ("time", "asyncio"):
            names = {a.name for a in node.names}
            if names & {"monotonic", "sleep", "time"}:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} from {node.module} import")
    return found


def test_worker_and_schedules_wait_only_on_a_clock() -> None:
    files = sorted([*(SRC / "worker").glob("*.py"), *(SRC / "schedules").glob("*.py")])
    assert files
    found = [hit for f in files for hit in _direct_calls(f)]
    assert found == [], "use the component's clock (or clock.REAL):\n" + "\n".join(found)


def test_a_clock_assigned_later_reaches_the_worker(sqlite_url: str) -> None:
    app = App(sqlite_url, log_events=False)
    try:
        app.migrate()
        worker = app.worker(install_signals=False, scheduler=False)
        clock = ManualClock()
        app.clock = clock  # after the worker was built
        clock.advance(5)
        for component in (worker.claimer, worker.keeper, worker.paused):
            assert component.clock.fixed_now() == clock.now()
            assert component.clock.monotonic() == 5.0
    finally:
        app.close()
