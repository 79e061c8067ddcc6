"""Blocks that are checked rather than run as they stand: `pip install` lines, YAML settings,
SQL statements."""

from __future__ import annotations

import ast
import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from packaging.requirements import Requirement
from sybil import Document

from tests.docs.workspace import ROOT

if TYPE_CHECKING:
    from tests.docs.workspace import Workspace

PROJECT = re.compile(r"^(?:onthedot|\.)(?:\[(?P<extras>[\w,\s-]*)\])?$")
# Installers and the project itself are never a page's missing dependency.
ALWAYS = frozenset({"pip", "setuptools", "wheel", "onthedot"})
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_pip(argv: list[str], document: Document, ws: Workspace) -> None:
    """`pip install X`, checked without installing: every extra it names is in
    pyproject.toml, every other package is a real one (installed here by the dev extra), and
    what the page's Python imports and its commands run comes with what its `pip install`
    lines install."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    wanted: list[str] = []
    for target in page_pip_targets(document):
        found = PROJECT.match(target)
        if found:
            named = [e.strip() for e in (found["extras"] or "").split(",") if e.strip()]
            for extra in named:
                assert extra in extras, (
                    f"pip install {target}: pyproject.toml has no extra {extra!r}"
                )
                wanted += extras[extra]
            wanted += project["dependencies"]
        else:
            name = Requirement(target).name
            try:
                md.distribution(name)
            except md.PackageNotFoundError:
                raise AssertionError(
                    f"pip install {target}: {name} is not installed here"
                ) from None
            wanted.append(target)
    installed = closure(wanted)
    missing = {
        what: dists for what, dists in page_needs(document).items() if not (dists & installed)
    }
    assert not missing, (
        f"`{' '.join(argv)}` (with the page's other pip lines) does not install what the page "
        f"uses: {', '.join(f'{what} ({sorted(d)[0]})' for what, d in sorted(missing.items()))}"
    )


def pip_targets(argv: list[str]) -> list[str]:
    """The requirements a `pip install` command names."""
    start = argv.index("install") + 1
    return [word for word in argv[start:] if not word.startswith("-")]


def page_pip_targets(document: Document) -> list[str]:
    """The requirements every `pip install` of the page names: a page installs them all."""
    from tests.docs.shell import commands, split_and, words

    found: list[str] = []
    for _, region in document.regions:
        language = (region.lexemes.get("arguments") or "").split(" ", 1)[0].lower()
        if language not in ("sh", "shell", "bash"):
            continue
        for command in commands(str(region.lexemes.get("source", ""))):
            for part in split_and(command):
                argv = words(part)
                if "pip" in argv[:3] and "install" in argv:
                    found += pip_targets(argv)
    return found


def closure(requirements: Iterable[str]) -> set[str]:
    """Every distribution installing `requirements` brings in (as installed here)."""
    seen: set[str] = set(ALWAYS)
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = norm(req.name)
        extras_key = {f"{name}[{e}]" for e in req.extras}
        if name in seen and extras_key <= seen:
            continue
        seen.add(name)
        seen |= extras_key
        try:
            requires = md.requires(req.name) or []
        except md.PackageNotFoundError:
            continue
        for text in requires:
            sub = Requirement(text)
            if sub.marker is None:
                todo.append(sub)
                continue
            for extra in ("", *req.extras):
                if sub.marker.evaluate({"extra": extra}):
                    sub.marker = None
                    todo.append(sub)
                    break
    return seen


def page_needs(document: Document) -> dict[str, set[str]]:
    """What the page's code needs from installed distributions: each module its Python
    imports and each program its shell runs, with the distributions that provide it."""
    providers = {k: {norm(d) for d in v} for k, v in md.packages_distributions().items()}
    scripts = {
        ep.name: norm(ep.dist.name)
        for ep in md.entry_points(group="console_scripts")
        if ep.dist is not None
    }
    needs: dict[str, set[str]] = {}
    for _, region in document.regions:
        language = (region.lexemes.get("arguments") or "").split(" ", 1)[0].lower()
        source = str(region.lexemes.get("source", ""))
        if language in ("python", "py"):
            for module in imported(source):
                if module in providers and module not in sys.stdlib_module_names:
                    needs[f"import {module}"] = providers[module]
        elif language in ("sh", "shell", "bash", "console"):
            for line in source.splitlines():
                program = line.removeprefix("$ ").strip().split(" ", 1)[0]
                if program in scripts and program not in ("pip", "onthedot"):
                    needs[program] = {scripts[program]}
    return {what: dists for what, dists in needs.items() if not dists & ALWAYS}


def imported(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def check_yaml(source: str, folder: Path) -> None:
    """YAML settings parse; a Prometheus configuration passes `promtool check config`."""
    import yaml

    data = yaml.safe_load(source)
    assert data is not None, "an empty YAML block"
    if isinstance(data, dict) and "scrape_configs" in data:
        promtool = shutil.which("promtool")
        if promtool is None:
            if IN_CI:
                pytest.fail("promtool is required under CI=true")
            pytest.skip("promtool not installed")
        path = folder / ".docs-prometheus.yml"
        path.write_text(source)
        done = subprocess.run(
            [promtool, "check", "config", str(path)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"promtool check config:\n{done.stdout}{done.stderr}"


def run_sql(source: str, url: str) -> None:
    """Every statement of the block runs on PostgreSQL, in the page's migrated schema."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(source.encode())
