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
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django_tasks",
    "onthedot.contrib.django",
    "shop",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "djproject.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
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
