"""``unfurl serve``: a read-only local dashboard for one project (see docs/dashboard.md).

server (HTTP, routing, safety), pages (the data each page shows, through the api), render
(Jinja2 templates), timeline (the Gantt chart), picture (the topology), live (server-sent
events from the running job's journal); templates/ and static/ ship with the package.
"""

from __future__ import annotations

from unfurl_lite.view.dashboard.server import DashboardServer, start

__all__ = ["DashboardServer", "start"]
