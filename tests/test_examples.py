"""The bundled examples run as a reader would run them (in a folder of their own, SQLite by
default): the quickstart the README's first command runs, the observability example, the
Celery beat import. The Django, FastAPI and CPU examples are run by their integration tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run(*argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_quickstart_runs_jobs_a_retry_and_a_schedule(tmp_path: Path) -> None:
    done = run(sys.executable, str(EXAMPLES / "quickstart.py"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "welcome mail sent to user 1 (pro)" in out
    assert "succeeded on attempt 2" in out
    assert "report for slot" in out
    assert "Traceback" not in out + done.stderr
    assert (tmp_path / "onthedot.db").exists()  # the default database, in the current folder


def test_observability_example_prints_metrics_spans_and_json_logs(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    pytest.importorskip("prometheus_client")
    done = run(sys.executable, str(EXAMPLES / "observability.py"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'onthedot_jobs_finished_total{job="greet",queue="default",state="succeeded"} 1.0' in (
        done.stdout
    )
    assert '"name": "process default"' in done.stdout  # the consumer span, on the console
    assert '"message": "greeting world"' in done.stderr and '"job": "greet"' in done.stderr


def test_celery_beat_example_imports_into_schedule_lines(tmp_path: Path) -> None:
    pytest.importorskip("celery")
    onthedot = str(Path(sys.executable).parent / "onthedot")
    done = run(onthedot, "import-beat", "examples.celery_beat:celery_app", cwd=ROOT)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("app.schedule(")]
    assert len(lines) == 4, done.stdout
    assert any("30 2 * * *" in line and "Europe/Paris" in line for line in lines), lines
    assert any("every 30s" in line for line in lines), lines
    assert any("every 6h" in line for line in lines), lines
