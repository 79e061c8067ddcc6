"""Job arguments are JSON values, checked at enqueue. Never pickle."""

from __future__ import annotations

import json
import math
from typing import Any

MAX_PAYLOAD_BYTES = 1_048_576  # documented limit: 1 MiB of JSON per job's arguments


def check_json(value: Any, where: str) -> None:
    """Raise TypeError/ValueError unless `value` is made only of JSON types: None, bool, int,
    finite float, str, list/tuple, and dict with str keys."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        t = type(item)
        if t is str or t is int or t is bool or item is None:
            continue
        if t is float:
            if not math.isfinite(item):
                raise ValueError(f"{path} is {item!r}: JSON has no NaN or Infinity")
            continue
        if t is list or t is tuple:
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(item))
            continue
        if t is dict:
            for k, v in item.items():
                if type(k) is not str:
                    raise TypeError(
                        f"{path} has key {k!r} of type {type(k).__name__}: JSON object keys "
                        "must be strings"
                    )
                stack.append((v, f"{path}[{k!r}]"))
            continue
        raise TypeError(
            f"{path} is a {t.__name__} ({_short(item)}), which is not JSON: pass only None, bool, "
            "int, float, str, list and dict (convert dates to ISO strings, objects to ids)"
        )


def encode_size(args: Any, kwargs: Any, where: str) -> None:
    """Raise ValueError when the encoded arguments exceed MAX_PAYLOAD_BYTES."""
    size = len(json.dumps(args)) + len(json.dumps(kwargs))
    if size > MAX_PAYLOAD_BYTES:
        raise ValueError(
            f"{where}: arguments are {size} bytes of JSON, over the {MAX_PAYLOAD_BYTES} byte "
            "limit; store large data elsewhere and pass a reference"
        )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
