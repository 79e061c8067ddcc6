"""onthedot's configuration in a Django project, read from `settings.ONTHEDOT`:

```python
ONTHEDOT = {
    "APP": "myproject.jobs:app",  # optional: your own App (jobs, schedules); default: a bare App
    "DATABASE": "default",        # the Django database onthedot lives in (PostgreSQL or SQLite)
    "DATABASE_URL": None,         # optional: a separate database URL instead
}
```

Without `DATABASE_URL`, the URL is built from `settings.DATABASES[DATABASE]`, so a project has
one database configuration, not two.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Keys of a PostgreSQL `OPTIONS` dict that are Django's own, not libpq connection parameters.
_DJANGO_ONLY_OPTIONS = frozenset(
    {"server_side_binding", "pool", "isolation_level", "assume_role", "cursor_factory", "context"}
)


@dataclass(frozen=True)
class OnthedotSettings:
    """`settings.ONTHEDOT`, checked: the App path (or None), the database alias, and the URL."""

    app_path: str | None
    database: str
    database_url: str
    shares_url_with_django: bool


def load_settings() -> OnthedotSettings:
    """Read and check `settings.ONTHEDOT`."""
    raw: dict[str, Any] = dict(getattr(settings, "ONTHEDOT", None) or {})
    unknown = set(raw) - {"APP", "DATABASE", "DATABASE_URL"}
    if unknown:
        raise ImproperlyConfigured(
            f"settings.ONTHEDOT has unknown keys {sorted(unknown)}: "
            "allowed are APP, DATABASE and DATABASE_URL"
        )
    alias = raw.get("DATABASE") or "default"
    if alias not in settings.DATABASES:
        raise ImproperlyConfigured(
            f"settings.ONTHEDOT['DATABASE'] is {alias!r}, which is not in settings.DATABASES"
        )
    own_url = raw.get("DATABASE_URL")
    url = own_url or database_url(settings.DATABASES[alias], alias)
    return OnthedotSettings(
        app_path=raw.get("APP"),
        database=alias,
        database_url=url,
        shares_url_with_django=not own_url,
    )


def database_url(db: dict[str, Any], alias: str = "default") -> str:
    """The onthedot URL of one entry of `settings.DATABASES` (PostgreSQL or SQLite)."""
    engine = str(db.get("ENGINE", ""))
    name = str(db.get("NAME") or "")
    if engine.endswith("sqlite3"):
        if not name or name == ":memory:" or name.startswith("file:"):
            raise ImproperlyConfigured(
                f"database {alias!r} is an in-memory SQLite database, which a worker process "
                "cannot share: give it a file NAME, or set ONTHEDOT['DATABASE_URL']"
            )
        return f"sqlite:///{Path(name).resolve()}"
    if "postgresql" in engine:
        user = quote(str(db.get("USER") or ""), safe="")
        password = quote(str(db.get("PASSWORD") or ""), safe="")
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        host = str(db.get("HOST") or "")
        if host.startswith("/"):  # a Unix socket directory is passed as a parameter
            params = {"host": host}
            host = ""
        else:
            params = {}
        port = f":{db['PORT']}" if db.get("PORT") else ""
        options = db.get("OPTIONS") or {}
        params.update({k: str(v) for k, v in options.items() if k not in _DJANGO_ONLY_OPTIONS})
        query = f"?{urlencode(params, quote_via=quote)}" if params else ""
        return f"postgresql://{auth}{host}{port}/{quote(name, safe='')}{query}"
    raise ImproperlyConfigured(
        f"database {alias!r} uses {engine!r}: onthedot runs on PostgreSQL or SQLite; set "
        "ONTHEDOT['DATABASE'] to one of those, or ONTHEDOT['DATABASE_URL']"
    )
