"""Entry point of one subprocess cell: `python -m bench.cell SYSTEM ACTION JSON-PARAMS`.

The action's return value is printed as the last line, `RESULT {json}`.
"""

from __future__ import annotations

import importlib
import json
import sys

MODULES = {
    "onthedot": "bench.ours",
    "big": "bench.bigcells",
    "stats": "bench.stats_cells",
    "floor": "bench.floors",
    "pgqueuer": "bench.peers.pgq_cells",
    "procrastinate": "bench.peers.procrastinate_cells",
    "celery": "bench.peers.celery_cells",
    "limits": "bench.limits_peers",
}


def main() -> None:
    system, action, params = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    module = importlib.import_module(MODULES[system])
    result = getattr(module, action)(params)
    print("RESULT " + json.dumps(result if result is not None else {}), flush=True)


if __name__ == "__main__":
    main()
