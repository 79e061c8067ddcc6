"""Create onthedot's tables with onthedot's own migrator: the same SQL as `onthedot migrate`,
run on the database named by settings.ONTHEDOT["DATABASE"] (and only there). Later onthedot
schema versions are applied by every `manage.py migrate` (see apps.py)."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def migrate_onthedot(apps: Any, schema_editor: Any) -> None:
    from onthedot.contrib.django.apps import migrate_onthedot_schema

    migrate_onthedot_schema(schema_editor.connection.alias)


class Migration(migrations.Migration):
    # onthedot migrates on its own connection; on SQLite a transaction held open by Django's
    # connection would lock it out.
    atomic = False
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(migrate_onthedot, migrations.RunPython.noop)]
