"""Every verb of the Storage protocol is called directly by the conformance suite."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import onthedot.storage.interface as interface

CONTRACT = Path(__file__).parent / "contract"


def _roles() -> list[type]:
    """The protocols Storage combines (storage/roles.py's roles, HealthStorage, ...)."""
    return [b for b in interface.Storage.__bases__ if b.__module__.startswith("onthedot.")]


def _verbs() -> list[str]:
    """The verbs of the Storage protocol and of every protocol it inherits."""
    found = []
    for protocol_type in (interface.Storage, *_roles()):
        module = sys.modules[protocol_type.__module__]
        tree = ast.parse(Path(str(module.__file__)).read_text("utf-8"))
        (protocol,) = (
            n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == protocol_type.__name__
        )
        verbs = (ast.FunctionDef, ast.AsyncFunctionDef)
        found += [f.name for f in protocol.body if isinstance(f, verbs)]
    return found


def test_storage_inherits_exactly_the_protocols_read_here() -> None:
    bases = [b.__name__ for b in interface.Storage.__bases__]
    assert bases == [*(r.__name__ for r in _roles()), "Protocol"], bases
    assert {"Lifecycle", "JobStore", "Claiming", "HealthStorage"} <= set(bases), bases


def test_every_storage_verb_has_a_direct_contract_test() -> None:
    text = "\n".join(p.read_text("utf-8") for p in sorted(CONTRACT.glob("test_*.py")))
    verbs = _verbs()
    missing = [v for v in verbs if not re.search(rf"\.{v}\(", text)]
    assert verbs and missing == [], f"verbs without a contract test: {missing}"
