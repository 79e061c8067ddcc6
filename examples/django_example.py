"""Django Tasks on onthedot, in one file: a configured Django (SQLite), `migrate`, a task
enqueued inside `transaction.atomic()`, a worker that drains the queue, and the result read
back through Django Tasks. In a real project the settings live in settings.py, the task in
an app's tasks.py, and the worker is `python manage.py onthedot worker`.

    pip install "onthedot[django]" && python examples/django_example.py
"""

import tempfile
from pathlib import Path

import django
from django.conf import settings

settings.configure(
    INSTALLED_APPS=["django_tasks", "onthedot.contrib.django"],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(Path(tempfile.mkdtemp()) / "db.sqlite3"),
        }
    },
    ONTHEDOT={"DATABASE": "default"},  # the default: onthedot lives in Django's database
    TASKS={"default": {"BACKEND": "onthedot.contrib.django.TaskBackend"}},
    USE_TZ=True,
)
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from django_tasks import task  # noqa: E402

from onthedot.contrib.django import get_app  # noqa: E402


@task()
def greet(name: str) -> str:
    return f"hello {name}"


if __name__ == "__main__":
    call_command("migrate", verbosity=0)  # creates onthedot's tables too
    with transaction.atomic():
        result = greet.enqueue("ada")  # SQLite: enqueued when the transaction commits
    get_app().worker(burst=True, install_signals=False).run()
    result.refresh()
    print(result.status, result.return_value)
