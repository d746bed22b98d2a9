"""``unfurl serve``: a read-only local dashboard for one project (see docs/dashboard.md).

server (HTTP, routing, safety; ``start`` and ``DashboardServer``), pages (the data each
page shows, through the api), html (the pages through Jinja2 templates), timeline (the
Gantt chart), picture (the topology), live (server-sent events from the running job's
journal); templates/ and static/ ship with the package. Nothing is imported here: each
module is imported by its own name.
"""
