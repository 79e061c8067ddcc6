"""Every URL built from a schedule key names that schedule and nothing else: `/` and the
other reserved characters are percent-encoded, and keys of dots only are refused."""

from __future__ import annotations

import pytest

from onthedot import App
from onthedot.domain.errors import ScheduleError
from onthedot.web.forms import key_path
from tests.web.helpers import TestClient, post


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("nightly", "/schedules/nightly"),
        ("report:acme", "/schedules/report:acme"),
        ("../queues/default", "/schedules/..%2Fqueues%2Fdefault"),
        ("x/../../jobs/2", "/schedules/x%2F..%2F..%2Fjobs%2F2"),
        ("a?b#c%d\\e", "/schedules/a%3Fb%23c%25d%5Ce"),
    ],
)
def test_key_path_is_one_segment(key: str, path: str) -> None:
    assert key_path(key) == path


def test_a_path_like_key_acts_on_its_schedule(app: App, client: TestClient) -> None:
    app.schedules.create("../queues/default", "@hourly", "echo")
    page = client.get("/schedules")
    assert 'action="/schedules/..%2Fqueues%2Fdefault/pause"' in page.text
    post(client, "/schedules/..%2Fqueues%2Fdefault/pause")
    assert app.schedules.get("../queues/default")["paused_by"] == "web"
    assert not any(q.paused for q in app.queue_stats())


@pytest.mark.parametrize("key", [".", "..", "..."])
def test_keys_of_dots_only_are_refused(app: App, client: TestClient, key: str) -> None:
    with pytest.raises(ScheduleError, match="dots only"):
        app.schedules.create(key, "@hourly", "echo")
