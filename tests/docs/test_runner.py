"""The docs runner fails a page for each way an example can be wrong, and passes a right one
(pages written here, run by the same parsers as README.md and docs/*.md)."""

from __future__ import annotations

import textwrap
import unittest
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.example import SybilFailure
from sybil.parsers.markdown import SkipParser

from tests.docs.blocks import BlockParser
from tests.docs.shell import READY
from tests.docs.workspace import Workspace, close_workspace

FENCE = "```"


def run_page(tmp_path: Path, text: str) -> list[str]:
    """Evaluate every example of the page in order; the failure message of each that failed."""
    page = tmp_path / "page.md"
    page.write_text(textwrap.dedent(text).replace("~~~", FENCE))
    sybil = Sybil(parsers=[BlockParser(), SkipParser()], path=str(tmp_path), patterns=["*.md"])
    document = sybil.parse(page)
    failures: list[str] = []
    try:
        for example in document.examples():
            try:
                example.evaluate()
            except SybilFailure as exc:
                failures.append(str(exc))
            except (pytest.skip.Exception, unittest.SkipTest):
                failures.append("skipped")
    finally:
        close_workspace(document.namespace)
    return failures


@pytest.mark.slow
def test_a_right_page_passes_with_shared_state(tmp_path: Path) -> None:
    failures = run_page(
        tmp_path,
        """
        ~~~python
        # pkg/jobs.py
        import onthedot

        app = onthedot.App()

        @app.job(name="hello")
        def hello(who: str) -> str:
            return f"hello {who}"
        ~~~

        ~~~sh
        export GREETING=hi
        onthedot --app pkg.jobs:app migrate
        ~~~

        ~~~python
        import os

        from pkg.jobs import hello

        job_id = hello.enqueue(os.environ["GREETING"])
        await hello.aenqueue("async")      # top-level await, as in `python -m asyncio`
        ~~~

        ~~~console
        $ onthedot --app pkg.jobs:app worker --burst
        ...2 attempt(s) ran
        $ onthedot jobs list --state succeeded
        ...hello
        ~~~

        ~~~python
        from pkg.jobs import app

        assert [app.get_job(i).state.value for i in (1, 2)] == ["succeeded", "succeeded"]
        ~~~
        """,
    )
    assert failures == []


@pytest.mark.parametrize(
    ("block", "says"),
    [
        ("~~~python\nraise LookupError('boom')\n~~~", "LookupError: boom"),
        ("~~~python\n# broken.py\ndef f(:\n~~~", "SyntaxError"),
        ("~~~sh\nls /no/such/folder\n~~~", "`ls /no/such/folder` exited 2"),
        ("~~~console\n$ echo one\ntwo\n~~~", "--- expected ---\ntwo"),
        ("~~~ruby\nputs 1\n~~~", "no rule runs 'ruby' blocks"),
        ("~~~yaml\nscrape_configs: [{job_name: 1, static_configs: x}]\n~~~", "promtool"),
        ('~~~sh\npip install "onthedot[nosuchextra]"\n~~~', "no extra 'nosuchextra'"),
        (
            "~~~sh\npip install onthedot\n~~~\n\n~~~python\nimport fastapi\n~~~",
            "does not install what the page uses: import fastapi",
        ),
        ("~~~sh\nonthedot --app nowhere:app worker\n~~~", "exited 2 before it was ready"),
    ],
)
def test_each_kind_of_wrong_example_fails(tmp_path: Path, block: str, says: str) -> None:
    failures = run_page(tmp_path, block)
    assert failures and says in failures[0], failures


def test_a_marked_block_is_skipped_and_says_why(tmp_path: Path) -> None:
    failures = run_page(tmp_path, '<!-- skip: next "needs a moon base" -->\n~~~sh\nexit 1\n~~~\n')
    assert failures == ["skipped"]


def test_a_server_that_fails_its_stop_fails_the_page(tmp_path: Path) -> None:
    """A served command is stopped at the page's end; one that does not exit as it should on
    SIGTERM fails the page."""
    ws = Workspace.create(tmp_path / "page.md")
    (ws.folder / "trap.py").write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: sys.exit(3))\n"
        "print('worker_started', flush=True)\n"
        "time.sleep(60)\n"
    )
    ws.start("python trap.py", READY, frozenset({0}))
    with pytest.raises(AssertionError, match="exited 3 on SIGTERM"):
        ws.close()


def test_a_server_started_with_variables_runs_in_the_background(tmp_path: Path) -> None:
    """`NAME=value onthedot ... worker` is a serving command too: it runs in the background and
    is stopped at the page's end (it ran in the foreground, timed out and was left running)."""
    failures = run_page(
        tmp_path,
        """
        ~~~sh
        ONTHEDOT_TEST_GREETING=hi onthedot --app myproject.tasks:app worker --processes 1
        onthedot jobs list
        ~~~
        """,
    )
    assert failures == [], failures


def test_whole_commands(tmp_path: Path) -> None:
    """Variables set for one command are not its name, and a command that outlives its time
    is killed with everything it started."""
    from tests.docs.shell import without_assignments, words

    assert without_assignments(words('A=1 B="x y" onthedot worker')) == ["onthedot", "worker"]
    assert without_assignments(words("onthedot A=1")) == ["onthedot", "A=1"]
