"""Planning: a workflow and an ensemble become a :class:`Plan`, an ordered graph of
tasks. One planner per family of workflows (Unfurl's, Cloudify's, update, custom TOSCA
workflows), found through one registry. Planning runs nothing and writes nothing.
"""
