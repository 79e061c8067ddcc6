"""Requests to onthedot's admin mounted in the project, through Django's test client with CSRF
checks on (as a browser meets them); prints what each answered as one JSON line."""

import json
import re

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand
from django.test import Client

from shop import tasks

PREFIX = "/admin/onthedot"


class Command(BaseCommand):
    def handle(self, *args, **options):
        User.objects.create_user("alice", password="pw-alice", is_staff=True)
        User.objects.create_user("bob", password="pw-bob")
        job_id = tasks.add.enqueue(1, 2).id
        out = {"job": job_id}

        anonymous = Client(enforce_csrf_checks=True)
        first = anonymous.get(f"{PREFIX}/jobs")
        out["anonymous"] = [first.status_code, first.headers.get("Location")]

        bob = Client(enforce_csrf_checks=True)
        bob.login(username="bob", password="pw-bob")
        out["not_staff"] = bob.get(f"{PREFIX}/jobs").status_code

        from django.contrib.auth.models import Permission
        from django.test import override_settings

        carol = User.objects.create_user("carol", password="pw-carol")  # not staff
        carol.user_permissions.add(Permission.objects.get(codename="view_user"))
        with override_settings(ONTHEDOT={"ADMIN_PERMISSION": "auth.view_user"}):
            by_perm = Client(enforce_csrf_checks=True)
            by_perm.login(username="carol", password="pw-carol")
            staff_without = Client(enforce_csrf_checks=True)
            staff_without.login(username="alice", password="pw-alice")
            out["permission"] = [
                by_perm.get(f"{PREFIX}/jobs").status_code,
                staff_without.get(f"{PREFIX}/jobs").status_code,
            ]

        alice = Client(enforce_csrf_checks=True)
        alice.login(username="alice", password="pw-alice")
        page = alice.get(f"{PREFIX}/jobs")
        html = page.content.decode()
        out["staff"] = page.status_code
        out["task_path_shown"] = "shop.tasks.add (django.task)" in html
        out["static"] = alice.get(f"{PREFIX}/static/app.css").status_code
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
        out["django_token_in_forms"] = token is not None
        out["htmx_header"] = '"X-CSRFToken"' in html

        refused = alice.post(f"{PREFIX}/jobs/{job_id}/cancel", {"next": "/jobs"})
        out["post_without_token"] = refused.status_code
        done = alice.post(
            f"{PREFIX}/jobs/{job_id}/cancel",
            {"csrfmiddlewaretoken": token.group(1), "next": "/jobs"},
        )
        out["post_with_token"] = [done.status_code, done.headers.get("Location")]
        out["state_after"] = tasks.add.get_result(job_id).status

        pause = alice.post(
            f"{PREFIX}/schedules/nightly-orders/pause",
            {"csrfmiddlewaretoken": token.group(1), "next": "/schedules", "note": "deploy"},
        )
        out["pause"] = pause.status_code
        from onthedot.contrib.django import get_app

        audit = get_app().schedules.audit("nightly-orders")
        out["actor"] = audit[0].actor if audit else None
        self.stdout.write(json.dumps(out))
