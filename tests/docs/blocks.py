"""What each fenced block of a page does when the docs run (one rule per language).

- `python` whose first line is `# some/path.py` (or `# path (at the end)`): written to that
  file in the page's folder (appended to it) and compiled; what the page runs next imports it.
- `python`: executed in the page's Python session (`kernel.py`): one namespace per page,
  top-level `await` allowed, Django set up as `manage.py shell` does once the page made a
  project.
- `sh`, `shell`, `bash`: each command in the page's shell session (`shell.py`).
- `console`: each `$ command` is run; its output must match the lines shown (`...` matches
  anything).
- `yaml`: parsed; a Prometheus `scrape_configs` also passes `promtool check config`.
- `sql`: run on PostgreSQL, in a schema `onthedot migrate` made.
- `text`, or no language: prose (diagrams, syntax, tables), not run.

Any other language fails until a rule is added here, so no block is left out unseen. A block
that cannot run is preceded by `<!-- skip: next "why" -->` (Sybil's marker; pytest shows the
reason); `<!-- invisible-code-block: LANG ... -->` runs code the reader does not see.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from sybil import Document, Example, Region
from sybil.parsers.abstract.lexers import LexerCollection
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, RawFencedCodeBlockLexer

from tests.docs import checks, shell
from tests.docs.workspace import workspace

PROSE = frozenset({"", "text"})

# The first line of a block that is a file: "# myproject/tasks.py" or "# settings.py (at the end)"
FILE_LINE = re.compile(r"#\s+(?P<path>[\w][\w./-]*\.\w+)(?P<append>\s+\(at the end\))?\s*$")


def run_python(example: Example) -> None:
    source = str(example.parsed)
    target = FILE_LINE.match(source.split("\n", 1)[0])
    ws = workspace(example)
    line = example.line + example.parsed.line_offset
    if target:
        ws.write_file(target["path"], source, append=bool(target["append"]), line=line)
    else:
        ws.kernel().run(source, example.path, line)


def run_yaml(example: Example) -> None:
    source = str(example.parsed)
    target = FILE_LINE.match(source.split("\n", 1)[0])
    if target:
        workspace(example).write_file(target["path"], source, append=bool(target["append"]))
    checks.check_yaml(source, workspace(example).folder)


def run_sql(example: Example) -> None:
    checks.run_sql(str(example.parsed), workspace(example).postgres_url())


def unknown(language: str) -> Callable[[Example], None]:
    def fail(example: Example) -> None:
        raise AssertionError(
            f"no rule runs {language!r} blocks: add one to tests/docs/blocks.py, or mark the "
            'block with <!-- skip: next "why" -->'
        )

    return fail


def reported(rule: Callable[[Example], None]) -> Callable[[Example], str | None]:
    """`rule` as a Sybil evaluator: a failed check is the example's failure message (the
    page's line, what ran, what it printed), without the runner's own frames."""

    def evaluate(example: Example) -> str | None:
        try:
            rule(example)
        except AssertionError as exc:
            return str(exc)
        return None

    return evaluate


RULES: dict[str, Callable[[Example], None]] = {
    "python": run_python,
    "py": run_python,
    "sh": shell.run_block,
    "shell": shell.run_block,
    "bash": shell.run_block,
    "console": shell.run_transcript,
    "yaml": run_yaml,
    "yml": run_yaml,
    "sql": run_sql,
}


class BlockParser:
    """Every fenced block, and every invisible-code-block directive, of a page."""

    def __init__(self) -> None:
        self.lexers = LexerCollection(
            [
                RawFencedCodeBlockLexer(
                    info_pattern=re.compile(r"(?P<info>[^\n]*)$\n", re.MULTILINE),
                    mapping={"info": "arguments", "source": "source"},
                ),
                DirectiveInHTMLCommentLexer(directive=r"invisible-code-block", arguments=".+"),
            ]
        )

    def __call__(self, document: Document) -> Iterable[Region]:
        for region in self.lexers(document):
            language = (region.lexemes["arguments"] or "").strip().split(" ", 1)[0].lower()
            if language in PROSE:
                continue
            region.parsed = region.lexemes["source"]
            region.evaluator = reported(RULES.get(language) or unknown(language))
            yield region
