"""Text fields: one rule for both databases.

Every text onthedot stores (a queue name, a `unique_key`, a schedule key, an operator's note or
actor, job arguments) must hold no NUL character (PostgreSQL cannot store one) and no lone
surrogate (undecodable bytes; no database can encode one). Names (keys and queue names) also
hold no control character: they are printed one per line by the CLI and the admin, where a
newline could forge a line of output.

Whatever is stored (a note, an error, an older row), `printable` is the one rule for showing
it on a terminal or in a log line: control characters appear escaped, one record stays one
line.
"""

from __future__ import annotations

import re
import unicodedata

# What a terminal or a log viewer would act on rather than show: C0 and C1 controls (newline,
# carriage return, escape ...), DEL, the line and paragraph separators, and the bidirectional
# marks, overrides and isolates (text shown in another order than it is stored).
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def text_problem(value: object, field: str, *, name: bool = False) -> str | None:
    """What is wrong with `value` as the text field `field` (one line naming it), or None.
    `name`: a key or queue name, where control characters are refused too."""
    if not isinstance(value, str):
        return f"{field} must be a string, not {type(value).__name__}"
    if "\x00" in value:
        return (
            f"{field} contains a NUL character (\\x00), which PostgreSQL cannot store: remove it, "
            "or pass binary data encoded (e.g. base64)"
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return (
                f"{field} is not valid Unicode (a lone surrogate, as from undecodable bytes): "
                "decode bytes properly, or pass them encoded (e.g. base64)"
            )
    if name and not value.isprintable():
        for char in value:
            if unicodedata.category(char) == "Cc":
                return (
                    f"{field} {value[:60]!r} contains the control character {char!r}: "
                    "use printable characters only"
                )
    return None


def check_text(value: str, field: str, *, name: bool = False) -> str:
    """`value` itself, or ValueError with `text_problem`'s line."""
    problem = text_problem(value, field, name=name)
    if problem is not None:
        raise ValueError(problem)
    return value


def printable(text: str) -> str:
    """`text` as a terminal or a log line may show it: every `UNSAFE` character written the way
    Python escapes it (`\\n`, `\\r`, `\\t`, `\\x1b`, `\\u202e`), everything else unchanged."""
    return UNSAFE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group(0))[1:-1]
