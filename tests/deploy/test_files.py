"""The files under deploy/ parse, run the README's commands, and give a stopping worker more
time than its --grace."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import click
import pytest

from onthedot.cli.main import cli

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"


def load(name: str) -> Any:
    return yaml.safe_load((DEPLOY / name).read_text())


def grace(command: list[str]) -> int:
    return int(command[command.index("--grace") + 1])


def check_command(command: list[str]) -> None:
    """An onthedot command line whose subcommand and options exist."""
    assert command[0] == "onthedot"
    sub = cli.get_command(click.Context(cli), command[1])
    assert sub is not None, f"no command onthedot {command[1]}"
    known = {opt for param in sub.params for opt in getattr(param, "opts", [])}
    for word in command[2:]:
        if word.startswith("-"):
            assert word in known, f"{word} is not an option of onthedot {command[1]}"


def test_dockerfile_runs_the_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    docker = (DEPLOY / "Dockerfile").read_text()
    assert "pip install ." in readme and re.search(r"^RUN pip install .* \.( |$)", docker, re.M)
    cmd = re.search(r"^CMD (\[.*\])$", docker, re.M)
    assert cmd is not None
    command = yaml.safe_load(cmd.group(1))
    check_command(command)
    assert "worker" in command and "onthedot --app myproject.tasks:app worker" in readme


def test_compose() -> None:
    compose = load("compose.yaml")
    services = compose["services"]
    assert services["db"]["image"].startswith("postgres:")
    assert services["migrate"]["command"] == ["onthedot", "migrate"]
    worker = services["worker"]
    check_command(worker["command"])
    assert worker["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert int(worker["stop_grace_period"].rstrip("s")) > grace(worker["command"])
    assert worker["environment"]["ONTHEDOT_DATABASE_URL"].startswith("postgresql://")
    check_command(services["web"]["command"])


def test_kubernetes() -> None:
    job = load("k8s/migrate-job.yaml")
    assert job["kind"] == "Job"
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["onthedot", "migrate"]
    deployment = load("k8s/worker-deployment.yaml")
    assert deployment["kind"] == "Deployment"
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    check_command(container["command"])
    assert pod["terminationGracePeriodSeconds"] > grace(container["command"])
    command = container["command"]
    port = int(command[command.index("--metrics-port") + 1])
    [named] = [p for p in container["ports"] if p["containerPort"] == port]
    paths = {}
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["port"] in (port, named["name"])
        paths[probe] = get["path"]
    assert paths == {"readinessProbe": "/readyz", "livenessProbe": "/healthz"}


def test_systemd_unit() -> None:
    unit = (DEPLOY / "onthedot-worker.service").read_text()
    lines = dict(
        line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#")
    )
    start = shlex.split(lines["ExecStart"])
    start[0] = Path(start[0]).name
    check_command(start)
    assert int(lines["TimeoutStopSec"]) > grace(start)
    assert shlex.split(lines["ExecStartPre"])[1:] == ["migrate"]


def test_docs_reference_every_file() -> None:
    doc = (ROOT / "docs" / "deploying.md").read_text()
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            assert f"deploy/{path.relative_to(DEPLOY)}" in doc
