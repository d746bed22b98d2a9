"""A job's tasks as a Gantt chart: one bar per task from its start to its end, inline SVG.

Bars that overlap in time ran in parallel; the critical path (the chain of tasks, each
starting after the one before it ended, that ends last) is outlined, because that chain
is what made the job as long as it was. A task that never started has a row too: a
marker at the moment it was blocked or skipped, or its outcome (cancelled, not run)
written where its bar would be, so the chart never suggests it ran. Drawn here rather
than by a chart library so the page needs no script and no asset from outside the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from html import escape

from unfurl_lite.view.diagram import status_colour

ROW = 22  # px per task
LABEL_WIDTH = 260
CHART_WIDTH = 640
AXIS = 24
TOLERANCE = 0.001  # seconds of rounding: a task "follows" one that ended up to this after it began


@dataclass(frozen=True)
class Bar:
    """One task on the dashboard's timeline."""
    key: str  # the task's changeId
    label: str
    status: str
    start: datetime | None  # None: it never started
    end: datetime | None  # None: still running (or, never started: never settled)
    note: str = ""  # why a task that never started did not


#: a task's state (Cloudify's names) as the status whose colour it is drawn in
_STATE_STATUS = {"succeeded": "ok", "failed": "error", "blocked": "degraded",
                 "skipped": "unknown", "pending": "pending", "sending": "pending",
                 "sent": "pending", "started": "pending", "rescheduled": "degraded",
                 "cancelled": "absent", "cancelling": "degraded", "force_cancelling": "degraded",
                 "kill_cancelling": "degraded", "running": "pending", "not run": "absent",
                 "interrupted": "error", "queued": "pending", "terminated": "ok"}


def status_of(status_or_state: str | None) -> str:
    """The palette's status for a status, a task state or a job's shown status."""
    text = str(status_or_state or "pending")
    return _STATE_STATUS.get(text, text)


def critical_path(bars: list[Bar], now: datetime | None = None) -> set[str]:
    """Keys of the chain that ends last: from the last task to end, each step back takes
    the task that ended latest before (or right as) the current one started."""
    timed = [b for b in bars if b.start is not None]
    if not timed:
        return set()

    def end_of(bar: Bar) -> datetime:
        return bar.end or now or max(b.end or b.start for b in timed)  # type: ignore[type-var,return-value]

    current = max(timed, key=end_of)
    chain = {current.key}
    while True:
        start = current.start
        assert start is not None
        before = [b for b in timed if b.key not in chain
                  and (end_of(b) - start).total_seconds() <= TOLERANCE and b.start < start]  # type: ignore[operator]
        if not before:
            return chain
        current = max(before, key=end_of)
        chain.add(current.key)


def _seconds(took: float) -> str:
    return f"{took:.3f}s" if took < 10 else f"{took:.1f}s"


def _started(bar: Bar) -> datetime:
    """A started bar's start (the sort key of the bars that have one)."""
    return bar.start or datetime.min


def timeline_svg(bars: list[Bar], now: datetime | None = None) -> str:
    """The chart; an empty string when no task has a time (it started, or was settled)."""
    timed = sorted((b for b in bars if b.start is not None), key=_started)
    unstarted = [b for b in bars if b.start is None]
    moments = [m for b in bars for m in (b.start, b.end) if m is not None]
    if not moments:
        return ""
    origin = min(moments)
    ends = [b.end or now or b.start or origin for b in timed]  # no end, no now: it died
    span = max(max((m - origin).total_seconds() for m in [*ends, *moments]), 0.001)
    scale = CHART_WIDTH / span
    critical = critical_path(timed, now)
    rows = len(timed) + len(unstarted)
    height = AXIS + ROW * rows + 8
    width = LABEL_WIDTH + CHART_WIDTH + 110
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="Timeline of {rows} tasks over {_seconds(span)}">',
        f'<line x1="{LABEL_WIDTH}" y1="{AXIS - 6}" x2="{LABEL_WIDTH + CHART_WIDTH}" '
        f'y2="{AXIS - 6}" stroke="#888"/>',
    ]
    for tick in range(5):
        x = LABEL_WIDTH + CHART_WIDTH * tick / 4
        parts.append(f'<text x="{x:.1f}" y="{AXIS - 10}" font-size="10" text-anchor="middle" '
                     f'fill="#555">{_seconds(span * tick / 4)}</text>')
    for row, (bar, end) in enumerate(zip(timed, ends, strict=True)):
        parts.append(_bar(bar, end, AXIS + row * ROW, origin, scale, bar.key in critical))
    for row, bar in enumerate(unstarted, start=len(timed)):
        parts.append(_unstarted(bar, AXIS + row * ROW, origin, scale))
    parts.append("</svg>")
    return "\n".join(parts)


def _label(bar: Bar, y: int) -> str:
    return (f'<text x="{LABEL_WIDTH - 6}" y="{y + 14}" font-size="11" text-anchor="end" '
            f'fill="#222">{escape(bar.label[:40])}</text>')


def _bar(bar: Bar, end: datetime, y: int, origin: datetime, scale: float,
         on_path: bool) -> str:
    assert bar.start is not None
    x = LABEL_WIDTH + (bar.start - origin).total_seconds() * scale
    length = max((end - bar.start).total_seconds() * scale, 2.0)
    outline = ' stroke="#111" stroke-width="2"' if on_path else ""
    duration = (end - bar.start).total_seconds()
    said = _seconds(duration)
    if bar.end is None and end == bar.start:  # its job's process died while it ran
        said, running = "no end recorded", " (no end: its job's process died)"
    else:
        running = " (running)" if bar.end is None else ""
    title = escape(f"{bar.label}: {bar.status}, {_seconds(duration)}{running}"
                   + (", on the critical path" if on_path else ""))
    return (
        f'<g class="task{" critical" if on_path else ""}" data-change-id="{escape(bar.key)}" '
        f'data-outcome="{escape(bar.status)}"><title>{title}</title>{_label(bar, y)}'
        f'<rect class="bar" x="{x:.1f}" y="{y + 3}" width="{length:.1f}" height="{ROW - 6}" '
        f'rx="3" fill="{status_colour(status_of(bar.status))}"{outline}/>'
        f'<text x="{x + length + 4:.1f}" y="{y + 14}" font-size="10" fill="#555">'
        f"{said}</text></g>"
    )


def _unstarted(bar: Bar, y: int, origin: datetime, scale: float) -> str:
    """A task that never started: a diamond where it was settled (blocked, skipped), else
    its outcome written at the start of the chart."""
    title = escape(f"{bar.label}: {bar.status}" + (f" ({bar.note})" if bar.note else ""))
    said = escape(bar.status + (f": {bar.note}" if bar.note else ""))[:90]
    head = (f'<g class="task unstarted" data-change-id="{escape(bar.key)}" '
            f'data-outcome="{escape(bar.status)}"><title>{title}</title>{_label(bar, y)}')
    if bar.end is None:
        return (head + f'<text class="outcome" x="{LABEL_WIDTH + 4}" y="{y + 14}" '
                f'font-size="10" font-style="italic" fill="#555">{said}</text></g>')
    x = LABEL_WIDTH + (bar.end - origin).total_seconds() * scale
    middle = y + ROW / 2
    colour = status_colour(status_of(bar.status))
    right = x > LABEL_WIDTH + CHART_WIDTH / 2  # the words go where there is room
    words = (f'x="{x - 10:.1f}" text-anchor="end"' if right else f'x="{x + 10:.1f}"')
    return (head + f'<path class="marker" d="M{x:.1f},{middle - 6:.1f} l6,6 l-6,6 l-6,-6 z" '
            f'fill="{colour}" stroke="#555"/>'
            f'<text class="outcome" {words} y="{y + 14}" font-size="10" '
            f'font-style="italic" fill="#555">{said}</text></g>')
