"""Settings of the test project: SQLite (DJANGO_DB=sqlite, the file $DJANGO_SQLITE_PATH) or
PostgreSQL (DJANGO_DB=postgres, in the schema $DJANGO_PG_SCHEMA of $DJANGO_PG_URL)."""

import os
from urllib.parse import urlsplit

SECRET_KEY = "test-only"
DEBUG = False
USE_TZ = True
TIME_ZONE = "UTC"
ALLOWED_HOSTS = ["*"]
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django_tasks",
    "onthedot.contrib.django",
    "shop",
]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

if os.environ.get("DJANGO_DB") == "postgres":
    url = urlsplit(os.environ["DJANGO_PG_URL"])
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": url.path.lstrip("/"),
            "USER": url.username or "",
            "PASSWORD": url.password or "",
            "HOST": url.hostname or "",
            "PORT": url.port or "",
            "OPTIONS": {"options": f"-c search_path={os.environ['DJANGO_PG_SCHEMA']}"},
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("DJANGO_SQLITE_PATH", "db.sqlite3"),
        }
    }

ONTHEDOT = {"APP": "djproject.jobs:app", "DATABASE": "default"}
TASKS = {
    "default": {"BACKEND": "onthedot.contrib.django.TaskBackend", "QUEUES": ["default", "mail"]}
}
