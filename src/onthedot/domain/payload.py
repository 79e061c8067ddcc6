"""Job arguments are JSON values, checked at enqueue. Never pickle."""

from __future__ import annotations

import json
import json.encoder
import math
import re
import threading
from json.encoder import encode_basestring_ascii
from typing import Any, TypeAlias, cast

from onthedot.domain.fields import check_text
from onthedot.domain.nesting import (
    MAX_NESTING,
    NestingError,
    too_deep,
    value_too_deep,
)

# A JSON value as `json.loads` returns it (job arguments and results, schedule definitions,
# audit details, the JSON views of the CLI and the web).
JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
JsonObject: TypeAlias = dict[str, JsonValue]


MAX_PAYLOAD_BYTES = 1_048_576  # documented limit: 1 MiB of JSON per job's arguments or result
_LISTED = MAX_NESTING + 1  # the list of positional arguments (object of keyword ones) nests once

# CPython's C encoder behind `json.dumps`: not public API (absent or None elsewhere), so it is
# looked up, and `encode` falls back to `json.dumps` without it.
c_make_encoder: Any = getattr(json.encoder, "c_make_encoder", None)


def check_json(value: object, where: str, *, limit: int = MAX_NESTING) -> JsonValue:
    """Raise TypeError/ValueError unless `value` is made only of JSON types: None, bool, int,
    finite float, str, list/tuple, and dict with str keys, nested at most `limit` deep
    (`NestingError`). Strings must be storable by every backend: no NUL character, no lone
    surrogate (undecoded bytes). Returns `value`."""
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]  # `type() is` checks: no narrowing
    while stack:
        item, path, depth = stack.pop()
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
        if (t is list or t is tuple or t is dict) and depth > limit:
            raise NestingError(where)
        if t is list or t is tuple:
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item))
            continue
        if t is dict:
            for k, v in item.items():
                if type(k) is not str:
                    raise TypeError(
                        f"{path} has key {k!r} of type {type(k).__name__}: JSON object keys "
                        "must be strings"
                    )
                _check_text(k, f"{path} key {_short(k)}")
                stack.append((v, f"{path}[{k!r}]", depth + 1))
            continue
        raise TypeError(
            f"{path} is a {t.__name__} ({_short(item)}), which is not JSON: pass only None, bool, "
            "int, float, str, list and dict (convert dates to ISO strings, objects to ids)"
        )
    return cast(JsonValue, value)  # checked above (a tuple encodes as a list)


def _check_text(text: str, path: str) -> None:
    check_text(text, path)


def _not_json(value: object) -> None:
    raise TypeError(f"{type(value).__name__} is not JSON")


_local = threading.local()


def _dumps(value: object) -> str:
    """json.dumps(value, allow_nan=False) with a C encoder kept per thread (json.dumps builds
    a new one on every call, which costs more than encoding a few arguments)."""
    encoder = getattr(_local, "encoder", None)
    if encoder is None:
        if c_make_encoder is None:  # pragma: no cover - a Python without the json accelerator
            return json.dumps(value, allow_nan=False)
        markers: dict[int, object] = {}
        encoder = _local.encoder = (
            c_make_encoder(
                markers, _not_json, encode_basestring_ascii, None, ": ", ", ", False, False, False
            ),
            markers,
        )
    try:
        return "".join(encoder[0](value, 0))
    except BaseException:
        encoder[1].clear()  # the cycle detector's memo is left half-filled by an error
        raise


# In json.dumps' ASCII output, a NUL or a surrogate (lone, or half of a pair) is spelled \u0000 /
# \ud800-\udfff: such payloads, and any holding a dict (whose keys json would coerce to
# strings), get the full walk of check_json.
_SUSPECT = re.compile(r"\\u(?:0000|d[89a-f])")


def encode_arguments(args: list[Any], kwargs: dict[str, Any], where: str) -> tuple[str, str]:
    """Validate job arguments (as `check_json` does, plus the size and nesting limits) and
    return their JSON text. The common case (scalars and lists) is checked by the C encoder
    alone."""
    try:
        args_json = _dumps(args) if args else "[]"
        kwargs_json = _dumps(kwargs) if kwargs else "{}"
    except ValueError as exc:
        if "ircular" in str(exc):  # check_json's walk would never end on a cycle
            raise ValueError(f"{where}: arguments contain a circular reference") from None
        _check_arguments(args, kwargs, where)
        raise
    except (TypeError, RecursionError):
        _check_arguments(args, kwargs, where)
        raise  # nothing found: let the encoder's own error through
    if too_deep(args_json, _LISTED) or too_deep(kwargs_json, _LISTED):
        _check_nesting(args, kwargs, where)
    if (
        "{" in args_json
        or "{" in kwargs_json[1:]
        or _SUSPECT.search(args_json)
        or _SUSPECT.search(kwargs_json)
    ):
        _check_arguments(args, kwargs, where)
    size = len(args_json) + len(kwargs_json)
    if size > MAX_PAYLOAD_BYTES:
        raise ValueError(
            f"{where}: arguments are {size} bytes of JSON, over the {MAX_PAYLOAD_BYTES} byte "
            "limit; store large data elsewhere and pass a reference"
        )
    return args_json, kwargs_json


def _check_arguments(args: list[Any], kwargs: dict[str, Any], where: str) -> None:
    _check_nesting(args, kwargs, where)  # first: it stops at the limit, check_json goes deeper
    check_json(args, f"{where} args", limit=_LISTED)
    check_json(kwargs, f"{where} kwargs", limit=_LISTED)


def _check_nesting(args: list[Any], kwargs: dict[str, Any], where: str) -> None:
    """Raise `NestingError` naming the first argument nested deeper than `MAX_NESTING`."""
    for i, value in enumerate(args):
        if value_too_deep(value, MAX_NESTING):
            raise NestingError(f"{where}: argument args[{i}]")
    for key, value in kwargs.items():
        if value_too_deep(value, MAX_NESTING):
            raise NestingError(f"{where}: argument kwargs[{key!r}]")


def result_too_large(result: JsonValue) -> str | None:
    """The one-line error for a job result over `MAX_PAYLOAD_BYTES` of JSON (the arguments'
    limit), or None if it fits. `result` is already known to be JSON."""
    size = len(json.dumps(result))
    if size <= MAX_PAYLOAD_BYTES:
        return None
    return (
        f"ResultTooLarge: the result is {size} bytes of JSON, over the {MAX_PAYLOAD_BYTES} byte "
        "limit; store large data elsewhere and return a reference"
    )


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
