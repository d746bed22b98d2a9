"""``unfurl --help`` answered from the text click wrote the last time, without click.

The top-level help is the same on every run until the command's sources change, yet
printing it imports click and the workflows' declarations (more than the interpreter's
own start). The first ``unfurl --help`` at a width stores click's text beside the
package's bytecode (:mod:`unfurl_lite.load.pycache`) under a fingerprint of the sources
it is made from (their sizes and modification times); later ones print it at once. A
changed source, another width, or a file not to be trusted: click writes it again.
Only ``os`` is imported on the fast road.
"""

from __future__ import annotations

import os

from unfurl_lite.load import pycache

#: the sources the help is made from: the command table, the options, the declarations
SOURCES = ("cli", os.path.join("model", "builtin_workflows.py"), "__init__.py")
MAX_BYTES = 64 * 1024
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def width() -> int:
    """The width click formats help at (``shutil.get_terminal_size`` as click asks it,
    without importing shutil): the terminal's, at most 80, less 2, at least 50."""
    text = os.environ.get("COLUMNS", "")
    columns = int(text) if text.isdigit() else 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(1).columns
        except (OSError, ValueError):
            columns = 80
    return max(min(columns or 80, 80) - 2, 50)


def fingerprint(package: str = PACKAGE) -> str:
    """Sizes and modification times of the sources the help is made from."""
    parts = []
    for source in SOURCES:
        path = os.path.join(package, source)
        names = [path]
        if os.path.isdir(path):
            names = sorted(os.path.join(folder, name) for folder, _, files in os.walk(path)
                           for name in files if name.endswith(".py"))
        for name in names:
            try:
                info = os.stat(name)
            except OSError:
                continue
            parts.append(f"{os.path.relpath(name, package)}:{info.st_size}:{info.st_mtime_ns}")
    return "|".join(parts)


def _name() -> str:
    return f"help-{width()}.txt"


def cached(directory: str = pycache.PYCACHE, package: str = PACKAGE) -> str | None:
    """The stored help at this width, if its sources are unchanged since."""
    payload = pycache.read(os.path.join(directory, _name()), MAX_BYTES)
    if payload is None:
        return None
    try:
        key, _, text = payload.decode("utf-8").partition("\n")
    except UnicodeDecodeError:
        return None
    return text if text and key == fingerprint(package) else None


def store(text: str, directory: str = pycache.PYCACHE, package: str = PACKAGE) -> None:
    """Keep click's help text (as printed) for the next ``unfurl --help`` at this width."""
    pycache.write(directory, _name(), f"{fingerprint(package)}\n{text}".encode())
