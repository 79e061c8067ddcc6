"""Small charts drawn on the server as inline SVG: no script, no external request. Colours
come from classes in app.css (the CSP forbids inline styles); every text is escaped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from markupsafe import Markup, escape

from onthedot.domain.ledger import SlotRecord

# State of a job, or outcome of a slot, to a colour class of app.css.
OUTCOME_CLASSES = {
    "succeeded": "o-ok",
    "failed": "o-fail",
    "cancelled": "o-cancel",
    "running": "o-run",
    "queued": "o-queued",
    "enqueued": "o-queued",
    "backfilled": "o-backfill",
    "manual": "o-manual",
    "skipped_overlap": "o-skip",
    "skipped_operator": "o-skip",
}


@dataclass(frozen=True, slots=True)
class Bucket:
    start: datetime
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0

    @property
    def total(self) -> int:
        return self.succeeded + self.failed + self.cancelled


def buckets(
    counts: Sequence[tuple[datetime, str, int]], *, end: datetime, size: int, n: int
) -> list[Bucket]:
    """The `n` buckets of `size` seconds ending with the one holding `end`, filled from
    `storage.finished_counts` rows (epoch-aligned, like the storage's)."""
    last = int(end.timestamp()) // size * size
    first = last - (n - 1) * size
    found: dict[int, dict[str, int]] = {}
    for start, state, count in counts:
        key = int(start.timestamp()) // size * size
        found.setdefault(key, {})[state] = found.get(key, {}).get(state, 0) + count
    out = []
    for i in range(n):
        t = first + i * size
        got = found.get(t, {})
        out.append(
            Bucket(
                datetime.fromtimestamp(t, UTC),
                got.get("succeeded", 0),
                got.get("failed", 0),
                got.get("cancelled", 0),
            )
        )
    return out


def throughput(data: Sequence[Bucket], *, label: str, fmt: str = "%H:%M") -> Markup:
    """Stacked bars per bucket: succeeded, cancelled, failed; a tooltip on each bar."""
    width, height, top, bottom = 600, 120, 14, 16
    plot = height - top - bottom
    peak = max((b.total for b in data), default=0) or 1
    step = width / max(len(data), 1)
    bar = max(step - 1.5, 1.0)
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}">',
        f"<title>{escape(label)}</title>",
        f'<text class="axis" x="2" y="10">{peak}</text>',
        f'<line class="base" x1="0" y1="{top + plot}" x2="{width}" y2="{top + plot}"/>',
    ]
    for i, b in enumerate(data):
        x = i * step
        y = float(top + plot)
        tip = (
            f"{b.start.strftime(fmt)}: {b.succeeded} succeeded, {b.failed} failed, "
            f"{b.cancelled} cancelled"
        )
        parts.append(f"<g><title>{escape(tip)}</title>")
        parts.append(f'<rect class="hit" x="{x:.1f}" y="{top}" width="{bar:.1f}" height="{plot}"/>')
        for value, cls in ((b.succeeded, "o-ok"), (b.cancelled, "o-cancel"), (b.failed, "o-fail")):
            if value:
                h = max(plot * value / peak, 1.0)
                y -= h
                parts.append(
                    f'<rect class="{cls}" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" '
                    f'height="{h:.1f}"/>'
                )
        parts.append("</g>")
    if data:
        for i in (0, len(data) // 2, len(data) - 1):
            anchor = "start" if i == 0 else ("end" if i == len(data) - 1 else "middle")
            x = i * step + (bar if i == len(data) - 1 else 0)
            parts.append(
                f'<text class="axis" x="{x:.1f}" y="{height - 3}" text-anchor="{anchor}">'
                f"{escape(data[i].start.strftime(fmt))}</text>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def timeline(records: Sequence[SlotRecord], now: datetime) -> Markup:
    """The slot history on a time axis: one mark per slot, coloured by its job's state (or
    the slot's outcome when it has no job), and a line at now."""
    if not records:
        return Markup("")
    width, height, pad = 1200, 56, 8
    slots = [r.slot for r in records]
    start = min(slots)
    end = max(max(slots), now)
    span = (end - start).total_seconds() or 1.0

    def x(t: datetime) -> float:
        return pad + (width - 2 * pad) * (t - start).total_seconds() / span

    parts = [
        f'<svg class="chart timeline" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="slot history">',
        f'<line class="base" x1="{pad}" y1="26" x2="{width - pad}" y2="26"/>',
    ]
    if start <= now <= end:
        parts.append(f'<line class="now" x1="{x(now):.1f}" y1="8" x2="{x(now):.1f}" y2="44"/>')
    for r in records:
        state = r.job_state or r.outcome
        cls = OUTCOME_CLASSES.get(state, "o-other")
        job = f", job {r.job_id} {r.job_state or ''}" if r.job_id else ""
        tip = f"{r.slot.astimezone(UTC).strftime('%Y-%m-%d %H:%M:%SZ')}: {r.outcome}{job}"
        shape = "rect" if r.outcome.startswith("skipped") else "circle"
        if shape == "circle":
            mark = f'<circle class="{cls}" cx="{x(r.slot):.1f}" cy="26" r="5"/>'
        else:
            mark = f'<rect class="{cls}" x="{x(r.slot) - 4:.1f}" y="22" width="8" height="8"/>'
        parts.append(f"<g><title>{escape(tip)}</title>{mark}</g>")
    axis = "%m-%d %H:%M:%S UTC" if span < 7200 else "%m-%d %H:%M UTC"  # seconds on short spans
    for t, anchor in ((start, "start"), (end, "end")):
        parts.append(
            f'<text class="axis" x="{x(t):.1f}" y="{height - 2}" text-anchor="{anchor}">'
            f"{escape(t.astimezone(UTC).strftime(axis))}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def sparkline(values: Sequence[float], *, label: str) -> Markup:
    """Recent run times as a small line, oldest first, with the longest marked."""
    if len(values) < 2:
        return Markup("")
    width, height, pad = 120, 24, 2
    peak = max(values) or 1.0
    step = (width - 2 * pad) / (len(values) - 1)
    points = " ".join(
        f"{pad + i * step:.1f},{height - pad - (height - 2 * pad) * v / peak:.1f}"
        for i, v in enumerate(values)
    )
    tip = f"{label}: {', '.join(f'{v:g}s' for v in values)}"
    return Markup(
        f'<svg class="chart spark" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(tip)}</title>'
        f'<polyline class="o-ok" fill="none" points="{points}"/></svg>'
    )
