"""`onthedot limits` (list, set, reset) and `onthedot jobs explain` on both databases."""

from __future__ import annotations

import json

from click.testing import CliRunner

from onthedot.cli.main import cli
from onthedot.storage.interface import WorkerInfo
from tests.cli.limits_app import app

APP = "tests.cli.limits_app:app"


def run(db_url: str, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["--app", APP, "--database", db_url, *args])
    return r.exit_code, r.output


def test_list_set_reset_and_explain(db_url: str) -> None:
    app.use_database(db_url)
    try:
        app.migrate()
        app.limits.sync()
        app.storage.register_worker(WorkerInfo("w1", "h", 1, ("default",), 4, jobs=("charge",)))
        first, second = [app.jobs["charge"].enqueue(42, 5) for _ in range(2)]
        assert [c.id for c in app.storage.claim_limited("w1", "default", 5, 30)] == [first]
    finally:
        app.close()
    code, out = run(db_url, "limits")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == "charge: concurrency 1"
    assert lines[1] == "  charge (customer_id=42): 1 running, 1 waiting"
    assert lines[2] == "stripe: concurrency 20, rate 100/s burst 100"
    code, out = run(db_url, "jobs", "explain", str(second))
    assert (code, out) == (
        0,
        "limit charge (customer_id=42) at 1/1 running; next start when one of them ends\n",
    )
    code, out = run(db_url, "limits", "set", "stripe", "--rate", "5/m", "--note", "incident")
    assert code == 0, out
    assert out == (
        "stripe: concurrency 20, rate 5/m burst 100 (overridden; the code says "
        "concurrency 20, rate 100/s burst 100)\n"
    )
    code, out = run(db_url, "limits", "--json")
    stripe = next(v for v in json.loads(out) if v["name"] == "stripe")
    assert (stripe["rate"], stripe["overridden"]) == ("5/m", True)
    code, out = run(db_url, "limits", "reset", "stripe")
    assert (code, out) == (0, "stripe: concurrency 20, rate 100/s burst 100\n")
    code, out = run(db_url, "limits", "set", "nope", "--concurrency", "2")
    assert code == 1
    assert "no limit named 'nope' (limits: charge, stripe)" in out


def test_check_reports_a_bad_limit_in_one_line(tmp_path: object) -> None:
    r = CliRunner().invoke(cli, ["--app", "tests.cli.limits_bad_app:app", "check"])
    assert r.exit_code == 1
    (line,) = r.output.strip().splitlines()
    assert "rate='ten' is not a rate" in line and '"10/s"' in line
