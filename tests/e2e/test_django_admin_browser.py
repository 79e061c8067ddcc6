"""onthedot's admin mounted in a Django project, in a real browser against a real server
(`manage.py runserver`, WSGI): Django's login page lets a staff user in, the jobs page shows a
Django task by its path, and the row's Cancel button (an htmx POST carrying Django's CSRF
token in X-CSRFToken) cancels the job."""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("django")
pytest.importorskip("django_tasks")

from tests.contrib.test_django import PROJECT, Project, _env
from tests.e2e.test_browser import browser_page  # noqa: F401 (the fixture)
from tests.waiting import wait_for

SETUP = """
from django.contrib.auth.models import User
from shop import tasks
User.objects.create_user("alice", password="pw-alice", is_staff=True)
print(tasks.add.enqueue(20, 22).id)
"""
STATE = "from shop import tasks; print(tasks.add.get_result('{id}').status)"


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def test_staff_cancels_a_django_task_in_the_browser(
    tmp_path: Path,
    browser_page: Any,  # noqa: F811
) -> None:
    from playwright.sync_api import expect

    env = _env(DJANGO_DB="sqlite", DJANGO_SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    project = Project(env)
    project.manage("migrate", "--noinput")
    job_id = project.manage("shell", "-c", SETUP).stdout.strip().splitlines()[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=PROJECT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: answers(f"{base}/admin/login/"), "runserver to answer", timeout=60)
        page = browser_page
        page.goto(f"{base}/admin/onthedot/jobs")
        assert "/admin/login/" in page.url  # Django's own login page
        page.fill("#id_username", "alice")
        page.fill("#id_password", "pw-alice")
        page.click("input[type=submit]")
        page.wait_for_url(f"{base}/admin/onthedot/jobs")
        page.errors.clear()  # the login page's own static files are not served here
        page.reload()
        row = page.locator(f"#job-{job_id}")
        expect(row).to_contain_text("shop.tasks.add (django.task)")
        row.get_by_role("button", name="Cancel").click()
        expect(page.locator(f"#job-{job_id} .badge")).to_have_text("cancelled")
        assert page.errors == [], page.errors
    finally:
        server.terminate()
        server.wait(30)
    state = project.manage("shell", "-c", STATE.format(id=job_id)).stdout.split()[-1]
    assert state == "FAILED"  # a cancelled job, as Django Tasks reports it
