"""The dashboard's pages as HTML: the pages' data through Jinja2 templates that autoescape.

Only two strings reach a page unescaped, both SVG drawn by this package from escaped
labels: the topology picture and the timeline.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from unfurl_lite.errors import ChangeIdError, HistoryError
from unfurl_lite.model import changeid
from unfurl_lite.record.history import iso
from unfurl_lite.view.dashboard import live, pages
from unfurl_lite.view.dashboard.timeline import status_of, timeline_svg
from unfurl_lite.view.diagram import status_colour, status_stroke

TEMPLATES = Path(__file__).resolve().parent / "templates"


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html"], default_for_string=True, default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["short_time"] = short_time
    env.filters["seconds"] = lambda v: "" if v is None else f"{v:.3f}s"
    env.filters["duration"] = duration
    env.filters["changeid_time"] = changeid_time
    env.filters["clock"] = lambda moment: moment.astimezone(UTC).strftime("%H:%M:%S.%f")[:12]

    env.globals.update(colour=status_colour, stroke=status_stroke, status_of=status_of)
    return env


def duration(seconds: float | None) -> str:
    """A job's length as people read it: 0.42s, 12.3s, 4m 05s, 1h 02m."""
    if seconds is None:
        return ""
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def changeid_time(change_id: str | None) -> str:
    """The time a changeId encodes (ISO), as a job's page shows it."""

    try:
        return iso(changeid.decode(str(change_id)))
    except (ChangeIdError, ValueError):
        return ""


def short_time(iso_time: str | None) -> str:
    return iso_time.replace("T", " ")[:19] if iso_time else ""


def _render(name: str, **context: Any) -> str:
    project = context.get("project")
    stamp = live.jobs_log_stamp(project) if project is not None else None
    return environment().get_template(name).render(jobs_log=json.dumps(stamp), **context)


def overview(ensemble: Path, instances: bool = False) -> str:
    data = pages.overview(ensemble, instances)
    return _render("overview.html", page="overview", project=ensemble, instances=instances,
                   report=data["report"], error=data["error"], drawn_by=data["drawn_by"],
                   picture=Markup(data["picture"]), running=data["running"])


def history(ensemble: Path, instance: str | None) -> str:

    try:
        jobs, problem = pages.history(ensemble, instance), ""
    except HistoryError as exc:  # an instance nothing knows: said, with a did-you-mean
        if not instance:
            raise
        jobs, problem = [], exc.format()
    return _render("history.html", page="history", project=ensemble, instance=instance or "",
                   jobs=jobs, problem=problem)


def job(ensemble: Path, text: str) -> str:
    page = pages.job_page(ensemble, text)
    now = datetime.now(UTC) if page.running else None
    return _render("job.html", page="job", project=ensemble, job=page,
                   timeline=Markup(timeline_svg(page.bars, now)))


def error_page(code: int, title: str, message: str) -> str:
    return _render("error.html", page="error", project=None, code=code, title=title,
                   message=message)
