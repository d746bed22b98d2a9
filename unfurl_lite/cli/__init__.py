"""The ``unfurl`` command: click commands, rich rendering, tables, shell completion
and terminal rules. The only package that imports click or rich; every command is
one call of :mod:`unfurl_lite.api`.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def main(argv: list[str] | None = None) -> Any:
    """The ``unfurl`` entry point: ``--version`` is answered at once, everything else
    goes to the click group in :mod:`unfurl_lite.cli.main`."""
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        from unfurl_lite.cli.version import version_text

        print(version_text())
        return 0
    import gc

    from unfurl_lite.cli.main import main as run

    # Parsing a large ensemble allocates hundreds of thousands of objects and almost no
    # reference cycles; at Python's default threshold (700) the collector rescans the
    # growing heap so often that a cold plan at N=2,000 spent two thirds of its parse in
    # it. The command's process is ours; a library caller's collector is left alone.
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 20, 100)
    try:
        return run(argv)
    finally:
        gc.set_threshold(*thresholds)
