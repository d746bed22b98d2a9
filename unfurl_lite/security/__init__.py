"""Security rules every layer relies on: redaction of secrets at each write boundary,
file access confined to the project, and the environment operations may see.

The lowest package: it imports nothing of unfurl_lite but ``errors``, so any layer may
use it without pulling in more of the tool.
"""
