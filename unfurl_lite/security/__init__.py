"""Security rules every layer relies on: secrets as types (taint), redaction of secrets at
each write boundary (the one entry point), file access confined to the project, and the
environment operations and templates may see.

The lowest package: it imports nothing of unfurl_lite but ``errors``, so any layer may
use it without pulling in more of the tool.
"""
