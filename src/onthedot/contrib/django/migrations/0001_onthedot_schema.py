"""Create onthedot's tables with onthedot's own migrator: the same SQL as `onthedot migrate`,
run on the database named by settings.ONTHEDOT["DATABASE"] (and only there)."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def migrate_onthedot(apps: Any, schema_editor: Any) -> None:
    from onthedot.contrib.django.runtime import get_app
    from onthedot.contrib.django.settings import load_settings

    conf = load_settings()
    if conf.shares_url_with_django and schema_editor.connection.alias != conf.database:
        return
    get_app().migrate()


class Migration(migrations.Migration):
    # onthedot migrates on its own connection; on SQLite a transaction held open by Django's
    # connection would lock it out.
    atomic = False
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(migrate_onthedot, migrations.RunPython.noop)]
