"""Issue 25 item 4: the default number of worker processes follows the container's CPU limit,
not the host's cores. `docker run --cpus 2` on a 64-core host used to start 64 processes.

The parsing runs on cgroup trees written to a folder (v2 `cpu.max`, v1 quota files, a
limit on a parent cgroup, a container that sees its cgroup as the root); the real test puts
`onthedot worker` into a cgroup v1 with a one-CPU quota, where the kernel enforces it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from onthedot.worker.cpus import available_cpus, cgroup_quota
from tests.worker.tree import APP, ROOT

V1_CPU = Path("/sys/fs/cgroup/cpu")


def fake_proc(tmp: Path, cgroup: str, mountinfo: str) -> Path:
    proc = tmp / "proc"
    proc.mkdir()
    (proc / "cgroup").write_text(cgroup)
    (proc / "mountinfo").write_text(mountinfo.replace("ROOT", str(tmp)))
    return proc


def write(folder: Path, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("_", ".", 1)).write_text(text + "\n")


V2_MOUNT = "30 25 0:26 / ROOT/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"


def test_cgroup_v2_quota(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, "0::/kubepods/pod1/c1\n", V2_MOUNT)
    write(tmp_path / "fs/cgroup/kubepods/pod1/c1", cpu_max="150000 100000")
    assert cgroup_quota(proc) == 1.5
    assert available_cpus(proc) == min(2, len(os.sched_getaffinity(0)))  # 1.5 rounds up


def test_cgroup_v2_no_limit_and_a_limit_above(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, "0::/a/b\n", V2_MOUNT)
    write(tmp_path / "fs/cgroup/a/b", cpu_max="max 100000")
    assert cgroup_quota(proc) is None
    write(tmp_path / "fs/cgroup/a", cpu_max="50000 100000")  # the parent's limit holds too
    assert cgroup_quota(proc) == 0.5
    assert available_cpus(proc) == 1


def test_container_sees_its_cgroup_as_the_root(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, "0::/\n", V2_MOUNT)
    write(tmp_path / "fs/cgroup", cpu_max="200000 100000")
    assert cgroup_quota(proc) == 2.0


def test_cgroup_v1_quota(tmp_path: Path) -> None:
    mount = "40 25 0:30 /docker/abc ROOT/fs/cpu rw - cgroup cgroup rw,cpu,cpuacct\n"
    proc = fake_proc(tmp_path, "4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n", mount)
    write(tmp_path / "fs/cpu", cpu_cfs_quota_us="100000", cpu_cfs_period_us="100000")
    assert cgroup_quota(proc) == 1.0
    write(tmp_path / "fs/cpu", cpu_cfs_quota_us="-1", cpu_cfs_period_us="100000")
    assert cgroup_quota(proc) is None


def test_nothing_readable_is_no_limit(tmp_path: Path) -> None:
    assert cgroup_quota(tmp_path / "missing") is None
    proc = fake_proc(tmp_path, "garbage\n", "garbage\n")
    assert cgroup_quota(proc) is None
    assert available_cpus(proc) >= 1


def test_python_cpu_count_is_taken_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = fake_proc(tmp_path, "0::/\n", V2_MOUNT)
    write(tmp_path / "fs/cgroup", cpu_max="50000 100000")
    monkeypatch.setenv("PYTHON_CPU_COUNT", "2")
    assert available_cpus(proc) >= 1  # the quota is not applied: the user said how many


def _writable_v1() -> bool:
    return (
        os.geteuid() == 0 and (V1_CPU / "cpu.cfs_quota_us").exists() and os.access(V1_CPU, os.W_OK)
    )


@pytest.mark.skipif(not _writable_v1(), reason="needs root and a writable cgroup v1 cpu hierarchy")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs to tell 1 apart")
def test_worker_in_a_one_cpu_cgroup_starts_one_process(pg_url: str, tmp_path: Path) -> None:
    group = V1_CPU / f"onthedot-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("100000")  # one CPU's worth of time
        env = dict(os.environ, ONTHEDOT_DATABASE_URL=pg_url)
        env.pop("ONTHEDOT_APP", None)
        subprocess.run([sys.executable, "-m", "onthedot", "migrate"], env=env, check=True, cwd=ROOT)
        script = f'echo $$ > {group}/cgroup.procs && exec "$@"'
        command = [sys.executable, "-m", "onthedot", "--app", APP, "worker", "--burst"]
        result = subprocess.run(
            ["sh", "-c", script, "sh", *command],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        group.rmdir()
    assert result.returncode == 0, result.stderr
    assert "worker supervisor: 1 process(es)" in result.stderr, result.stderr
