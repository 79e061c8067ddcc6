"""Argument validation and encoding at enqueue: the fast C-encoder path and the full walk must
accept and refuse exactly the same values."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from onthedot.domain.payload import MAX_PAYLOAD_BYTES, check_json, encode_arguments

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=12,
)


def walk_accepts(value: Any) -> bool:
    try:
        check_json(value, "x")
    except (TypeError, ValueError):
        return False
    return True


@given(st.lists(JSON, max_size=4), st.dictionaries(st.text(max_size=5), JSON, max_size=3))
def test_encoding_agrees_with_the_walk(args: list[Any], kwargs: dict[str, Any]) -> None:
    ok = walk_accepts(args) and walk_accepts(kwargs)
    if ok:
        a, k = encode_arguments(args, kwargs, "job 'j'")
        assert json.loads(a) == json.loads(json.dumps(args))
        assert json.loads(k) == kwargs
    else:
        with pytest.raises((TypeError, ValueError)):
            encode_arguments(args, kwargs, "job 'j'")


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "fragment"),
    [
        ([float("nan")], {}, ValueError, "NaN"),
        ([1, {"a": [float("inf")]}], {}, ValueError, "NaN or Infinity"),
        ([{1: "int key"}], {}, TypeError, "keys must be strings"),
        ([[{"ok": {2: "deep"}}]], {}, TypeError, "keys must be strings"),
        (["nul \x00 inside"], {}, ValueError, "NUL"),
        ([], {"k": ["\ud800 lone"]}, ValueError, "lone surrogate"),
        ([{1, 2}], {}, TypeError, "set"),
        ([b"bytes"], {}, TypeError, "bytes"),
        (["x" * (MAX_PAYLOAD_BYTES + 1)], {}, ValueError, "byte limit"),
    ],
)
def test_refusals_name_the_problem(
    args: list[Any], kwargs: dict[str, Any], error: type[Exception], fragment: str
) -> None:
    with pytest.raises(error, match=fragment) as info:
        encode_arguments(args, kwargs, "job 'j'")
    assert "\n" not in str(info.value)


def test_cycles_are_refused_without_hanging() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="circular"):
        encode_arguments([loop], {}, "job 'j'")
    # The encoder's memo is clean afterwards: the same value shape encodes again.
    assert encode_arguments([[1], [1]], {}, "job 'j'") == ("[[1], [1]]", "{}")


def test_accepted_values_round_trip() -> None:
    args = ["tab\there", "new\nline", "back\\slash", "emoji \U0001f600", ("tuple",), 1.5]
    a, k = encode_arguments(args, {"brace": "{not a dict}"}, "job 'j'")
    assert json.loads(a) == [
        "tab\there",
        "new\nline",
        "back\\slash",
        "emoji \U0001f600",
        ["tuple"],
        1.5,
    ]
    assert json.loads(k) == {"brace": "{not a dict}"}
