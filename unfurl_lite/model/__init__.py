"""The domain model as plain data: templates, instances, relationships, statuses,
changeIds, and dependency graphs over names. No I/O, no YAML, no evaluation.
"""
