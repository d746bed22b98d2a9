"""The ``unfurl`` command: click commands, rich rendering, tables, shell completion
and terminal rules. The only package that imports click or rich; every command is
one call of :mod:`unfurl_lite.api`.
"""
