"""Every verb of the Storage protocol is called directly by the conformance suite."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import onthedot.storage.interface as interface

CONTRACT = Path(__file__).parent / "contract"


def _verbs() -> list[str]:
    tree = ast.parse(Path(interface.__file__).read_text("utf-8"))
    (storage,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Storage")
    verbs = (ast.FunctionDef, ast.AsyncFunctionDef)
    return [f.name for f in storage.body if isinstance(f, verbs)]


def test_every_storage_verb_has_a_direct_contract_test() -> None:
    text = "\n".join(p.read_text("utf-8") for p in sorted(CONTRACT.glob("test_*.py")))
    verbs = _verbs()
    missing = [v for v in verbs if not re.search(rf"\.{v}\(", text)]
    assert verbs and missing == [], f"verbs without a contract test: {missing}"
