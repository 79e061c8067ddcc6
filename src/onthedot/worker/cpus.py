"""How many CPUs this process may use: the default number of worker processes.

`os.cpu_count()` is the host's, and the CPU affinity only what the scheduler may place the
process on: in a container limited by a CPU quota (`docker run --cpus 2`, a Kubernetes CPU
limit) on a 64-core host both say 64, and 64 workers would fight over two CPUs' worth of time.
The count here is the smallest of:

- `os.process_cpu_count()` (Python 3.13+, which honours `PYTHON_CPU_COUNT` / `-X cpu_count`),
  else the affinity (`os.sched_getaffinity`), else `os.cpu_count()`;
- the CPU quota of the process's cgroup and of each cgroup above it that is visible, rounded
  up: cgroup v2 `cpu.max` (`quota period`, or `max`), cgroup v1 `cpu.cfs_quota_us` /
  `cpu.cfs_period_us` (-1: none).

An explicit `PYTHON_CPU_COUNT` is taken as it is: the user said how many.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

PROC = Path("/proc/self")


def available_cpus(proc: Path = PROC) -> int:
    """CPUs this process may use (at least 1)."""
    count = _process_count()
    if os.environ.get("PYTHON_CPU_COUNT"):
        return count
    quota = cgroup_quota(proc)
    if quota is not None:
        count = min(count, max(1, math.ceil(quota)))
    return max(1, count)


def _process_count() -> int:
    counter = getattr(os, "process_cpu_count", None)
    if counter is not None:
        found = counter()
        if found:
            return int(found)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cgroup_quota(proc: Path = PROC) -> float | None:
    """The tightest CPU quota (in CPUs) over this process's cgroups, or None."""
    try:
        memberships = (proc / "cgroup").read_text().splitlines()
        mounts = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return None
    quotas = [q for d in _cgroup_dirs(memberships, mounts) if (q := _quota(d)) is not None]
    return min(quotas) if quotas else None


def _cgroup_dirs(memberships: list[str], mounts: list[str]) -> list[Path]:
    """The folders of this process's CPU cgroup and of those above it, as mounted here."""
    paths: dict[str, str] = {}  # "v2" or "v1" -> the cgroup's path in its hierarchy
    for line in memberships:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            paths["v2"] = path
        elif "cpu" in controllers.split(","):
            paths["v1"] = path
    found: list[Path] = []
    for line in mounts:
        # id parent major:minor root mountpoint options [optional...] - fstype source super
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or not tail:
            continue
        root, point, fstype = fields[3], fields[4], tail[0]
        if fstype == "cgroup2" and "v2" in paths:
            found += _ancestors(Path(point), root, paths["v2"])
        elif fstype == "cgroup" and "v1" in paths and "cpu" in tail[-1].split(","):
            found += _ancestors(Path(point), root, paths["v1"])
    return found


def _ancestors(point: Path, root: str, path: str) -> list[Path]:
    """`path` (in the hierarchy) under a mount of `root` at `point`, and its parents up to the
    mount point (a container sees its own cgroup as the root: root "/" or its path)."""
    relative = path
    if root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")):
        relative = path[len(root) :]
    parts = [p for p in relative.split("/") if p and p not in (".", "..")]
    return [point.joinpath(*parts[:n]) for n in range(len(parts), -1, -1)]


def _quota(folder: Path) -> float | None:
    try:
        text = (folder / "cpu.max").read_text().split()
    except OSError:
        text = []
    if len(text) == 2:
        if text[0] == "max":
            return None
        return _ratio(text[0], text[1])
    try:
        quota = (folder / "cpu.cfs_quota_us").read_text().strip()
        period = (folder / "cpu.cfs_period_us").read_text().strip()
    except OSError:
        return None
    return _ratio(quota, period)


def _ratio(quota: str, period: str) -> float | None:
    try:
        q, p = int(quota), int(period)
    except ValueError:
        return None
    if q <= 0 or p <= 0:
        return None
    return q / p
