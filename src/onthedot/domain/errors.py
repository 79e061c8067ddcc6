"""Errors users can catch. Every message is one line naming what was wrong and how to fix it."""

from __future__ import annotations


class OnthedotError(Exception):
    """Base class of every error onthedot raises on purpose."""


class ConfigurationError(OnthedotError):
    """A database URL, app path or setting is malformed."""


class DatabaseUnavailable(OnthedotError):
    """The database could not be reached."""


class DatabaseRefused(DatabaseUnavailable):
    """The database server answered and refused these connection details (no such database
    or role, a wrong password, no pg_hba.conf line): only a change of configuration helps."""


class SchemaOutOfDate(OnthedotError):
    """The database schema is behind the code; run `onthedot migrate`."""


class JobNotRegistered(OnthedotError):
    """A job name does not resolve to a registered function in this app."""


class JobNotFound(OnthedotError):
    """No job has the given id."""


class InvalidJobState(OnthedotError):
    """The job is not in a state that allows the requested action."""


class JobTimeout(OnthedotError):
    """The job ran past its timeout."""


class WorkerLost(OnthedotError):
    """The worker running the job stopped heartbeating; the job was rescued."""


class ScheduleError(OnthedotError):
    """A schedule is invalid or an operator action on it is refused."""
