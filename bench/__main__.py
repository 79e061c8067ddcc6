"""`python -m bench --quick | --full`: run every workload for onthedot, its peers and the SQL
floors, interleaved, and write docs/benchmarks.md (raw results go to bench/results/)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
VENV = BENCH / ".venv"
REQUIREMENTS = BENCH / "requirements-peers.txt"
WORKLOADS = ["enqueue", "drain", "latency", "scheduler", "crash", "defaults", "many"]


def ensure_venv() -> None:
    """Create bench/.venv (python -m venv + pip) when missing or when the requirements
    changed, then re-run this command on its python."""
    if Path(sys.prefix).resolve() == VENV.resolve():
        return
    stamp = VENV / ".requirements.sha256"
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    py = VENV / "bin" / "python"
    if not py.exists() or not stamp.exists() or stamp.read_text() != digest:
        print(f"[bench] creating {VENV} from {REQUIREMENTS.name}", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        pip = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "--upgrade", "pip"], check=True)
        subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
        subprocess.run([*pip, "-e", str(BENCH.parent)], check=True)
        stamp.write_text(digest)
    os.execv(str(py), [str(py), "-m", "bench", *sys.argv[1:]])


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="small sizes, one round (< 3 min)")
    mode.add_argument("--full", action="store_true", help="the sizes of the issue, 3 rounds")
    ap.add_argument("--only", default=",".join(WORKLOADS), help="workloads to run")
    ap.add_argument("--systems", default="", help="comma-separated system keys (default: all)")
    ap.add_argument("--rounds", type=int, help="override the number of interleaved rounds")
    ap.add_argument("--sweep", action="store_true", help="also run the drain settings sweep")
    ap.add_argument("--profile", metavar="DIR", help="cProfile onthedot's cells into DIR")
    ap.add_argument("--out", default=str(BENCH.parent / "docs" / "benchmarks.md"))
    ap.add_argument("--no-doc", action="store_true", help="print results, leave the doc alone")
    ap.add_argument(
        "--render",
        metavar="JSON",
        help="only re-render the doc from saved results (comma-separated files)",
    )
    return ap.parse_args()


def main() -> None:
    ensure_venv()
    args = parse()
    sys.path.insert(0, str(BENCH.parent / "src"))
    from dataclasses import replace

    from bench import report
    from bench.harness import Results, drop_database, fresh_database, log, run_cell
    from bench.plan import FULL, QUICK, Context
    from bench.systems import ALL
    from bench.workloads import crash, defaults, drain, enqueue, latency, many, scheduler

    if args.render:
        rerender([Path(p) for p in args.render.split(",")], Path(args.out))
        return
    sizes = FULL if args.full else QUICK
    if args.rounds:
        sizes = replace(sizes, rounds=args.rounds)
    keys = {s.key for s in ALL}
    if args.systems:
        keys = {k.strip() for k in args.systems.split(",")}
    workdir = Path(tempfile.mkdtemp(prefix="onthedot-bench-"))
    redis_port = int(os.environ.get("BENCH_REDIS_PORT", "6391"))  # another run may hold 6391
    redis = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(redis_port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
    )
    redis_url = f"redis://127.0.0.1:{redis_port}/0"
    os.environ["BENCH_REDIS_URL"] = redis_url
    profile_dir = Path(args.profile).resolve() if args.profile else None
    if profile_dir:
        profile_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context(
        sizes=sizes,
        results=Results(),
        workdir=workdir,
        redis_url=redis_url,
        redis_pid=redis.pid,
        systems=keys,
        profile_dir=profile_dir,
        sweep=args.sweep,
    )
    started = time.time()
    machine = report.machine_info()
    dbs = [s for s in ALL if s.db and s.key in keys]
    try:
        for s in dbs:
            url = fresh_database(s.db or "")
            run_cell(s.cell, "setup", {"url": url, **s.setup}, timeout=300)
        modules = {
            "enqueue": enqueue,
            "drain": drain,
            "latency": latency,
            "scheduler": scheduler,
            "crash": crash,
            "defaults": defaults,
            "many": many,
        }
        for name in [w.strip() for w in args.only.split(",") if w.strip()]:
            modules[name].run(ctx)
    finally:
        redis.terminate()
        redis.wait()
        for s in dbs:
            drop_database(s.db or "")
        shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.time() - started
    machine["load_after"] = report.loadavg()
    mode = "full" if args.full else "quick"
    raw = {
        "mode": mode,
        "sizes": sizes.__dict__,
        "elapsed_s": elapsed,
        "machine": machine,
        "cells": [c.to_json() for c in ctx.results.cells.values()],
    }
    results_dir = BENCH / "results"
    results_dir.mkdir(exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (results_dir / f"{stamp}-{mode}.json").write_text(json.dumps(raw, indent=1, default=str))
    text = report.render(ctx.results, machine, mode, sizes, elapsed)
    if args.no_doc:
        print(text)
    else:
        Path(args.out).write_text(text)
        log(f"wrote {args.out} ({elapsed:.0f} s)")


def rerender(sources: list[Path], out: Path) -> None:
    """Write the doc again from bench/results/*.json (after editing bench/NOTES.md). With
    several files, a later file's workloads replace the earlier ones' (e.g. a re-run drain)."""
    from bench import report
    from bench.harness import Cell, Results
    from bench.plan import Sizes

    results = Results()
    raw: dict[str, Any] = {}
    for source in sources:
        raw = json.loads(source.read_text())
        workloads = {c["workload"] for c in raw["cells"]}
        for key in [k for k in results.cells if k[0] in workloads]:
            del results.cells[key]
        for c in raw["cells"]:
            cell = Cell(
                c["workload"],
                c["metric"],
                c["system"],
                c["config"],
                c["unit"],
                c["higher_is_better"],
                c["values"],
                c["extra"],
                c["errors"],
            )
            results.cells[(cell.workload, cell.metric, cell.system, cell.config)] = cell
    first = json.loads(sources[0].read_text())
    sizes = Sizes(**{k: tuple(v) if isinstance(v, list) else v for k, v in first["sizes"].items()})
    elapsed = sum(json.loads(s.read_text())["elapsed_s"] for s in sources)
    out.write_text(report.render(results, first["machine"], first["mode"], sizes, elapsed))
    print(f"wrote {out} from {', '.join(map(str, sources))}", file=sys.stderr)


if __name__ == "__main__":
    main()
