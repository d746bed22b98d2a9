"""YAML in and out: ruamel round-trip so comments and key order survive, atomic writes."""

from __future__ import annotations

import io
import itertools
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import InputError, PathError, Problem
from unfurl_lite.security.paths import read_regular_file

if TYPE_CHECKING:
    from ruamel.yaml import YAML

    from unfurl_lite.model.narrow import YAMLValue

MAX_FILE_BYTES = 20 * 1024 * 1024

#: ``UNFURL_LITE_FSYNC=off`` writes records without forcing them to disk: a killed process
#: still loses nothing (the kernel holds every write), a power cut may. For throwaway
#: environments, as PostgreSQL's ``fsync = off``: the test suite sets it.
FSYNC_SETTING = "UNFURL_LITE_FSYNC"


def syncing() -> bool:
    """Are writes forced to disk (anything but ``UNFURL_LITE_FSYNC=off``)?"""
    return os.environ.get(FSYNC_SETTING, "").lower() != "off"


def fsync(fd: int) -> None:
    """``os.fsync``, unless :func:`syncing` says writes are not forced to disk."""
    if syncing():
        os.fsync(fd)


def round_trip() -> YAML:
    from ruamel.yaml import YAML  # start-up: keeps ruamel (38 modules) off `plan`, `validate`

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 80  # as Unfurl writes, so records wrap where its records wrap
    yaml.indent(mapping=2, sequence=2, offset=0)
    return yaml


def parse(text: str, filename: str) -> Any:
    """Parse YAML text; syntax errors become an InputError naming file, line and column."""
    # start-up: keeps ruamel (38 modules) off `plan`, `validate`, `deploy` until parse() runs
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    from unfurl_lite.load import guard  # start-up: keeps load.guard (8 modules) off `redeploy`

    guard.check_text(text, filename)
    guard.check_aliases(text, filename)
    try:
        document = round_trip().load(text)
    except RecursionError:
        raise InputError(
            Problem(
                f"nested more than {guard.MAX_DEPTH} levels deep",
                file=filename,
                hint="flatten the document",
            )
        ) from None
    except MarkedYAMLError as exc:
        raise syntax_error(exc, filename) from None
    except YAMLError as exc:
        raise InputError(Problem(f"YAML error: {exc}", file=filename)) from None
    except (ValueError, IndexError, OverflowError) as exc:  # ruamel failing on e.g. "-_"
        raise InputError(Problem(
            f"a value could not be read: {exc}", file=filename,
            hint="quote values meant as strings (a lone sign with underscores reads as a number)",
        )) from None
    guard.check(document, filename)
    return document


def syntax_error(exc: Any, filename: str) -> InputError:
    """A parser's MarkedYAMLError as an InputError at its line and column."""
    # start-up: keeps ruamel (38 modules) off `plan`, `validate`, `deploy` until syntax_error() runs
    from ruamel.yaml.constructor import DuplicateKeyError

    mark = exc.problem_mark or exc.context_mark
    duplicate = isinstance(exc, DuplicateKeyError)
    return InputError(Problem(
        f"{'duplicate key' if duplicate else 'YAML syntax error'}: {exc.problem or exc.context}",
        file=filename, line=mark.line + 1 if mark else None,
        column=mark.column + 1 if mark else None,
        hint="each key may appear only once in a mapping: rename or remove one" if duplicate
        else "fix the YAML syntax at that line"))


def load_file(path: Path) -> Any:
    return parse(read_text(path), str(path))


def read_text(path: Path) -> str:
    """The file's text, refusing what cannot be an ensemble before any parser sees it."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(
                Problem(
                    f"file is too large ({size} bytes, at most {MAX_FILE_BYTES})",
                    file=str(path),
                )
            )
        data = read_regular_file(path, MAX_FILE_BYTES, "the file")  # never a FIFO or device
    except FileNotFoundError:
        raise InputError(Problem("file not found", file=str(path))) from None
    except IsADirectoryError:
        raise InputError(Problem("is a directory, expected a YAML file", file=str(path))) from None
    except PathError as exc:
        if not path.exists():
            raise InputError(Problem("file not found", file=str(path))) from None
        if path.is_dir():
            raise InputError(Problem("is a directory, expected a YAML file",
                                     file=str(path))) from None
        raise InputError(Problem(exc.message.replace(f"the file: {str(path)!r} ", ""),
                                 file=str(path), hint=exc.hint)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(Problem(f"not UTF-8 text (byte {exc.start})", file=str(path))) from None
    if "\x00" in text:
        raise InputError(Problem("binary data (NUL byte), not YAML", file=str(path)))
    return text


def parse_plain(text: str) -> Any:
    """Plain dicts and lists through ruamel's C parser: several times faster than the round
    trip, with the same YAML 1.2 rules and duplicate-key check, but no comments or line
    numbers. Raises ruamel's YAMLError; callers that need a located error re-parse with
    :func:`parse`. The C parser refuses a plain scalar holding ':' in a flow mapping
    (``{eval: ::a::b}``), which ruamel's round trip (and Unfurl) read: that is read so."""
    # start-up: keeps ruamel (38 modules) off `plan`, `validate`, `deploy` until parse_plain() runs
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    from unfurl_lite.load import plainyaml  # start-up: keeps load.plainyaml off `redeploy`

    try:
        try:
            return plainyaml.load(text)
        except (plainyaml.NeedsFullLoader, ImportError):
            pass
        return YAML(typ="safe", pure=False).load(text)
    except YAMLError:
        return to_plain(YAML(typ="rt").load(text))


def dump(data: Any, memo: dict[Any, Any] | None = None) -> str:
    """``memo``: see :func:`emit.dump` (documents that share their entries)."""
    from unfurl_lite.load import emit  # start-up: keeps load.emit (3 modules) off `plan`

    fast = emit.dump(data, memo)
    if fast is not None:
        return fast
    stream = io.StringIO()
    round_trip().dump(data, stream)
    return stream.getvalue()


_TEMP_COUNTER = itertools.count()


def temp_file(directory: Path, prefix: str, mode: int = 0o600) -> tuple[int, str]:
    """A new file in ``directory``, private (0600) unless ``mode`` says otherwise (the umask
    applies), opened for writing: like tempfile.mkstemp, without importing tempfile (and
    shutil, random) on every command."""
    while True:
        unique = f"{os.getpid()}-{threading.get_ident()}-{next(_TEMP_COUNTER)}"
        name = directory / f"{prefix}{unique}.tmp"
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), str(name)
        except FileExistsError:  # left by a crashed process that had our pid
            continue


_TEMP_NAME = re.compile(r"\..+\.(\d+)-\d+-\d+\.tmp")


def temp_file_owner(name: str) -> int | None:
    """The pid of the process that made a :func:`temp_file` of this name, or None when
    the name is not one of ours."""
    match = _TEMP_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def _named(exc: OSError, path: Path) -> OSError:
    """A write error names the file it was for (``write()`` errors name none)."""
    if exc.filename is None or str(exc.filename).endswith(".tmp"):
        exc.filename = str(path)
    return exc


def atomic_write(path: Path, text: str, *, private: bool = False,
                 errors: str = "strict") -> None:
    """Write so that a crash, a full disk or a read-only directory at any instant leaves
    either the old or the new file (and no temp file). The file keeps the mode it had, or
    gets the one a plain write gives (0666 less the umask); ``private`` makes it 0600.
    ``errors`` is the encoder's: JSON writers pass ``backslashreplace``, which turns a
    lone surrogate into its JSON escape."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = None if private else _mode_of(path)
        fd, tmp = temp_file(path.parent, f".{path.name}.", 0o600 if private else 0o666)
    except OSError as exc:
        raise _named(exc, path) from None
    try:
        if kept is not None:
            os.fchmod(fd, kept)
        with os.fdopen(fd, "w", encoding="utf-8", errors=errors) as handle:
            handle.write(text)
            handle.flush()
            fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:  # re-raised: the temporary file goes, even on Ctrl-C
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _named(exc, path) from None
        raise
    _fsync_dir(path.parent)


def _mode_of(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return None


def atomic_append(path: Path, text: str) -> None:
    """Append whole lines with one write and fsync, so a reader never sees half a line
    (a full disk may still tear the last one: readers skip it, appends close it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            fsync(handle.fileno())
    except OSError as exc:
        raise _named(exc, path) from None


def append_lines(path: Path, text: str) -> None:
    """Append whole lines, as :func:`atomic_append`, always starting on a fresh line: a
    torn last line (a crash or a full disk mid-write) is first closed with a cell that
    marks it damaged, so readers skip it instead of reading the next record into it."""
    torn = False
    try:
        with open(path, "rb") as handle:
            if handle.seek(0, os.SEEK_END) > 0:
                handle.seek(-1, os.SEEK_END)
                torn = handle.read(1) != b"\n"
    except FileNotFoundError:
        pass
    atomic_append(path, ("\tDAMAGED\n" if torn else "") + text)


def _fsync_dir(directory: Path) -> None:
    if not syncing():
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def to_plain(data: YAMLValue) -> Any:
    """Deep-copy ruamel containers into plain dicts and lists (for JSON, hashing, jinja)."""
    if isinstance(data, dict):
        return {str(k): to_plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [to_plain(v) for v in data]
    if isinstance(data, str):
        return str(data)
    return data
