"""SQL lives in `.sql` files as named blocks (`-- name: verb`), the same names in every backend."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


@cache
def load_queries(backend: str) -> dict[str, str]:
    """Return the named blocks of `storage/<backend>/queries.sql`."""
    text = resources.files("onthedot.storage").joinpath(backend, "queries.sql").read_text("utf-8")
    parts = _NAME.split(text)
    queries: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise RuntimeError(f"duplicate query name {name!r} in {backend}/queries.sql")
        queries[name] = body.strip().rstrip(";")
    return queries


@cache
def load_migrations(backend: str) -> tuple[tuple[int, str, str], ...]:
    """Return (version, filename, sql) for every migration of a backend, in order."""
    folder = resources.files("onthedot.storage").joinpath(backend, "migrations")
    found = []
    for entry in folder.iterdir():
        match = re.fullmatch(r"(\d{4})_\w+\.sql", entry.name)
        if match:
            found.append((int(match.group(1)), entry.name, entry.read_text("utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"{backend} migrations are not numbered 1..n: {versions}")
    return tuple(found)


def latest_version(backend: str) -> int:
    """The version a backend's schema has once every migration is applied."""
    return len(load_migrations(backend))


@cache
def load_functions(backend: str) -> str:
    """The current body of every function of a backend (`storage/<backend>/functions.sql`),
    re-applied by each migrate once the schema is at its latest version."""
    folder = resources.files("onthedot.storage").joinpath(backend)
    return folder.joinpath("functions.sql").read_text("utf-8")
