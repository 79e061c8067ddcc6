"""How the fast lane spreads the tests over pytest-xdist workers (`-n 4`): test by test, as
xdist's default `load` does, except the docs' examples, which all run on one worker in their
order: a page is one session whose blocks depend on the ones before, and pages serve on the
same fixed ports (8000, 8001, 8002). An explicit `--dist` keeps xdist's own scheduler."""

from __future__ import annotations

from typing import Any

import pytest

DOCS_SCOPE = "docs"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "load":
        return None  # another --dist was asked for: xdist's own
    from xdist.scheduler import LoadScopeScheduling

    class DocsTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return DOCS_SCOPE if path.endswith(".md") else nodeid

    return DocsTogether(config, log)
