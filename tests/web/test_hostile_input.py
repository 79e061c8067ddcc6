"""Hostile strings in every filter and form field give a clean page or a 400, never a 500:
markup, SQL fragments, NUL and control bytes, invalid UTF-8, huge values, numbers past 64 bits."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from onthedot import App
from onthedot.testing import tick
from tests.web.helpers import TestClient, token

HOSTILE = [
    "<script>alert(1)</script>",
    "' OR 1=1; DROP TABLE onthedot_jobs; --",
    "%' OR '%'='",
    '"; SELECT pg_sleep(10); --',
    "\\",
    "😀 ünïcödé ☃",
    "x" * 60_000,  # near the longest URL a client sends
    "\x00",
    "a\x00b",
    "\x1b[31m",
    "-1",
    "99999999999999999999999999",
    "0",
    "../../etc/passwd",
    "",
]
RAW_QUERY = ["%FF%FE", "%C3%28", "%ED%A0%80", "%00", "%", "%%41", "a=b&c", "%E2%82"]
CLEAN = {200, 400, 404, 411, 413}


def _ok(status: int, where: str) -> None:
    assert status in CLEAN, f"{where}: HTTP {status}"


@pytest.fixture
def seeded(app: App, client: TestClient) -> TestClient:
    app.enqueue("echo", 1)
    app.schedule("minutely", "* * * * *", "echo")
    tick(app)
    app.schedules.create("rt", "@hourly", "echo")
    return client


def test_hostile_strings_in_job_filters(seeded: TestClient) -> None:
    for value in HOSTILE:
        for field in ("state", "queue", "name", "schedule", "search", "before"):
            url = f"/jobs?{field}={quote(value)}"
            page = seeded.get(url)
            _ok(page.status_code, url[:80])
            if page.status_code == 200 and "<" in value:
                assert value not in page.text
            _ok(seeded.get(f"/jobs/count?{field}={quote(value)}").status_code, f"count {field}")


def test_invalid_utf8_and_broken_escapes_in_query_strings(seeded: TestClient) -> None:
    for raw in RAW_QUERY:
        for path in ("/jobs", "/jobs/count", "/", "/schedules", "/metrics"):
            _ok(seeded.get(f"{path}?search={raw}&queue={raw}&state={raw}").status_code, path)


def test_hostile_path_segments(seeded: TestClient) -> None:
    for value in [*HOSTILE[:-1], *RAW_QUERY]:
        segment = value if value in RAW_QUERY else quote(value, safe="")
        for path in (f"/jobs/{segment}", f"/schedules/{segment}"):
            _ok(seeded.get(path).status_code, path[:80])


def test_hostile_form_fields(app: App, seeded: TestClient) -> None:
    csrf = token(seeded)
    job_id = app.enqueue("echo", 2)
    targets = {
        "/schedules/minutely/pause": ("until", "note"),
        "/schedules/minutely/skip": ("slot", "note"),
        "/schedules/minutely/unskip": ("slot",),
        "/schedules/minutely/backfill": ("start", "end", "note"),
        "/schedules/minutely/trigger": ("note", "next"),
        "/schedules/rt/update": ("spec", "job", "timezone", "args", "kwargs", "priority"),
        "/schedules/create": ("key", "spec", "job", "timezone", "args", "jitter"),
        "/jobs/bulk/cancel": ("state", "queue", "name", "search", "before"),
        f"/jobs/{job_id}/cancel": ("next", "fragment"),
        "/queues/pause": ("queue",),
    }
    for value in HOSTILE:
        for url, fields in targets.items():
            for field in fields:
                data = {"csrf_token": csrf, field: value}
                page = seeded.post(url, data=data)
                _ok(page.status_code, f"{url} {field}={value[:20]!r}")
                if page.status_code == 200 and "<script>" in value:
                    assert "<script>alert(1)</script>" not in page.text


def test_hostile_form_bodies(seeded: TestClient) -> None:
    csrf = token(seeded)
    headers = {"content-type": "application/x-www-form-urlencoded", "x-csrf-token": csrf}
    bodies = [
        b"note=%FF%FE%00&until=%ED%A0%80",
        b"note=\xff\xfe\x00",
        b"%%%&&&===",
        b"note=" + b"y" * 2_000_000,
    ]
    for body in bodies:
        page = seeded.post("/schedules/minutely/pause", content=body, headers=headers)
        _ok(page.status_code, repr(body[:30]))

    def chunks() -> Iterator[bytes]:
        yield b"note="
        yield b"z" * 1000

    streamed = seeded.post("/schedules/minutely/pause", content=chunks(), headers=headers)
    assert streamed.status_code == 411
    multipart = {"content-type": "multipart/form-data; boundary=zz", "x-csrf-token": csrf}
    broken = b'--zz\r\nContent-Disposition: form-data; name="note"\r\n\r\n\xff\x00'
    _ok(
        seeded.post("/schedules/minutely/pause", content=broken, headers=multipart).status_code,
        "multipart",
    )
    upload = (
        b'--zz\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n\r\n'
        b"data\r\n--zz--\r\n"
    )
    _ok(
        seeded.post("/schedules/minutely/pause", content=upload, headers=multipart).status_code,
        "upload",
    )


def test_methods_the_admin_does_not_serve(seeded: TestClient) -> None:
    assert seeded.put("/jobs").status_code == 405
    assert seeded.delete("/schedules/rt").status_code == 405
    assert seeded.get("/schedules/rt/pause").status_code == 404  # no schedule "rt/pause"
