"""From the files on disk to a validated :class:`~unfurl_lite.model.ensemble.Ensemble`:
YAML (ruamel plus a fast path), guards on size and shape, Unfurl's merge directives,
validation, the parse cache, and reading earlier versions of the spec from git.
"""
