"""unfurl-lite: a git-backed deployment tool compatible with Unfurl's ensemble format."""

__version__ = "0.1.0"
