"""The layout rules of docs/architecture.md, checked on the source: no private name imported
across modules, clients (web/, cli/, contrib/) through the App and never the storage, and files
of at most 600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "onthedot"
CLIENTS = ("web", "cli", "contrib")
MAX_LINES = 600


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"), filename=str(path))


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(SRC.parent)}:{getattr(node, 'lineno', 0)}"


def test_no_private_name_is_imported_from_another_module() -> None:
    found = [
        f"{_where(path, node)} imports {alias.name} from {node.module or '.'}"
        for path in _modules()
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert found == []


def test_clients_never_touch_the_storage() -> None:
    found = []
    for folder in CLIENTS:
        for path in sorted((SRC / folder).rglob("*.py")):
            for node in ast.walk(_tree(path)):
                if isinstance(node, ast.Attribute) and node.attr in ("storage", "raw_storage"):
                    found.append(f"{_where(path, node)} reads .{node.attr}")
                elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "onthedot.storage"
                ):
                    found.append(f"{_where(path, node)} imports {node.module}")
    assert found == []


def test_no_source_file_over_the_line_guide() -> None:
    long = {
        str(path.relative_to(SRC.parent)): n
        for path in _modules()
        if (n := len(path.read_text("utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
