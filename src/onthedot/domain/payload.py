"""Job arguments are JSON values, checked at enqueue. Never pickle."""

from __future__ import annotations

import json
import math
from typing import Any

MAX_PAYLOAD_BYTES = 1_048_576  # documented limit: 1 MiB of JSON per job's arguments


def check_json(value: Any, where: str) -> None:
    """Raise TypeError/ValueError unless `value` is made only of JSON types: None, bool, int,
    finite float, str, list/tuple, and dict with str keys. Strings must be storable by every
    backend: no NUL character, no lone surrogate (undecoded bytes)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        t = type(item)
        if t is str:
            _check_text(item, path)
            continue
        if t is int or t is bool or item is None:
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
                _check_text(k, f"{path} key {_short(k)}")
                stack.append((v, f"{path}[{k!r}]"))
            continue
        raise TypeError(
            f"{path} is a {t.__name__} ({_short(item)}), which is not JSON: pass only None, bool, "
            "int, float, str, list and dict (convert dates to ISO strings, objects to ids)"
        )


def _check_text(text: str, path: str) -> None:
    if "\x00" in text:
        raise ValueError(
            f"{path} contains a NUL character (\\x00), which PostgreSQL cannot store: "
            "remove it, or pass binary data encoded (e.g. base64)"
        )
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"{path} is not valid Unicode (a lone surrogate, as from undecodable bytes): "
                "decode bytes properly, or pass them encoded (e.g. base64)"
            ) from None


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
