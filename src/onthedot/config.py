"""Database URLs: which backend, and where. Nothing here touches the database."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from onthedot.domain.errors import ConfigurationError
from onthedot.redaction import mask_url, scrub, user_info

__all__ = ["DatabaseConfig", "mask_url", "parse_database_url", "resolve_database_url"]

DEFAULT_DATABASE_URL = "sqlite:///onthedot.db"
ENV_DATABASE_URL = "ONTHEDOT_DATABASE_URL"
# A URL of the same database that bypasses a pooler such as PgBouncer, for LISTEN and
# `onthedot migrate` (docs/scaling.md); the URL parameter `direct_url=` overrides it.
ENV_DIRECT_DATABASE_URL = "ONTHEDOT_DIRECT_DATABASE_URL"
# Values of `?pooler=`. It and `direct_url=` are onthedot's own PostgreSQL URL parameters,
# removed before the URL reaches libpq.
POOLERS = ("none", "session", "transaction")


@dataclass(frozen=True, slots=True)
class DatabaseConfig:
    backend: str  # "sqlite" | "postgresql"
    url: str
    path: str | None = None  # sqlite: file path or ":memory:"
    options: tuple[tuple[str, str], ...] = ()
    # postgresql: what sits between onthedot and the server (`?pooler=`), and a URL that
    # reaches the server itself (`?direct_url=` or $ONTHEDOT_DIRECT_DATABASE_URL), if any
    pooler: str = "none"
    direct_url: str | None = None

    @property
    def file(self) -> str | None:
        """The database file (SQLite), None for a server or an in-memory database."""
        return self.path if self.path and self.path != ":memory:" else None

    @property
    def relative(self) -> bool:
        """A SQLite file named relative to the current folder (`sqlite:///onthedot.db`)."""
        return self.file is not None and not Path(self.file).is_absolute()

    def new_file(self) -> Path | None:
        """The SQLite file's absolute path while it does not exist (whatever opens the database
        next creates it, empty); None for an existing file, memory, or a server."""
        if self.file is None:
            return None
        path = Path(self.file).resolve()
        return None if path.exists() else path

    @property
    def single_writer(self) -> bool:
        """One writer at a time (SQLite's lock): more worker processes would only wait on it."""
        return self.backend == "sqlite"

    @property
    def display(self) -> str:
        """The URL with any password hidden, for messages and logs."""
        return mask_url(self.url)


def resolve_database_url(url: str | None) -> str:
    """Explicit URL, else $ONTHEDOT_DATABASE_URL, else the SQLite file in the current directory."""
    return url or os.environ.get(ENV_DATABASE_URL) or DEFAULT_DATABASE_URL


def parse_database_url(url: str) -> DatabaseConfig:
    """Parse a database URL; raise ConfigurationError naming what is wrong (never a secret of
    the URL: every message is scrubbed of them, whatever part of it quotes the URL)."""
    try:
        return _parse_database_url(url)
    except ConfigurationError as exc:
        urls = (url if isinstance(url, str) else None, os.environ.get(ENV_DIRECT_DATABASE_URL))
        raise ConfigurationError(scrub(str(exc), *urls)) from None


def _parse_database_url(url: str) -> DatabaseConfig:
    if not isinstance(url, str) or not url.strip():
        raise ConfigurationError(
            "database URL is empty: use sqlite:///path/to/file.db or postgresql://user@host/db"
        )
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise ConfigurationError(
            f"malformed database URL {mask_url(url)!r}: expected scheme://..., "
            "e.g. sqlite:///onthedot.db or postgresql://user@localhost/db"
        )
    if scheme == "sqlite":
        return _parse_sqlite(url, rest)
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        return _parse_postgres(url, scheme)
    raise ConfigurationError(
        f"unsupported database URL scheme {scheme!r} in {mask_url(url)!r}: "
        "use sqlite:/// or postgresql://"
    )


def _parse_sqlite(url: str, rest: str) -> DatabaseConfig:
    # sqlite:///relative.db -> rest "/relative.db"; sqlite:////abs/path.db -> "//abs/path.db"
    path_part, _, query = rest.partition("?")
    if not path_part.startswith("/"):
        raise ConfigurationError(
            f"malformed SQLite URL {mask_url(url)!r}: "
            "use sqlite:///relative.db or sqlite:////absolute/path.db"
        )
    path = path_part[1:]
    if not path:
        raise ConfigurationError(
            f"SQLite URL {mask_url(url)!r} names no file: use sqlite:///onthedot.db"
        )
    options = tuple(parse_qsl(query, keep_blank_values=True))
    seen: set[str] = set()
    for key, value in options:
        if key not in _SQLITE_OPTIONS:
            raise ConfigurationError(
                f"unknown SQLite URL option {key!r} in {mask_url(url)!r}: "
                f"allowed are {sorted(_SQLITE_OPTIONS)}"
            )
        if key in seen:
            raise ConfigurationError(
                f"URL option {key!r} is given twice in {mask_url(url)!r}: keep one"
            )
        seen.add(key)
        _check_option(url, key, value, _SQLITE_OPTIONS[key])
    if path != ":memory:":
        path = str(Path(path))
    return DatabaseConfig(backend="sqlite", url=url, path=path, options=options)


def _parse_postgres(url: str, scheme: str, *, env: bool = True) -> DatabaseConfig:
    from psycopg.conninfo import conninfo_to_dict

    unencoded = sorted({c for c in user_info(url) if c in "@/?#"})
    if unencoded:  # libpq and urlsplit would each read another user, password or host
        raise ConfigurationError(
            f"ambiguous PostgreSQL URL {mask_url(url)!r}: an unencoded {' '.join(unencoded)} "
            "in the user name, password or database name; percent-encode it there ("
            + ", ".join(f"{c} as {quote(c, safe='')}" for c in unencoded)
            + ")"
        )

    normalized = "postgresql://" + url.split("://", 1)[1] if scheme != "postgresql" else url
    normalized, pooler, direct = _own_postgres_options(url, normalized, env)
    try:
        _check_ports(urlsplit(normalized).netloc)
        params = conninfo_to_dict(normalized)
    except Exception as exc:  # psycopg.ProgrammingError or ValueError
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigurationError(
            f"malformed PostgreSQL URL {mask_url(url)!r}: {detail}; "
            "expected postgresql://user@host:5432/db"
        ) from None
    for key, value in params.items():
        rule = _POSTGRES_OPTIONS.get(key)
        if rule is not None and value is not None:
            parts = str(value).split(",") if key == "port" else [str(value)]  # multi-host
            for part in parts:
                if part or key != "port":  # a host of a multi-host URL without its own port
                    _check_option(url, key, part, rule)
    if direct is not None:
        direct_scheme = direct.partition("://")[0].lower()
        if direct_scheme not in ("postgresql", "postgres", "postgresql+psycopg"):
            raise ConfigurationError(
                f"direct URL {mask_url(direct)!r} is not a PostgreSQL URL: use postgresql://..."
            )
        direct_cfg = _parse_postgres(direct, direct_scheme, env=False)
        if direct_cfg.pooler == "transaction" or direct_cfg.direct_url:
            raise ConfigurationError(
                f"direct URL {mask_url(direct)!r} takes no pooler= or direct_url=: it must "
                "reach the PostgreSQL server itself"
            )
        direct = direct_cfg.url
    return DatabaseConfig(backend="postgresql", url=normalized, pooler=pooler, direct_url=direct)


def _check_ports(netloc: str) -> None:
    """Raise ValueError on a non-numeric port, in each host of a multi-host URL too
    (`postgresql://h1:5432,h2:5432/db?target_session_attrs=read-write`, for failover)."""
    for host in netloc.rpartition("@")[2].split(","):
        _ = urlsplit(f"//{host}").port  # raises ValueError on a non-numeric port


def _own_postgres_options(url: str, normalized: str, env: bool) -> tuple[str, str, str | None]:
    """Split onthedot's parameters (`pooler`, `direct_url`) off a PostgreSQL URL: libpq would
    refuse them. The direct URL falls back to $ONTHEDOT_DIRECT_DATABASE_URL."""
    pooler = "none"
    direct = (os.environ.get(ENV_DIRECT_DATABASE_URL) or None) if env else None
    try:
        parts = urlsplit(normalized)
    except ValueError:
        return normalized, pooler, direct  # reported by the caller's check
    kept = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "pooler":
            if value not in POOLERS:
                raise ConfigurationError(
                    f"unknown pooler {value!r} in {mask_url(url)!r}: use one of "
                    f"{', '.join(POOLERS)} (transaction for PgBouncer's pool_mode = transaction)"
                )
            pooler = value
        elif key == "direct_url":
            direct = value or None
        else:
            kept.append((key, value))
    if len(kept) != len(parse_qsl(parts.query, keep_blank_values=True)):
        normalized = urlunsplit(parts._replace(query=urlencode(kept, quote_via=quote)))
    return normalized, pooler, direct


@dataclass(frozen=True, slots=True)
class _Range:
    """A number from `low` to `high` (`whole`: an integer); `accepted` says so in messages."""

    low: float
    high: float
    accepted: str
    whole: bool = True


_Rule = _Range | tuple[str, ...]  # a range, or the accepted words (case-insensitive)
_SECONDS = _Range(0, 86_400, "a whole number of seconds from 0 to 86400")
_FLAG = _Range(0, 1, "0 or 1")
_SQLITE_OPTIONS: dict[str, _Rule] = {
    "busy_timeout": _Range(0, 3_600, "a number of seconds from 0 to 3600", whole=False),
    "synchronous": ("off", "normal", "full", "extra"),
}
# The libpq options whose value has a fixed form; the others (host, user, options, file
# paths, application_name ...) are free text that the server or libpq judges.
_POSTGRES_OPTIONS: dict[str, _Rule] = {
    "port": _Range(1, 65_535, "a port from 1 to 65535"),
    "connect_timeout": _SECONDS,
    "keepalives": _FLAG,
    "keepalives_idle": _SECONDS,
    "keepalives_interval": _SECONDS,
    "keepalives_count": _Range(0, 1_000, "a whole number of probes from 0 to 1000"),
    "tcp_user_timeout": _Range(0, 86_400_000, "whole milliseconds from 0 to 86400000"),
    "sslcompression": _FLAG,
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "gssencmode": ("disable", "prefer", "require"),
    "channel_binding": ("disable", "prefer", "require"),
    "target_session_attrs": (
        *("any", "read-write", "read-only"),
        *("primary", "standby", "prefer-standby"),
    ),
    "load_balance_hosts": ("disable", "random"),
}


def _check_option(url: str, key: str, value: str, rule: _Rule) -> None:
    """Raise ConfigurationError (one line: the option, its value, what it accepts) unless
    `value` follows `rule`."""
    if isinstance(rule, tuple):
        if value.strip().lower() in rule:
            return
        accepted = "one of " + ", ".join(rule)
    else:
        number: float | None
        try:
            number = int(value) if rule.whole else float(value)
        except ValueError:
            number = None
        if number is not None and rule.low <= number <= rule.high:  # NaN and inf fail here
            return
        accepted = rule.accepted
    raise ConfigurationError(
        f"URL option {key!r} is {value[:40]!r} in {mask_url(url)!r}: use {accepted}"
    )
