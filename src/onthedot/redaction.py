"""Secrets kept out of messages: a database URL shown with its passwords hidden, in every form
libpq accepts (a URL, with or without percent-encoding, and a keyword DSN), and any text that
quotes parts of it (libpq's and the server's errors, onthedot's own) cleaned of them.

Two readings of a URL may disagree: an unencoded `@`, `/`, `?` or `#` in a password makes
Python's `urlsplit` and libpq split it differently. The display masks what the user most
likely meant as the password; `scrub` then hides every string any reading takes for a
secret, so a fragment libpq took for a host, a port or a database name is hidden too.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import quote, unquote, urlsplit

# A parameter whose name holds one of these is a secret (libpq's `password`, `sslpassword`,
# `oauth_client_secret`, `scram_client_key`, `scram_server_key`, and any `token` or `secret` a
# driver may take); it is shown as `***`.
# Parameters naming a file (`passfile`, `sslkey`, `sslcert`) are paths, not secrets.
SECRET_PARAM_WORDS = ("password", "secret", "token", "scram_")
ONTHEDOT_PARAMS = frozenset({"pooler", "direct_url"})
MASK = "***"
# Characters that end a piece of a secret as libpq or urlsplit may cut it.
_CUTS = re.compile(r"[/?#@:&=,;\s'\"\\%]+")
_QUOTED = re.compile(r'"([^"]*)"|\'([^\']*)\'')
_PORTS = re.compile(r"\d*(,[^,@/?#]*(:\d*)?)*")  # `5432` or `5432,h2:5433` (multi-host)
_SHORTEST_LOOSE = 4  # a secret this long is hidden wherever it appears, quoted or not


def mask_url(url: str) -> str:
    """`url` with its secrets replaced by `***`: the password of `user:password@` (also when
    it holds an unencoded `@`, `/`, `?` or `#`), the value of every parameter whose name says
    it is a secret (`password`, `sslpassword`, ...), in the URL form and in libpq's keyword
    form (`host=db password=...`)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _mask_keywords(url)
    end = _userinfo_end(rest)
    head = ""
    if end >= 0:
        user, colon, _ = rest[:end].partition(":")
        head = f"{user}:{MASK}@" if colon else f"{rest[:end]}@"
        rest = rest[end + 1 :]
    hostpath, mark, query = rest.partition("?")
    shown = f"{scheme}{sep}{head}{hostpath}{mark}{_mask_query(query) if mark else ''}"
    return _hide(shown, _secrets(url))


def scrub(text: str, *urls: str | None) -> str:
    """`text` (an error of libpq, of the server or of onthedot, about one of `urls`) with
    every secret of those URLs hidden: a quoted value not shown in the URLs' displays that is,
    or holds, a piece of a secret becomes `***`, and a secret (or piece) of 4 characters or
    more is hidden wherever it appears."""
    secrets: set[str] = set()
    shown: list[str] = []
    for url in urls:
        if url:
            secrets |= _secrets(url)
            display = mask_url(url)
            shown += [display, unquote(display)]
    if not secrets:
        return text
    pieces = {p for s in secrets for p in _CUTS.split(s) if p} | secrets

    def quoted(match: re.Match[str]) -> str:
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        if not inner or any(inner in d for d in shown):
            return match.group(0)
        if any(inner in p or p in inner for p in pieces):
            return match.group(0)[0] + MASK + match.group(0)[-1]
        return match.group(0)

    return _hide(_QUOTED.sub(quoted, text), secrets | pieces)


def user_info(url: str) -> str:
    """The user info of a URL (`user:password`, as written) the way the display reads it;
    empty when it has none."""
    _, sep, rest = url.partition("://")
    end = _userinfo_end(rest) if sep else -1
    return rest[:end] if end >= 0 else ""


def _hide(text: str, secrets: set[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= _SHORTEST_LOOSE and secret != MASK:
            text = text.replace(secret, MASK)
    return text


def _userinfo_end(rest: str) -> int:
    """Where the user info of a URL's remainder (after `scheme://`) ends: the index of its
    `@`, or -1. The later of libpq's (the first `@` before any `/`) and urlsplit's (the last
    `@` before any `/`, `?` or `#`); without either, a later `@` when what follows the first
    `:` cannot be a port or when no `key=value` parameter comes before it (a password holding
    an unencoded `/`, `?` or `#`); then on to any later `@` with no parameter before it. An
    `@` in a database name is so taken for the end of a password: over-masked, never leaked."""
    slash = rest.find("/") if "/" in rest else len(rest)
    stop = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    end = max(rest.find("@", 0, slash), rest.rfind("@", 0, stop))
    if end < 0:
        start = rest.find("]", 0, stop) + 1 if rest.startswith("[") else 0  # an IPv6 host
        colon = rest.find(":", start, stop)
        later = rest.find("@", stop)
        if colon < 0 or later < 0:
            return -1
        port_end = min((i for i in (rest.find(c) for c in "/?") if i >= 0), default=len(rest))
        port = _PORTS.fullmatch(rest[colon + 1 : port_end])  # libpq's port ends at / or ?
        if port and not _no_parameter(rest, stop, later):
            return -1
        end = later
    while (later := rest.find("@", end + 1)) >= 0 and _no_parameter(rest, end, later):
        end = later
    return end


def _no_parameter(rest: str, start: int, at: int) -> bool:
    """No `?key=value` query begins between `start` and the `@` at `at`: that `@` may still
    belong to the user info."""
    query = rest.find("?", start, at)
    return query < 0 or "=" not in rest[query:at]


def _mask_query(query: str) -> str:
    """A URL's query with secret values masked. libpq ends a value at `&` only (a `#` is part
    of it), so nothing after the `?` is taken for a fragment."""
    shown = []
    for item, secret in _query_items(query):
        name, sep, value = item.partition("=")
        if sep and unquote(name.replace("+", " ")) == "direct_url":  # a URL inside the URL
            shown.append(f"{name}={quote(mask_url(unquote(value.replace('+', ' '))), safe=':/@*')}")
        elif secret:  # a named secret keeps its name; the rest of one is masked whole
            named = sep and _is_secret(unquote(name.replace("+", " ")))
            shown.append(f"{name}={MASK}" if named else MASK)
        else:
            shown.append(item)
    return "&".join(shown)


def _query_items(query: str) -> list[tuple[str, bool]]:
    """Each `&`-separated item of a query, and whether it is (or may be part of) a secret: a
    parameter named like one, and after one any item that is no libpq parameter (the rest of
    a password holding an unencoded `&`: libpq would refuse such an item anyway)."""
    items: list[tuple[str, bool]] = []
    previous = False
    for item in query.split("&"):
        name, sep, _ = item.partition("=")
        plain = unquote(name.replace("+", " "))
        secret = _is_secret(plain) or (previous and (not sep or plain not in _parameters()))
        items.append((item, secret))
        previous = secret
    return items


@functools.cache
def _parameters() -> frozenset[str]:
    """The parameter names libpq knows, and onthedot's own (`pooler`, `direct_url`)."""
    from psycopg.pq import Conninfo  # here: SQLite users never need libpq

    return frozenset({o.keyword.decode() for o in Conninfo.get_defaults()} | ONTHEDOT_PARAMS)


def _is_secret(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_PARAM_WORDS)


def _mask_keywords(dsn: str) -> str:
    """libpq's keyword form with secret values masked; from the first thing it cannot read as
    `key = value` (a missing `=`, an unterminated quote) on, everything is masked. Text with
    no `=` at all is no keyword DSN (a path, a typo) and is shown as it is."""
    if "=" not in dsn:
        return dsn
    shown: list[str] = []
    for key, _value, raw in _keyword_pairs(dsn):
        if key is None:
            shown.append(MASK)
            break
        shown.append(f"{key}={MASK}" if _is_secret(key) else raw)
    return " ".join(shown)


def _keyword_pairs(dsn: str) -> list[tuple[str | None, str, str]]:
    """(key, value, the pair as written) of a keyword DSN as libpq reads it: `key = value`,
    the value single-quoted or bare, backslash escaping the next character. A pair it cannot
    read ends the list with (None, rest, rest)."""
    pairs: list[tuple[str | None, str, str]] = []
    i, n = 0, len(dsn)
    while True:
        while i < n and dsn[i].isspace():
            i += 1
        if i >= n:
            return pairs
        start = i
        while i < n and dsn[i] != "=" and not dsn[i].isspace():
            i += 1
        key = dsn[start:i]
        while i < n and dsn[i].isspace():
            i += 1
        if i >= n or dsn[i] != "=" or not key:
            pairs.append((None, dsn[start:], dsn[start:]))
            return pairs
        i += 1
        while i < n and dsn[i].isspace():
            i += 1
        value: list[str] = []
        quoted = i < n and dsn[i] == "'"
        i += quoted
        while i < n and (dsn[i] != "'" if quoted else not dsn[i].isspace()):
            if dsn[i] == "\\" and i + 1 < n:
                i += 1
            value.append(dsn[i])
            i += 1
        if quoted and i >= n:  # unterminated
            pairs.append((None, dsn[start:], dsn[start:]))
            return pairs
        i += quoted
        pairs.append((key, "".join(value), dsn[start:i]))


def _secrets(url: str) -> set[str]:
    """Every string some reading of `url` takes for a secret (raw and percent-decoded): the
    password as urlsplit, libpq and the display read it, secret parameters, nested URLs."""
    found: set[str] = set()
    _, sep, rest = url.partition("://")
    if not sep:
        for key, value, _ in _keyword_pairs(url) if "=" in url else ():
            if key is None:
                found.add(value)  # unreadable: all of it may be secret
            elif _is_secret(key):
                found.add(value)
        return _with_decoded(found)
    end = _userinfo_end(rest)
    if end >= 0:
        found.add(rest[:end].partition(":")[2])
    libpq_at = rest.find("@", 0, rest.find("/") if "/" in rest else len(rest))
    if libpq_at >= 0:  # libpq: the user info ends at the first @ before any /
        found.add(rest[:libpq_at].partition(":")[2])
    try:
        found.add(urlsplit(url).password or "")
    except ValueError:
        pass
    query = rest[end + 1 :].partition("?")[2]
    for item, secret in _query_items(query):
        name, sep_, value = item.partition("=")
        if sep_ and unquote(name.replace("+", " ")) == "direct_url":
            found |= _secrets(unquote(value.replace("+", " ")))
        elif secret:
            named = _is_secret(unquote(name.replace("+", " ")))
            if sep_ or not named:  # a bare `password` holds no value
                found.add(value if named else item)
    return _with_decoded(found)


def _with_decoded(found: set[str]) -> set[str]:
    out = {s for s in found if s}
    out |= {unquote(s) for s in out} | {unquote(s.replace("+", " ")) for s in out}
    return {s for s in out if s}
