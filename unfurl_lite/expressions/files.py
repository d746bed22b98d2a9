"""Unfurl's file functions: ``file`` (read, with ``select: contents|path|encoding``),
``tempfile``, ``abspath`` and ``get_dir`` (its named folders), and ``template: {path:}``.

Every path is confined to the project (docs/security.md): a path outside it, through
``..``, an absolute path or a symlink, is refused unless ``--allow-outside-paths``, and a
credential store is never read. Nothing here writes into the project except the folders
``get_dir``/``abspath`` are asked to create (``mkdir``), which Unfurl creates too.
"""

from __future__ import annotations

import atexit
import codecs
import io
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from unfurl_lite.errors import ExpressionError, PathError
from unfurl_lite.expressions import lazy
from unfurl_lite.expressions.walk import External
from unfurl_lite.security.paths import confine, read_regular_file

if TYPE_CHECKING:
    from unfurl_lite.expressions.expr import EvalContext

#: get_dir's named folders of the current instance (Unfurl's Folders), under the ensemble
INSTANCE_FOLDERS = ("artifacts", "secrets", "local")
JOB_FOLDERS = ("tasks", "operation", "workflow")
NAMED_FOLDERS = frozenset({".", "src", "project", "tmp", "spec.src", "spec.home",
                           "spec.local", *INSTANCE_FOLDERS, *JOB_FOLDERS})
#: encodings Unfurl's `file` names that are not a text codec: refused by name
UNSUPPORTED_ENCODINGS = frozenset({"binary", "vault", "json", "yaml", "env"})


def project_dir(ctx: EvalContext) -> Path:
    if ctx.project_root is None:
        raise ExpressionError("no project directory here to resolve a path in")
    return Path(ctx.project_root)


def confined(path: str, base: Path, ctx: EvalContext, what: str) -> Path:
    project = project_dir(ctx)
    full = os.path.join(base, path)
    given = path if os.path.isabs(path) else os.path.relpath(full, project)
    try:
        return confine(given, project, ctx.allow_outside_paths, what=what)
    except PathError as exc:
        raise ExpressionError(exc.message, hint=exc.hint) from None


def instance_name(ctx: EvalContext) -> str:
    return lazy.instance_name(ctx.self_view) or "root"


def template_name(ctx: EvalContext) -> str:
    return lazy.template_name(ctx.self_view) or instance_name(ctx)


def folder(ctx: EvalContext, name: Any) -> Path:
    """get_dir's folder ``name`` for the current instance (Unfurl's ``_get_base_dir``)."""
    base = project_dir(ctx)
    name = "." if name in (None, "") else str(name)
    if name in (".", "src", "project", "spec.src"):
        return base
    if name in INSTANCE_FOLDERS:
        return base / name / instance_name(ctx)
    if name == "tasks":
        return base / "planned" / "tasks" / instance_name(ctx)
    if name in ("operation", "workflow"):
        return base / "planned" / name / instance_name(ctx)
    if name == "spec.home":
        return base / "spec" / template_name(ctx)
    if name == "spec.local":
        return base / "spec" / template_name(ctx) / "local"
    if name == "tmp":
        return _temp_root() / instance_name(ctx)
    raise ExpressionError(
        f'named directory or repository "{name}" not found',
        hint="get_dir knows: " + ", ".join(sorted(NAMED_FOLDERS)))


def absolute_path(ctx: EvalContext, path: Any, relative_to: Any = None, mkdir: Any = False) -> str:
    """``abspath``: the path in the folder ``relative_to`` names (the ensemble's folder by
    default), as text: nothing is read there. ``mkdir`` creates its folder, only inside
    the project (or the job's temporary folder)."""
    text = "" if path is None else str(path)
    base = folder(ctx, relative_to)
    full = Path(os.path.normpath(base / text))
    if mkdir:
        directory = full if not text else full.parent
        if not directory.is_relative_to(_temp_root()):
            confined(os.path.relpath(directory, base), base, ctx, "abspath: mkdir")
        directory.mkdir(parents=True, exist_ok=True)
    return str(full)


class ProjectFile(External):
    """``{eval: {file: NAME}}``: NAME itself, and with ``select`` its ``path``,
    ``contents``, ``encoding`` or ``artifact_keys``."""

    def __init__(self, ctx: EvalContext, name: str, directory: str | None, encoding: str | None):
        self.ctx = ctx
        self.name = name
        self.directory = directory
        self.encoding = encoding

    def get(self) -> str:
        return self.name

    @property
    def path(self) -> Path:
        """The file, to read: confined to the project."""
        base = project_dir(self.ctx)
        if self.directory:
            base = confined(self.directory, base, self.ctx, "file: dir")
        return confined(self.name, base, self.ctx, "file")

    def resolve_key(self, key: Any) -> Any:
        if key == "path":  # the path as text: nothing is read
            base = project_dir(self.ctx) / (self.directory or "")
            return os.path.normpath(base / self.name)
        if key == "encoding":
            return self.encoding or "utf-8"
        if key == "contents":
            return read_text(self.ctx, self.path, self.name, self.encoding or "utf-8")
        if key == "artifact_keys":
            return {"file": self.name, "repository": "self"}
        raise KeyError(key)

    def __str__(self) -> str:
        return self.name


def read_text(ctx: EvalContext, path: Path, name: str, encoding: str = "utf-8") -> str:
    """A project file's text (never a credential store, bounded in size)."""
    if ctx.on_file_read is not None:
        ctx.on_file_read()
    # start-up: keeps expressions.limits (13 modules) off files's import until read_text() runs
    from unfurl_lite.expressions.limits import MAX_TEMPLATE_RESULT
    from unfurl_lite.expressions.sandbox import CREDENTIAL_STORES

    store = next((part for part in path.parts if part in CREDENTIAL_STORES), None)
    if store is not None:
        raise ExpressionError(
            f"refusing to read {name!r}: it is in a credential store ({store})",
            hint="git's own files, SSH keys and credential files are never readable from "
            "an expression; pass a secret with {eval: {get_env: NAME}} instead")
    try:  # (a FIFO or device is refused from its stat: reading one would hang the job)
        data = read_regular_file(path, MAX_TEMPLATE_RESULT, f"file({name!r})")
    except PathError as exc:
        raise ExpressionError(exc.message, hint=exc.hint) from None
    return codecs.decode(data, encoding, errors="replace")


def check_encoding(encoding: Any) -> str | None:
    if encoding is None:
        return None
    text = str(encoding)
    if text in UNSUPPORTED_ENCODINGS:
        raise ExpressionError(f"file: encoding {text!r} is not supported",
                              hint="read text with a text encoding (utf-8, latin-1...)")
    try:
        codecs.lookup(text)
    except LookupError:
        raise ExpressionError(f"file: unknown encoding {text!r}") from None
    return text


# --- tempfile ---------------------------------------------------------------------------

_TEMP: list[Path] = []


def _temp_root() -> Path:
    """One private folder per process, removed when it exits (Unfurl's temporary files
    live as long as the ``unfurl`` process)."""
    if not _TEMP:
        root = Path(tempfile.mkdtemp(prefix="unfurl-lite-"))
        _TEMP.append(root)
        atexit.register(shutil.rmtree, root, True)
    return _TEMP[0]


class TempFilePath(str):
    """A temporary file's path; digested as its contents (as Unfurl digests it), so a
    new file holding the same text is no change."""

    contents = ""

    def digest_form(self) -> str:
        return self.contents


def temp_file(contents: Any, suffix: Any = None, encoding: Any = None) -> str:
    """``{eval: {tempfile: CONTENTS, suffix:, encoding:}}``: the path of a new private
    file holding the contents, written as Unfurl writes it: YAML or JSON by ``encoding``
    (else by the suffix), text as is, any other value as JSON, null as an empty file."""
    suffix_text = str(suffix or "")
    kind = None if encoding is None else str(encoding)
    if kind in ("vault", "env", "binary"):
        raise ExpressionError(f"tempfile: encoding {kind!r} is not supported",
                              hint="use yaml, json or a text encoding")
    if kind == "yaml" or (kind is None and suffix_text.endswith((".yml", ".yaml"))):
        data = _yaml_text(contents)
    elif kind == "json" or (kind is None and suffix_text.endswith(".json")):
        data = json.dumps(contents, indent=2)
    elif isinstance(contents, str):
        data = contents
    elif contents is None:
        data = ""
    else:
        data = json.dumps(contents, indent=2, sort_keys=True)
    text_encoding = "utf-8" if kind in (None, "yaml", "json") else check_encoding(kind)
    handle, name = tempfile.mkstemp(suffix=suffix_text, dir=_temp_root())
    with os.fdopen(handle, "w", encoding=text_encoding) as out:
        out.write(data)
    path = TempFilePath(name)
    path.contents = data
    return path


def _yaml_text(value: Any) -> str:

    from ruamel.yaml import YAML  # start-up: keeps ruamel (38 modules) off files's import

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    out = io.StringIO()
    yaml.dump(value, out)
    return out.getvalue()
