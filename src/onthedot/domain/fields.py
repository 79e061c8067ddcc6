"""Text fields: one rule for both databases.

Every text onthedot stores (a queue name, a `unique_key`, a schedule key, an operator's note or
actor, job arguments) must hold no NUL character (PostgreSQL cannot store one) and no lone
surrogate (undecodable bytes; no database can encode one). Names (keys and queue names) also
hold no control character: they are printed one per line by the CLI and the admin, where a
newline could forge a line of output.
"""

from __future__ import annotations

import unicodedata


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
