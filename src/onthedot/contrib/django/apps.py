"""The Django app config: the label `onthedot` for onthedot's migration and command.

Django records `onthedot.0001_onthedot_schema` once, but onthedot's schema has versions of its
own: every `manage.py migrate` (post_migrate, once per run) brings it to the installed
onthedot's version, so upgrading onthedot needs no step beyond the usual `migrate`.
"""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import post_migrate


def migrate_onthedot_schema(using: str) -> None:
    """Apply onthedot's pending migrations when `migrate` ran on onthedot's database."""
    from onthedot.contrib.django.runtime import get_app
    from onthedot.contrib.django.settings import load_settings

    conf = load_settings()
    if conf.shares_url_with_django and using != conf.database:
        return
    get_app().migrate()


def _after_migrate(sender: Any, *, using: str = "default", **kwargs: Any) -> None:
    migrate_onthedot_schema(using)


class OnthedotConfig(AppConfig):
    name = "onthedot.contrib.django"
    label = "onthedot"
    verbose_name = "onthedot"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        post_migrate.connect(_after_migrate, sender=self, dispatch_uid="onthedot-schema")
