"""Whether output may carry colour: only on a terminal, and never when the user said no.

``NO_COLOR`` (any non-empty value, https://no-color.org) and ``--no-color`` win over
everything that would force colour (``FORCE_COLOR``, rich's ``force_terminal``). Nothing
written to a file goes through a rich console, and command output recorded from
operations is stripped of escapes, so job files, logs and git never hold them.
"""

from __future__ import annotations

import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# only Select Graphic Rendition: colours and styles (bold, dim, italic...)
STYLE_ESCAPE = re.compile(r"\x1b\[[0-9;:]*m")

_colour_disabled_by_option = False


def disable_colour() -> None:
    """``unfurl --no-color``: for the rest of this process."""
    global _colour_disabled_by_option
    _colour_disabled_by_option = True


def colour_disabled() -> bool:
    return _colour_disabled_by_option or bool(os.environ.get("NO_COLOR"))


def is_terminal() -> bool:
    """Whether stdout is a terminal a person reads (rich layout, live progress)."""
    return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"


#: what click.echo removes from text written to a stream that is not a terminal
ANSI_ESCAPE = re.compile(r"\033\[[;?0-9]*[a-zA-Z]")


def echo(text: str, err: bool = False) -> None:
    """A line on stdout (or stderr) as ``click.echo`` writes it: escapes removed when the
    stream is not a terminal, flushed. Where click is loaded (its road) click writes it,
    since click re-wraps a stream whose encoding is misconfigured; the quick road answers
    only UTF-8 streams, where both write the same."""
    click = sys.modules.get("click")
    if click is not None:
        click.echo(text, err=err)
        return
    stream = sys.stderr if err else sys.stdout
    if not stream.isatty():
        text = ANSI_ESCAPE.sub("", text)
    stream.write(text + "\n")
    stream.flush()


def console(stderr: bool = False) -> Any:
    """A rich console for stdout (or stderr); without colour it emits no style escapes."""
    from rich.console import Console  # start-up: keeps rich (58 modules) off `validate`, `deploy`

    if colour_disabled():
        # rich's own no_color still emits bold/dim/italic: no colour system emits nothing
        return Console(color_system=None, no_color=True, highlight=False, stderr=stderr)
    return Console(highlight=False, stderr=stderr)
