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

from unfurl_lite.view.dashboard import live, pages
from unfurl_lite.view.dashboard.timeline import status_of, timeline_svg

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
    from unfurl_lite.view.diagram import status_colour, status_stroke

    env.globals.update(colour=status_colour, stroke=status_stroke, status_of=status_of)
    return env


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
                   picture=Markup(data["picture"]))


def history(ensemble: Path, instance: str | None) -> str:
    return _render("history.html", page="history", project=ensemble, instance=instance or "",
                   jobs=pages.jobs(ensemble, instance))


def job(ensemble: Path, text: str) -> str:
    page = pages.job_page(ensemble, text)
    now = datetime.now(UTC) if page.running else None
    return _render("job.html", page="job", project=ensemble, job=page,
                   timeline=Markup(timeline_svg(page.bars, now)))


def error_page(code: int, title: str, message: str) -> str:
    return _render("error.html", page="error", project=None, code=code, title=title,
                   message=message)
