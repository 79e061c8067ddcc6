"""How deep JSON may nest, and the one way onthedot decodes JSON it reads back from storage.

Python's `json` encodes and decodes nested arrays and objects by recursion: a value nested
deeper than the interpreter's recursion limit (about 1,000, less the caller's own frames)
raises `RecursionError` wherever it is touched, and a worker that decoded such a row while
claiming a batch lost the whole batch. So job arguments and results may nest at most
`MAX_NESTING` levels (checked at enqueue and when a job returns), and stored JSON is decoded
by `load_stored`, which never raises: a value nested deeper (a row written by an older
version, or by hand) or not JSON at all comes back as an `Undecodable` saying why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

# Documented (docs/jobs.md): one argument, or a job's result, may nest arrays and objects at
# most this deep (`[[1]]` is 2).
MAX_NESTING = 100
# What onthedot stores wraps an argument in up to three more levels (the list of positional
# arguments, in a schedule's definition, in an audit entry's changes): stored JSON nested
# deeper than this was not written by onthedot's own checks and is not decoded.
STORED_NESTING = MAX_NESTING + 3

_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def too_deep(text: str, limit: int) -> bool:
    """True if the JSON `text` nests arrays and objects more than `limit` levels deep.
    Cheap for the common case: a valid text too short, or with too few brackets, cannot be
    (an invalid one that passes is at most as deep as it is long)."""
    if len(text) <= 2 * limit or text.count("[") + text.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _outside_strings(text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


def _outside_strings(text: str) -> str:
    """`text` without its JSON strings (brackets inside them do not nest anything): escaped
    backslashes, then escaped quotes, are dropped, so every `"` left opens or closes one."""
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    return "".join(text.split('"')[::2])


def value_too_deep(value: object, limit: int) -> bool:
    """True if the Python `value` nests lists, tuples and dicts more than `limit` levels deep.
    Walks no deeper than `limit + 1` (so a cycle or a million levels end at once), and each
    container once per depth it is reached at."""
    seen: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        t = type(item)
        if t is not list and t is not tuple and t is not dict:
            continue
        if depth > limit:
            return True
        if seen.get(id(item), 0) >= depth:
            continue
        seen[id(item)] = depth
        stack.extend((v, depth + 1) for v in (item.values() if t is dict else item))
    return False


class NestingError(ValueError):
    """A value nested deeper than `MAX_NESTING` (the message is one line naming it)."""

    def __init__(self, what: str, verb: str = "pass") -> None:
        super().__init__(
            f"{what} is nested more than {MAX_NESTING} levels deep (arrays and objects; the "
            f"limit is {MAX_NESTING}): {verb} a flatter value, or store the data elsewhere and "
            f"{verb} a reference"
        )


@dataclass(frozen=True, slots=True)
class Undecodable:
    """Stored JSON onthedot will not decode, and why (one line). Shown in its place."""

    reason: str

    def __str__(self) -> str:
        return f"<not decoded: {self.reason}>"


def load_stored(data: str | bytes, limit: int = STORED_NESTING) -> Any:
    """Decode JSON read from storage into a JSON value, or an `Undecodable`; never raises.
    Text nested deeper than `limit` is not handed to `json.loads` at all (its recursion is
    what must be avoided)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if too_deep(text, limit):
        return Undecodable(
            f"nested deeper than onthedot decodes (the limit is {MAX_NESTING} levels of arrays "
            "and objects per argument or result)"
        )
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # not JSON (SQLite stores any text)
        return Undecodable(f"not valid JSON ({str(exc).splitlines()[0][:120]})")
