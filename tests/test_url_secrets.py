"""Issue 24 item 3: no password of a database URL in any message, for every form libpq accepts:
the URL with the password raw (unencoded `#`, `?`, `/`, `@`, `&`, bad `%` escapes) or
percent-encoded, in the user info or as `?password=` / `?sslpassword=`, nested in
`direct_url=`, and libpq's keyword form (`host=... password=...`, quoted or bare).

A hypothesis property over generated URLs checks the display (`mask_url`), the
`ConfigurationError` of `parse_database_url`, libpq's own parse error (`conninfo_to_dict`) and
the errors libpq and the server print about what libpq read (host, port, database, user), each
through the path onthedot uses. The real error paths (a refused connection, the CLI) are in
tests/torture/test_secret_urls.py.

Passwords are built of pieces of the letters QXZJKVW (4+ letters each) joined by URL
delimiters; nothing else in a URL or in libpq's messages uses those letters, so a piece
found in an output is a leak."""

from __future__ import annotations

import re
from urllib.parse import quote

import psycopg
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from psycopg.conninfo import conninfo_to_dict

from onthedot.config import mask_url, parse_database_url
from onthedot.domain.errors import ConfigurationError
from onthedot.redaction import scrub
from onthedot.storage.postgres.refusals import describe_connect_error

MARK = "QXZJKVW"
DELIMITERS = [*"#?/@%:&=' \\\"+;,", "%zz", "%2", "%41", "%%", "@/", "?#"]

pieces = st.text(alphabet=MARK, min_size=4, max_size=8)


@st.composite
def passwords(draw: st.DrawFn) -> tuple[str, list[str]]:
    parts = draw(st.lists(pieces, min_size=1, max_size=4))
    joints = draw(st.lists(st.sampled_from(DELIMITERS), min_size=len(parts), max_size=len(parts)))
    lead = draw(st.sampled_from(["", *DELIMITERS]))
    return lead + "".join(p + j for p, j in zip(parts, joints, strict=True))[:-1], parts


def _keyword_value(password: str) -> str:
    return "'" + password.replace("\\", "\\\\").replace("'", "\\'") + "'"


FORMS = (
    "userinfo-raw",
    "userinfo-encoded",
    "userinfo-partly-encoded",
    "query-raw",
    "query-encoded",
    "sslpassword",
    "keyword-quoted",
    "keyword-bare",
    "direct_url",
)


@st.composite
def urls(draw: st.DrawFn) -> tuple[str, list[str]]:
    password, parts = draw(passwords())
    form = draw(st.sampled_from(FORMS))
    user = draw(st.text(alphabet="abcdefgh", min_size=1, max_size=6))
    host = draw(st.sampled_from(["127.0.0.1", "db.example", "[::1]", "localhost", "h1:5432,h2"]))
    port = draw(st.sampled_from(["", ":5432", ":1"]))
    db = draw(st.text(alphabet="abcdefg", min_size=0, max_size=6))
    extra = draw(st.sampled_from(["", "connect_timeout=2", "application_name=me@box", "x=1"]))
    tail = f"&{extra}" if extra else ""
    base = f"postgresql://{user}@{host}{port}/{db}"
    if form == "userinfo-raw":
        # `user:/db?application_name=x@host` is a valid URL without a password: a raw
        # password shaped like it cannot be told from it (libpq reads no password there).
        assume(not (password[:1] in "/?" and re.search(r"\?.*=", password)))
        url = f"postgresql://{user}:{password}@{host}{port}/{db}" + (f"?{extra}" if extra else "")
    elif form == "userinfo-encoded":
        url = f"postgresql://{user}:{quote(password, safe='')}@{host}{port}/{db}"
    elif form == "userinfo-partly-encoded":
        url = f"postgresql://{user}:{quote(password, safe='%#?/')}@{host}{port}/{db}"
    elif form == "query-raw":
        url = f"{base}?password={password}{tail}"
    elif form == "query-encoded":
        url = f"{base}?password={quote(password, safe='')}{tail}"
    elif form == "sslpassword":
        url = f"{base}?sslmode=require&sslpassword={password}{tail}"
    elif form == "keyword-quoted":
        url = f"host={host.strip('[]')} user={user} password={_keyword_value(password)} dbname=x"
    elif form == "keyword-bare":
        bare = password.replace("\\", "\\\\").replace(" ", "\\ ").replace("'", "\\'")
        url = f"host=127.0.0.1 password={bare} dbname={db or 'x'}"
    else:
        inner = f"postgresql://{user}:{quote(password, safe='')}@{host}{port}/{db}"
        url = f"{base}?pooler=transaction&direct_url={quote(inner, safe='')}"
    return url, parts


def _leaks(text: str, parts: list[str]) -> list[str]:
    return [p for p in parts if p in text]


def _server_messages(params: dict[str, str | None]) -> list[str]:
    """What libpq and the server print about the values libpq read from a URL."""
    host, port = params.get("host") or "", params.get("port") or "5432"
    user, db = params.get("user") or "", params.get("dbname") or ""
    return [
        f"failed to resolve host '{host}': [Errno -2] Name or service not known",
        f'connection to server at "{host}" (127.0.0.1), port {port} failed: Connection refused',
        f'invalid integer value "{port}" for connection option "port"',
        f'connection to server at "{host}", port {port} failed: FATAL:  database "{db}" '
        "does not exist",
        f'connection to server at "{host}", port {port} failed: FATAL:  password '
        f'authentication failed for user "{user}"',
        f'FATAL:  no pg_hba.conf entry for host "{host}", user "{user}", database "{db}"',
    ]


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(urls())
def test_no_password_in_any_message_about_the_url(case: tuple[str, list[str]]) -> None:
    url, parts = case
    shown = mask_url(url)
    assert not _leaks(shown, parts), (url, shown)
    try:
        config = parse_database_url(url)
    except ConfigurationError as exc:
        assert "\n" not in str(exc)
        assert not _leaks(str(exc), parts), (url, str(exc))
        config = None
    if config is not None:
        assert not _leaks(config.display, parts), (url, config.display)
    target = config.url if config is not None else url
    try:
        params = conninfo_to_dict(target)
    except psycopg.ProgrammingError as exc:  # libpq refuses it: its message, scrubbed
        said = scrub(str(exc), url)
        assert not _leaks(said, parts), (url, str(exc), said)
        return
    display = config.display if config is not None else shown
    for text in _server_messages(params):
        line, _ = describe_connect_error(display, psycopg.OperationalError(text))
        said = scrub(line, url)
        assert not _leaks(said, parts), (url, text, said)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:QXZJ#KVWQ@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:QXZJ?KVWQ@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:QXZJ/KVWQ@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:QXZJ@KVWQ@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:QX%zzZJ@h/db", "postgresql://u:***@h/db"),
        (
            "postgresql://u@h/db?password=QXZJ#KVWQ&connect_timeout=2",
            "postgresql://u@h/db?password=***&connect_timeout=2",
        ),
        (
            "postgresql://u@h/db?password=QX&ZJ=KV&sslmode=require",
            "postgresql://u@h/db?password=***&***&sslmode=require",
        ),
        ("postgresql://u@h/db?password=QXZJ&KVWQ", "postgresql://u@h/db?password=***&***"),
        ("host=h password='QXZJ KVWQ' dbname=d", "host=h password=*** dbname=d"),
        ("host=h password=QXZJ dbname=d", "host=h password=*** dbname=d"),
        ("host=h password='QXZJ", "host=h ***"),
        # Nothing else is hidden: hosts, ports, databases, an @ in a query value.
        ("postgresql://u:pw@h1:5432,h2:5433/db", "postgresql://u:***@h1:5432,h2:5433/db"),
        (
            "postgresql://h:5432/db?application_name=me@box",
            "postgresql://h:5432/db?application_name=me@box",
        ),
        ("postgresql://u@[::1]:5432/db", "postgresql://u@[::1]:5432/db"),
    ],
)
def test_the_display_of_each_form(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_a_malformed_url_names_what_is_wrong_without_the_password() -> None:
    with pytest.raises(ConfigurationError) as err:
        parse_database_url("postgresql://u:QXZJ@[::1/db")
    assert str(err.value).startswith("malformed PostgreSQL URL 'postgresql://u:***@[::1/db'")
    assert "QXZJ" not in str(err.value)
    with pytest.raises(ConfigurationError) as err:
        parse_database_url("postgresql://u:QXZJ/KVWQ@h/db")
    assert "QXZJ" not in str(err.value) and "KVWQ" not in str(err.value)
    with pytest.raises(ConfigurationError) as err:
        parse_database_url("host=h password=QXZJKVWQ")
    assert "QXZJKVWQ" not in str(err.value) and "password=***" in str(err.value)
