"""Pictures of a project: the topology as a graph (DOT, Mermaid, SVG) and the local dashboard.

A layer of its own above the api: it only reads what the api returns and renders it, so
neither the command line nor the dashboard needs to know how a plan or a record is made.
"""
