"""`manage.py shopdemo enqueue` enqueues the test scenario and prints the ids as JSON;
`manage.py shopdemo results KEY=ID ...` prints each result as JSON."""

import asyncio
import json
from datetime import timedelta

from django.core.management.base import BaseCommand
from django.db import transaction
from django.utils import timezone
from django_tasks import default_task_backend
from django_tasks.exceptions import TaskResultDoesNotExist

from onthedot.contrib.django import get_app
from shop import tasks
from shop.models import Order


class Rollback(Exception):
    pass


class Command(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("action")
        parser.add_argument("ids", nargs="*")

    def handle(self, *args, action, ids, **options):
        if action == "enqueue":
            self.stdout.write(json.dumps(self.enqueue()))
        else:
            self.stdout.write(json.dumps(self.results(dict(i.split("=") for i in ids))))

    def enqueue(self):
        out = {}
        try:
            with transaction.atomic():
                Order.objects.create(item="rolled back")
                out["rolled_back"] = tasks.add.enqueue(100, 1).id
                raise Rollback
        except Rollback:
            pass
        out["jobs_after_rollback"] = len(get_app().list_jobs())
        with transaction.atomic():
            Order.objects.create(item="kept")
            pending = tasks.add.enqueue(2, 3)
            out["id_inside_atomic"] = pending.id
            # another connection (onthedot's own pool) must not see it before the commit
            out["seen_before_commit"] = bool(pending.id) and (
                get_app().get_job(int(pending.id)) is not None
            )
        out["ok"] = pending.id
        out["fail"] = tasks.explode.enqueue("no such thing").id
        out["ctx"] = tasks.whoami.enqueue(tag="t1").id
        out["async"] = asyncio.run(tasks.double.aenqueue(21)).id
        out["orders"] = tasks.count_orders.enqueue().id
        out["mail"] = tasks.add.using(queue_name="mail").enqueue(4, 4).id
        later = tasks.add.using(priority=7, run_after=timezone.now() + timedelta(hours=1))
        out["later"] = later.enqueue(1, 1).id
        result = tasks.add.enqueue(5, 5)
        result.refresh()
        out["fresh_status"] = str(result.status)
        out["refresh_id"] = result.id
        out["flags"] = [
            default_task_backend.supports_defer,
            default_task_backend.supports_async_task,
            default_task_backend.supports_get_result,
            default_task_backend.supports_priority,
        ]
        return out

    def results(self, ids):
        out = {}
        for key, rid in ids.items():
            try:
                r = default_task_backend.get_result(rid)
            except TaskResultDoesNotExist:
                out[key] = None
                continue
            row = {
                "status": str(r.status),
                "attempts": r.attempts,
                "errors": [[e.exception_class_path, e.traceback] for e in r.errors],
                "finished": r.is_finished,
                "task": r.task.module_path,
                "args": r.args,
                "kwargs": r.kwargs,
            }
            if r.status == "SUCCESSFUL":
                row["return_value"] = r.return_value
            if key == "ok":
                typed = tasks.add.get_result(rid)
                row["aget"] = asyncio.run(tasks.add.aget_result(rid)).return_value
                row["typed"] = typed.return_value
                if r.errors:
                    row["exc"] = r.errors[0].exception_class.__name__
            if key == "fail":
                row["exc"] = r.errors[0].exception_class.__name__
            out[key] = row
        return out
