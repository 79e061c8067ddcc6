"""How deep JSON nests: the text scan, the value walk and the stored-JSON decoder agree with the
real depth, whatever the strings hold (brackets, quotes, backslashes)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from onthedot.domain.nesting import (
    MAX_NESTING,
    STORED_NESTING,
    Undecodable,
    load_stored,
    too_deep,
    value_too_deep,
)

TEXT = st.text(alphabet='[]{}"\\ax,:é\x00', max_size=8)
JSON = st.recursive(
    st.none() | st.integers() | TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children, max_size=3),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


def wrapped(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value]
    return value


@given(JSON, st.integers(0, 12), st.integers(0, 8), st.booleans())
def test_the_scan_and_the_walk_measure_the_real_depth(
    value: Any, extra: int, limit: int, spaced: bool
) -> None:
    value = wrapped(value, extra)
    text = json.dumps(value, ensure_ascii=spaced, separators=(", ", ": ") if spaced else (",", ":"))
    assert too_deep(text, limit) == (depth(value) > limit)
    assert value_too_deep(value, limit) == (depth(value) > limit)


@given(JSON)
def test_stored_json_within_the_limit_decodes_as_json_does(value: Any) -> None:
    assert load_stored(json.dumps(value)) == value
    assert load_stored(json.dumps(value).encode()) == value


def test_stored_json_past_the_limit_or_not_json_is_never_decoded() -> None:
    at_limit = "[" * STORED_NESTING + "]" * STORED_NESTING
    assert isinstance(load_stored(at_limit), list)
    for text in ("[" * (STORED_NESTING + 1) + "]" * (STORED_NESTING + 1), "[" * 500_000, "[1,"):
        found = load_stored(text)
        assert isinstance(found, Undecodable), text[:20]
        assert "\n" not in str(found) and str(found).startswith("<not decoded: ")
    assert str(MAX_NESTING) in str(load_stored("[" * 5000 + "]" * 5000))


def test_the_walk_ends_on_cycles_and_shared_values() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert value_too_deep(loop, MAX_NESTING)
    shared: list[Any] = [1]
    for _ in range(60):  # 2**60 paths, 60 levels: each list walked once per depth
        shared = [shared, shared]
    assert not value_too_deep(shared, MAX_NESTING)
    assert value_too_deep(shared, 50)
