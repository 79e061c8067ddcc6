"""Every fenced code block of README.md and docs/*.md runs as a test (Sybil collects them).

A page is one session, as a reader would live it: its blocks run in order, in a folder of its
own, sharing one Python namespace, one shell environment and the files the page writes (see
`workspace.py`). What each kind of block does is in `blocks.py`; how to mark a block that
cannot run is in docs/architecture.md ("Examples in the docs are tests").

The root `conftest.py` hands `pytest_collect_file` to pytest, and `testpaths` names README.md
and docs/, so `python -m pytest` runs every page, and a page added under docs/ needs nothing
more.
"""

from __future__ import annotations

from sybil import Sybil
from sybil.parsers.markdown import SkipParser

from tests.docs.blocks import BlockParser
from tests.docs.workspace import ROOT, close_workspace

DOCS = Sybil(
    parsers=[BlockParser(), SkipParser()],
    path=str(ROOT),
    patterns=["README.md", "docs/*.md"],
    teardown=close_workspace,
)

pytest_collect_file = DOCS.pytest()
