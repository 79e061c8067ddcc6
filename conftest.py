"""The examples of README.md and docs/*.md are tests (tests/docs/collect.py)."""

from tests.docs.collect import pytest_collect_file

__all__ = ["pytest_collect_file"]
