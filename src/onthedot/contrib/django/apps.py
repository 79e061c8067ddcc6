"""The Django app config: the label `onthedot` for onthedot's migration and command."""

from __future__ import annotations

from django.apps import AppConfig


class OnthedotConfig(AppConfig):
    name = "onthedot.contrib.django"
    label = "onthedot"
    verbose_name = "onthedot"
    default_auto_field = "django.db.models.BigAutoField"
