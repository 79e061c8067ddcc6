"""The `onthedot` command: a thin client over the App."""

from onthedot.cli.main import cli, main

__all__ = ["cli", "main"]
