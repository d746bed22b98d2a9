"""The domain model as plain data: templates, instances, relationships, statuses,
changeIds, dependency graphs over names, TOSCA type lineage and capabilities, and the
status layout (instances nested under their hosts). No I/O, no YAML, no evaluation.
"""
