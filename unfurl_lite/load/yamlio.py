"""YAML in and out: ruamel round-trip so comments and key order survive, atomic writes."""

from __future__ import annotations

import io
import itertools
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

from unfurl_lite.errors import InputError, PathError, Problem
from unfurl_lite.security.paths import read_regular_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

    from ruamel.yaml import YAML

    from unfurl_lite.load import emit
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


def dump(data: Any, memo: emit.Shared | None = None) -> str:
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


def named_error(exc: OSError, path: Path) -> OSError:
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
    lone surrogate into its JSON escape. (Several files at once: yamlio.Writes.)"""
    fd, tmp = write_temp(path, text, private=private, errors=errors)
    try:
        try:
            fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:  # re-raised: the temporary file goes, even on Ctrl-C
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise named_error(exc, path) from None
        raise
    _fsync_dir(path.parent)


def write_temp(path: Path, text: str | list[bytes | memoryview], *, private: bool = False,
               errors: str = "strict") -> tuple[int, str]:
    """:func:`atomic_write`'s temporary file beside ``path``, written whole and still open
    (not forced to disk yet), with the mode ``path`` will have; ``text`` may be its
    encoded pieces (a large file written without joining them first)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = None if private else _mode_of(path)
        fd, tmp = temp_file(path.parent, f".{path.name}.", 0o600 if private else 0o666)
    except OSError as exc:
        raise named_error(exc, path) from None
    try:
        if kept is not None:
            os.fchmod(fd, kept)
        for piece in [text.encode("utf-8", errors)] if isinstance(text, str) else text:
            _write_all(fd, piece)
    except BaseException as exc:
        os.close(fd)
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise named_error(exc, path) from None
        raise
    return fd, tmp


def _write_all(fd: int, data: bytes | memoryview) -> None:
    """A regular file takes a write whole; a short one is finished."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _mode_of(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return None


def atomic_append(path: Path, text: str) -> None:
    """Append whole lines with one write and fsync, so a reader never sees half a line
    (a full disk may still tear the last one: readers skip it, appends close it)."""
    _force_and_close(_append(path, text), path)


def _force_and_close(fd: int, path: Path) -> None:
    """An append's descriptor forced to disk and closed; a failure names the file."""
    try:
        fsync(fd)
    except OSError as exc:
        raise named_error(exc, path) from None
    finally:
        os.close(fd)


def append_lines(path: Path, text: str) -> None:
    """Append whole lines, as :func:`atomic_append`, always starting on a fresh line: a
    torn last line (a crash or a full disk mid-write) is first closed with a cell that
    marks it damaged, so readers skip it instead of reading the next record into it."""
    _force_and_close(append_unsynced(path, text), path)


def append_unsynced(path: Path, text: str) -> int:
    """:func:`append_lines` but for the fsync: the file's descriptor, still open, to force
    it to disk with others."""
    torn = False
    try:
        with open(path, "rb") as handle:
            if handle.seek(0, os.SEEK_END) > 0:
                handle.seek(-1, os.SEEK_END)
                torn = handle.read(1) != b"\n"
    except FileNotFoundError:
        pass
    return _append(path, ("\tDAMAGED\n" if torn else "") + text)


def _append(path: Path, text: str) -> int:
    """``text`` appended with one write; the descriptor, open."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as exc:
        raise named_error(exc, path) from None
    try:
        _write_all(fd, text.encode("utf-8"))
    except BaseException as exc:
        os.close(fd)
        if isinstance(exc, OSError):
            raise named_error(exc, path) from None
        raise
    return fd


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


# ------------------------------------------------- several files as one durable step
#
# atomic_write makes one file durable the only portable way (its temporary file forced to
# disk, renamed over the old one, its directory forced). A job writing its records so, one
# after the other, waited for the disk nine times after its last task (the job and changes
# files and their directory, jobs.tsv, ensemble.yaml and its directory, the journal and its
# directory): 20-40 ms of a 0.4 s deploy at N=200 here. A Writes keeps the guarantees and
# waits less: each temporary file forced from the moment it is written, while the job goes
# on (concurrent fsyncs share the file system's journal commit), the renames and appends in
# the order asked once all are, then what they changed (directories, appended files)
# forced at once; and again after a barrier.


class _Step:
    """One write of a :class:`Writes`: a replacement (its temporary file written, open
    until it is forced to disk) or lines to append, in their turn."""

    __slots__ = ("after", "barrier", "fd", "path", "shown", "sync", "text", "tmp")

    def __init__(self, path: Path, tmp: str | None = None, fd: int | None = None,
                 text: str | None = None, after: Callable[[], None] | None = None) -> None:
        self.path = path
        self.tmp = tmp
        self.fd = fd
        self.text = text
        self.after = after  # run once the step is seen
        self.barrier = False  # a stage ends here
        self.shown = False  # renamed into place, or appended
        self.sync: _Sync | None = None  # forcing the temporary file to disk


def _fsync_named(fd: int, path: Path) -> OSError | None:
    """``os.fsync``'s error, naming the file, or None."""
    try:
        os.fsync(fd)
    except OSError as exc:
        return named_error(exc, path)
    return None


def forced_meanwhile(fd: int, path: Path) -> Callable[[], None]:
    """``fsync(fd)`` from now on in a thread of its own (the call lets go of the GIL), while
    the caller goes on; the returned call waits for it and raises its error, naming
    ``path``. Nothing to wait for when writes are not forced (:func:`syncing`)."""
    if not syncing():
        return lambda: None
    return _Sync(fd, path).wait


class _Sync(threading.Thread):
    """A temporary file forced to disk from the moment it is written, while the job's
    thread goes on (the next record's text, the status): ``fsync`` releases the GIL."""

    def __init__(self, fd: int, path: Path) -> None:
        super().__init__(name="unfurl-fsync", daemon=True)
        self.fd = fd
        self.path = path
        self.error: OSError | None = None
        self.start()

    def run(self) -> None:
        self.error = _fsync_named(self.fd, self.path)

    def wait(self) -> None:
        self.join()
        if self.error is not None:
            raise self.error


class Writes:
    """Replacements and appends that reach the disk together, seen in the order asked:
    a process killed at any instant leaves each file old or new, made visible in that
    order, as one :func:`atomic_write` after the other would; after a power cut no file is
    seen whose content did not reach the disk, nor anything after a :meth:`barrier` before
    everything ahead of it did (the journal's ``recorded`` and the records it vouches for).
    A failure makes nothing after it visible and leaves no temporary file.

    ``with Writes() as writes:`` commits them as the block ends and abandons them if it
    raises. ``Writes(settle_later=True)``: the commit makes the last stage visible and
    returns; what makes it durable (its directories forced, the ``after`` callbacks) waits
    for :meth:`settle`, so a reader of the files (git) starts meanwhile."""

    def __init__(self, settle_later: bool = False) -> None:
        self.steps: list[_Step] = []
        self.settle_later = settle_later
        self._unsettled: list[_Step] | None = None  # the last stage, once visible

    def replace(self, path: Path, text: str | list[bytes | memoryview], *,
                private: bool = False,
                errors: str = "strict", after: Callable[[], None] | None = None) -> None:
        """``path``'s new text, as :func:`atomic_write` writes it (its temporary file
        now, forced to disk from now on; the rename at the commit); ``after`` runs once it
        is renamed."""
        fd, tmp = write_temp(path, text, private=private, errors=errors)
        step = _Step(path, tmp=tmp, fd=fd, after=after)
        self.steps.append(step)
        if syncing():
            step.sync = _Sync(fd, path)

    def append_lines(self, path: Path, text: str) -> None:
        """Whole lines appended as :func:`append_lines` appends them, in their
        turn at the commit."""
        self.steps.append(_Step(path, text=text))

    def barrier(self) -> None:
        """What is asked after this is seen only once everything before is on the disk."""
        if self.steps:
            self.steps[-1].barrier = True

    def commit(self) -> None:
        steps, self.steps = self.steps, []
        try:
            for step in steps:
                if step.sync is not None:
                    step.sync.wait()
            for step in steps:
                if step.fd is not None:
                    os.close(step.fd)
                    step.fd = None
            stage: list[_Step] = []
            for index, step in enumerate(steps):
                stage.append(step)
                if index == len(steps) - 1 and self.settle_later:
                    _show(stage, settle=False)
                    self._unsettled = stage
                elif step.barrier or index == len(steps) - 1:
                    _show(stage)
                    stage = []
        finally:
            unsettled = self._unsettled or []
            _discard([step for step in steps if step not in unsettled])

    def settle(self) -> None:
        """With ``settle_later``: force the last stage to disk and run its ``after``
        callbacks (once; nothing to do when nothing was committed)."""
        stage, self._unsettled = self._unsettled, None
        if stage is not None:
            _settle(stage)

    def abandon(self) -> None:
        steps, self.steps = self.steps, []
        _discard(steps)

    def __enter__(self) -> Writes:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self.commit()
        else:
            self.abandon()


def _show(stage: list[_Step], settle: bool = True) -> None:
    """Make the stage's steps visible in order, then (``settle``) force what they changed
    to disk (:func:`_settle`)."""
    for step in stage:
        if step.tmp is not None:
            try:
                os.replace(step.tmp, step.path)
            except OSError as exc:
                raise named_error(exc, step.path) from None
            step.tmp = None
        elif step.text is not None:
            step.fd = append_unsynced(step.path, step.text)
            step.text = None
        else:
            continue
        step.shown = True
    if settle:
        _settle(stage)


def _settle(stage: list[_Step]) -> None:
    """What a stage made visible forced to disk (the directories of its replacements,
    its appended files), then its ``after`` callbacks, in order."""
    opened: list[tuple[int, Path]] = []
    directories: dict[Path, None] = {}
    try:
        for step in stage:
            if step.fd is not None:  # an append's descriptor (_show)
                opened.append((step.fd, step.path))
                step.fd = None
            elif step.shown:
                directories[step.path.parent] = None
        if syncing():
            for directory in directories:
                try:
                    opened.append((os.open(directory, os.O_RDONLY), directory))
                except OSError:  # as atomic_write: a directory that cannot be opened
                    continue
        _force(opened)
    finally:
        for fd, _ in opened:
            os.close(fd)
    for step in stage:
        if step.after is not None and step.shown:
            step.after()


def _force(files: list[tuple[int, Path]]) -> None:
    """``fsync`` every descriptor, concurrently (a :class:`_Sync` each beyond the first:
    the system call releases the GIL); the first error is raised, naming its file."""
    if not files or not syncing():
        return
    others = [_Sync(fd, path) for fd, path in files[1:]]
    error = _fsync_named(*files[0])
    for sync in others:
        sync.join()
    error = error or next((sync.error for sync in others if sync.error), None)
    if error is not None:
        raise error


def _discard(steps: list[_Step]) -> None:
    """Temporary files not renamed (a failure, or abandoned) go; descriptors close."""
    for step in steps:
        if step.sync is not None:
            step.sync.join()  # its descriptor is closed once it is done with it
        if step.fd is not None:
            os.close(step.fd)
            step.fd = None
        if step.tmp is not None:
            Path(step.tmp).unlink(missing_ok=True)
            step.tmp = None


def to_plain(data: YAMLValue) -> Any:
    """Deep-copy ruamel containers into plain dicts and lists (for JSON, hashing, jinja)."""
    if isinstance(data, dict):
        return {str(k): to_plain(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [to_plain(v) for v in data]
    if isinstance(data, str):
        return str(data)
    return data
