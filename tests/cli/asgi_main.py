"""A module as a FastAPI project often has one: the web app (`api`) beside the onthedot App
(`jobs`) and a factory of another; `--app` naming the web app must say which are Apps."""

from __future__ import annotations

from fastapi import FastAPI

from onthedot import App

api = FastAPI()
jobs = App()


@jobs.job(name="noop")
def noop() -> None: ...


def make_jobs() -> App:
    """A factory: `--app tests.cli.asgi_main:make_jobs` builds its App."""
    return jobs
