"""Timing specs: parsing, and the slots they produce.

This package implements "Timing specs" and "Time zones and daylight saving
time" of docs/scheduling.md. It is pure: no I/O besides loading
time zone data, and it never reads the clock. Every instant goes in as an
aware ``datetime`` and comes out as an aware UTC ``datetime`` with
``microsecond == 0``.

Spec syntax accepted by :func:`parse_spec`:

* **Cron**, 5 fields ``minute hour day-of-month month day-of-week`` or 6 fields
  with seconds first. Names (``JAN``, ``mon``; case-insensitive), ranges,
  lists, steps, ``L`` and ``LW`` (day-of-month), ``5L`` and ``5#3``
  (day-of-week), and the aliases ``@yearly @annually @monthly @weekly @daily
  @midnight @hourly``, normalized to their 5-field form.
* **Interval**: ``every <duration> [from <anchor>]``, e.g. ``every 90s``,
  ``every 1h30m``, ``every 2 weeks``, ``every 15m from 2024-01-01T00:05:00Z``.
  The anchor is an ISO 8601 time with a UTC offset (``Z`` or ``+02:00``) or a
  bare date (midnight UTC); it defaults to 1970-01-01T00:00:00Z. Slots are
  ``anchor + k * interval`` for k >= 0, in UTC, whole seconds.
* **Calendar interval**: ``every [N] <day|days|week|weeks|month|months>
  [at HH:MM[:SS]] [from YYYY-MM-DD]``, e.g. ``every 2 weeks at 09:00 from
  2024-01-05``, ``every 3 days at 06:00``, ``every month at 23:30 from
  2024-01-31`` (short units ``d``, ``w``, ``mo`` work too). A text spec is a
  calendar interval when it has ``at`` or counts months; ``every 2 weeks``
  alone is an *interval* of 14 x 24 hours. The anchor date defaults to
  1970-01-01; slots before it do not exist.

How slots are computed (see the contract for the rules):

* Cron: ``cronsim`` parses and validates the expression and decides which
  days and which hours/minutes/seconds match (Vixie/Debian day rule, ``L``,
  ``LW``, ``5L``, ``5#3``). This package searches the local wall clock itself
  and maps wall-clock times to instants per constant-offset segment of the
  time zone, because cronsim's own time zone handling departs from the
  contract in a few places (wildcard specs in 30-minute-shift zones and at
  midnight gaps, and fixed-time specs queried from the second occurrence of
  an overlap can return an instant that is not after the query). Fixed-time
  specs (5 fields, minute and hour not starting with ``*``): a slot in a gap
  fires at the first instant after the gap, a slot in an overlap at its first
  occurrence, and slots landing on one instant are one slot. Wildcard specs
  fire at every real instant whose local wall-clock time matches.
* Calendar interval: slot k is ``anchor + k * period`` (months clamp to the
  month's last day, always computed from the anchor), at the local time
  ``at``, mapped like a fixed-time cron slot: 02:30 on New York's
  spring-forward day fires at 03:00 EDT, the end of the gap (not at 03:30,
  which shifting by the gap's length, as PEP 495 does, would give).
* Interval: integer arithmetic on UTC seconds.

A cron spec whose days exist in none of its months (``0 0 30 2 *``, which
cronsim itself refuses) or that matches no day of the 400-year Gregorian
cycle is valid but never fires: ``next_after`` returns None.

Instants before year 3 or after year 9997 are outside the supported range:
there are no slots there.

Modules, each depending only on those above it: ``instants`` (whole seconds,
the supported range), ``zones`` (offsets, transitions, segments), ``cron``
(the compiled table and its searches), ``cron_syntax`` (normalization and
error hints), ``base`` (the :class:`Spec` contract, the fingerprint),
``kinds`` (cron, interval, calendar), ``text`` (parsing, builders). Import
public names from this package.
"""

from __future__ import annotations

from onthedot.domain.durations import SpecError
from onthedot.domain.specs.base import Spec, fingerprint
from onthedot.domain.specs.kinds import CalendarSpec, CronSpec, IntervalSpec
from onthedot.domain.specs.text import calendar, every, parse_spec
from onthedot.domain.specs.zones import load_timezone

__all__ = [
    "CalendarSpec",
    "CronSpec",
    "IntervalSpec",
    "Spec",
    "SpecError",
    "calendar",
    "every",
    "fingerprint",
    "load_timezone",
    "parse_spec",
]
