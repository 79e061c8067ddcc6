"""Executions recorded by test jobs running in worker processes: one line per run appended to
$ONTHEDOT_TEST_RECORD with a single O_APPEND write, so concurrent processes never interleave."""

from __future__ import annotations

import os


def append_record(line: str) -> None:
    """Append `line` (newline included) to $ONTHEDOT_TEST_RECORD in one write."""
    fd = os.open(os.environ["ONTHEDOT_TEST_RECORD"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
