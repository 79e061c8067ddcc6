"""The examples of README.md and docs/*.md are tests (tests/docs/collect.py); under pytest-xdist
(`-n 4`, the fast lane) every docs page runs on one worker (`tests/lanes.py`)."""

from tests.docs.collect import pytest_collect_file
from tests.lanes import pytest_xdist_make_scheduler

__all__ = ["pytest_collect_file", "pytest_xdist_make_scheduler"]
