"""The ``unfurl`` command: click commands, rich rendering, tables, shell completion
and terminal rules. The only package that imports click or rich; every command is
one call of :mod:`unfurl_lite.api`.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


#: Python calls a command's process may nest. Unfurl 1.2.0 evaluates a chain of 200
#: ``get_property`` links (each a property reading the next); each link is about 12 calls
#: here, so the interpreter's 1,000 stopped at about 80. The C stack stays far from the
#: main thread's 8 MB: the guard keeps YAML within 300 levels, CPython's parser refuses 200
#: nested parentheses, and a 450-link chain ran at twice this limit. A library caller's
#: interpreter is left as it is.
RECURSION_LIMIT = 3000
#: the collector's thresholds while a command runs (see main)
COLLECTOR_THRESHOLDS = (50_000, 20, 100)


def main(argv: list[str] | None = None) -> Any:
    """The ``unfurl`` entry point: ``--version`` is answered at once, ``plan [ENSEMBLE]``,
    ``validate [ENSEMBLE]`` and the everyday job command lines without click
    (:mod:`unfurl_lite.cli.quick`), everything else by the click group in
    :mod:`unfurl_lite.cli.main`."""
    if (sys.argv[1:] if argv is None else argv) == ["--version"]:
        from unfurl_lite.cli.version import version_text  # start-up: keeps cli.version off `plan`

        print(version_text())
        if argv is None:  # the command's process: nothing else to tear down

            sys.stdout.flush()
            os._exit(0)
        return 0
    if argv is None and sys.argv[1:] in (["--help"], ["-h"]):
        _help()
    import gc  # start-up: keeps gc (1 module) off `--version`

    if argv is None:  # the command's own process: dataclasses' and patterns' code built once
        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
        # its collector's thresholds (below) from its first import on: importing some 200
        # modules makes no garbage, yet at the default threshold the collector walked the
        # growing heap 17 times during a deploy's imports (2% of its instructions)
        gc.set_threshold(*COLLECTOR_THRESHOLDS)
        from unfurl_lite.load import modulecache  # start-up: keeps load.modulecache off `--version`

        modulecache.enable()  # first: the package's modules read from one file from now on
        from unfurl_lite.load import regexcache  # start-up: keeps load.regexcache off `--version`

        regexcache.enable()  # before dataclasses' own import, which compiles patterns
        from unfurl_lite.load import codecache  # start-up: keeps load.codecache off `--version`

        codecache.enable()
    args = sys.argv[1:] if argv is None else argv
    from unfurl_lite.cli import quick  # start-up: keeps cli.quick (13 modules) off `--version`

    if quick.answers(args):  # `unfurl plan [ENSEMBLE]`: what click would do, without click

        def run(argv: list[str] | None = None) -> Any:
            return quick.run(args)
    else:
        from unfurl_lite.cli.main import main as run  # start-up: keeps click off `--version`

    # Parsing a large ensemble allocates hundreds of thousands of objects and almost no
    # reference cycles; at Python's default threshold (700) the collector rescans the
    # growing heap so often that a cold plan at N=2,000 spent two thirds of its parse in
    # it. The command's process is ours; a library caller's collector is left alone.
    thresholds = gc.get_threshold()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    try:
        if argv is not None:  # called from Python: the caller's process goes on
            return run(argv)
        try:
            code = run(argv)
        except SystemExit as exc:
            code = exc.code
        _exit_now(code)
    finally:
        gc.set_threshold(*thresholds)


def _help() -> None:
    """The command's top-level help: the text click wrote last time when its sources are
    unchanged (:mod:`unfurl_lite.cli.helptext`), else click's, kept for next time."""

    from unfurl_lite.cli import helptext  # start-up: keeps cli.helptext (3 modules) off `--version`

    text = helptext.cached()
    if text is None:
        from unfurl_lite.cli.main import help_text  # start-up: keeps click off `--version`

        text = help_text()
        helptext.store(text)
    sys.stdout.write(text)
    sys.stdout.flush()
    os._exit(0)


def _exit_now(code: Any) -> None:
    """End the command's process without tearing its heap down object by object.

    At exit the interpreter collects and frees everything the command built (the parsed
    ensemble, the model, the plan, the records): a tenth of a second and more for a job of
    a thousand tasks, after all its work is done and its output written. The exit
    functions run and the streams are flushed first; with a thread that is not a daemon
    still running (whose end Python would wait for) the interpreter ends as usual."""

    if isinstance(code, int) or code is None:
        status = code or 0
    else:  # sys.exit("message"): the message, and 1
        print(code, file=sys.stderr)
        status = 1
    # start-up: keeps threading and atexit off `--version` (loaded by any job anyway)
    import atexit
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate()
           if t is not threading.main_thread()):
        sys.exit(status)

    atexit._run_exitfuncs()  # logging's shutdown, temporary directories' removal
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: as the interpreter would, go on
            if status == 0:
                status = 120
    os._exit(status)
