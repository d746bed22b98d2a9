"""What is kept of an operation's output: plain text (no terminal escapes, so job files,
logs and git never hold them), and only its tail when it is long."""

from __future__ import annotations

import re

OUTPUT_LIMIT = 64 * 1024
# CSI (colours, cursor moves), OSC (titles, hyperlinks) and two-byte escapes
ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")


def strip_ansi(text: str) -> str:
    return ANSI_ESCAPE.sub("", text) if "\x1b" in text else text


def tail(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= OUTPUT_LIMIT else "...\n" + text[-OUTPUT_LIMIT:]


def last_line(text: str | None) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no output)"
