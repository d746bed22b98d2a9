"""The project use cases that run no job: init, validate, plan, export."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from unfurl_lite.errors import InputError, UnfurlLiteError
from unfurl_lite.expressions.limits import budgeted
from unfurl_lite.load.loader import load_ensemble
from unfurl_lite.model.ensemble import LOCK_NAME, Ensemble
from unfurl_lite.model.narrow import is_map
from unfurl_lite.plan.tasks import Plan
from unfurl_lite.run.options import PlanOptions
from unfurl_lite.security.paths import confine_records
from unfurl_lite.security.taint import REDACTED, secrets_in

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXAMPLE_ENSEMBLE = """\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      node_templates:
        # a database the app needs; each operation is a shell command
        db:
          type: tosca.nodes.Root
          interfaces:
            Standard:
              operations:
                create: echo "creating {{ SELF.name }}"
                delete: echo "deleting {{ SELF.name }}"
        app:
          type: tosca.nodes.Root
          requirements:
            - dependency: db
          interfaces:
            Standard:
              operations:
                configure:
                  implementation: {className: Shell}
                  inputs:
                    command: echo "configuring {{ SELF.name }}"
                delete: echo "deleting {{ SELF.name }}"
"""

#: What every project's .gitignore holds (the lock file of a running job among them).
GITIGNORE_LINES = (
    "jobs/*.log", "tosca_repositories", LOCK_NAME, ".unfurl-lite.queue-*")



@dataclass
class Created:
    """What ``init`` made: the ensemble, the repository it is in, and whether it is committed."""

    ensemble: Path
    repository: Path
    new_repository: bool
    problem: str | None  # why it is not committed, if it is not
    source: str | None

    def as_json(self) -> dict[str, Any]:
        return {"ensemble": str(self.ensemble), "repository": str(self.repository),
                "newRepository": self.new_repository, "committed": self.problem is None,
                "problem": self.problem, "from": self.source}


def init(directory: str | Path = ".", source: str | None = None) -> Created:
    """Create ``directory`` with an example ensemble (or a bundled example, or a copy of a
    project directory: ``source``), committed to git.

    Inside an existing git repository the project is added to that repository (unless the
    repository ignores ``directory``); elsewhere ``directory`` becomes a new one.
    """

    # start-up: keeps load.bundled, load.gitrepo (10 modules) off `plan` until init() runs
    from unfurl_lite.load import bundled
    from unfurl_lite.load.gitrepo import find_repo, identity_problem, init_repo, is_ignored

    root = Path(directory)
    ensemble = root / "ensemble.yaml"
    if ensemble.exists():
        raise UnfurlLiteError(f"{ensemble} already exists", hint="choose an empty directory")
    origin = bundled.resolve_source(source) if source else None
    if source and origin is None:
        # start-up: keeps load.problems (7 modules) off `validate`, `export` until init() runs
        from unfurl_lite.load.problems import did_you_mean

        names = ", ".join(bundled.example_names())
        close = did_you_mean(source, bundled.example_names())
        raise UnfurlLiteError(
            f"--from {source}: neither a bundled example nor a directory with an ensemble.yaml",
            hint=(f"{close} " if close else "")
            + f"bundled examples: {names} (unfurl init --list-examples)",
        )
    if origin is not None:
        _refuse_links_out(origin)
    existing = find_repo(_existing_ancestor(root))
    use_existing = existing is not None and (
        existing.root == root.resolve() or not is_ignored(existing, root)
    )
    problem = identity_problem(existing.root if existing and use_existing else Path("/"))
    if problem is not None:
        raise problem
    root.mkdir(parents=True, exist_ok=True)
    repo = existing if existing is not None and use_existing else init_repo(root)
    written: list[Path] = []
    if origin is not None:
        import shutil  # start-up: keeps shutil (zlib, bz2, lzma) off `plan` and a job

        skip = shutil.ignore_patterns(".git", "__pycache__", "*.pyc")
        shutil.copytree(origin, root, symlinks=True, dirs_exist_ok=True, ignore=skip)
        written += [root / p for p in _copied_files(origin)]
    else:
        ensemble.write_text(EXAMPLE_ENSEMBLE)
        written.append(ensemble)
    gitignore = root / ".gitignore"
    if _ensure_ignored(gitignore) and gitignore not in written:
        written.append(gitignore)
    not_committed = None
    try:
        repo.commit(written, "Create ensemble")
    except UnfurlLiteError as exc:
        not_committed = exc.message
    return Created(ensemble, repo.root, not use_existing, not_committed, source)


def _ensure_ignored(gitignore: Path) -> bool:
    """Add the lines a project needs to its .gitignore (a copied one too); True if changed."""
    text = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in GITIGNORE_LINES if line not in present]
    if not missing:
        return False
    if text and not text.endswith("\n"):
        text += "\n"
    gitignore.write_text(text + "".join(f"{line}\n" for line in missing), encoding="utf-8")
    return True


def _existing_ancestor(path: Path) -> Path:
    path = path.resolve()
    while not path.exists():
        path = path.parent
    return path


def _copied_files(origin: Path) -> list[Path]:
    """The files and symlinks ``init --from`` copies, relative to ``origin`` (links are not
    followed: they are copied, and committed, as links)."""
    found: list[Path] = []
    for directory, dirs, files in os.walk(origin):
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__")]
        here = Path(directory)
        links = [d for d in dirs if (here / d).is_symlink()]
        dirs[:] = [d for d in dirs if d not in links]
        found += [(here / name).relative_to(origin) for name in files + links
                  if not name.endswith(".pyc")]
    return found


def _refuse_links_out(source: Path) -> None:
    """Symlinks are copied as symlinks; one that leads outside the source directory would
    put (or point the new repository at) files that are not the project's, so it is
    refused before anything is copied."""

    base = source.resolve()
    for directory, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in dirs + files:
            path = Path(directory) / name
            if not path.is_symlink():
                continue
            target = path.resolve()
            if not target.is_relative_to(base):
                raise UnfurlLiteError(
                    f"{path} is a symlink to {os.readlink(path)}, outside {source}: "
                    "nothing was copied",
                    hint="replace the link with the file it points to, or remove it",
                )



def examples() -> list[tuple[str, str]]:
    """The bundled examples ``init`` can start from: (name, one-line description)."""
    from unfurl_lite.load import bundled  # start-up: keeps load.bundled (1 module) off `plan`

    return [(name, bundled.describe(name)) for name in bundled.example_names()]


def validate(ensemble: str | Path | None = None) -> Ensemble:
    """The ensemble, validated: syntax, schema and references, then the names its
    templates read (every problem in one :class:`~unfurl_lite.errors.InputError`)."""
    # start-up: keeps load.name_checks (7 modules) off `plan`, `export` until validate() runs
    from unfurl_lite.load import name_checks

    loaded = load_ensemble(ensemble)
    # where the records would go, as a job will find it (a directory, a symlink into
    # .git): the file system's to say, so not cached with the text's verdict
    confine_records(loaded.project_root, loaded.jobs_log, allow_outside=True)
    found = name_checks.find(loaded)
    if found:
        raise InputError(name_checks.problems(loaded, found),
                         summary=f"{loaded.path.name} is not a valid ensemble")
    return loaded


def make_plan(ensemble: Ensemble, workflow: str, options: PlanOptions | None = None,
              custom: bool = False) -> Plan:
    """The tasks ``workflow`` would run, in order; runs and writes nothing. ``custom``: the
    name must be one of the topology's ``workflows:`` (a built-in one, or a misspelling, is
    refused with the names that are)."""
    if custom:
        # start-up: keeps plan.tosca (13 modules) off `validate`, `export` until make_plan() runs
        from unfurl_lite.plan import tosca as tosca_workflows

        tosca_workflows.require(ensemble.spec, workflow)
    from unfurl_lite.plan.registry import build  # start-up: keeps plan.registry off `validate`

    return build(ensemble, workflow, (options or PlanOptions()).for_workflow(workflow))


@budgeted  # its templates render within one budget
def plan(ensemble: str | Path | Ensemble | None, workflow: str = "deploy",
         options: PlanOptions | None = None, custom: bool = False) -> Plan:
    """What ``workflow`` would run on the ensemble (loaded if given as a path), in order,
    with the reason for each; runs and writes nothing. ``custom``: the name must be one of
    the topology's ``workflows:`` (a built-in one, or a misspelling, is refused with the
    names that are)."""
    loaded = ensemble if isinstance(ensemble, Ensemble) else load_ensemble(ensemble)
    return make_plan(loaded, workflow, options, custom)


#: Unfurl 1.2.0's export formats, named so that asking for one says it is not here
UNFURL_FORMATS = ("deployment", "blueprint", "environments", "deployments", "python")


def export(ensemble: str | Path | None = None) -> dict[str, Any]:
    """The validated ensemble's whole document with includes and merge directives applied,
    as plain data (what every command works from)."""
    from unfurl_lite.load import merge, yamlio  # start-up: keeps ruamel (45 modules) off `plan`

    loaded = load_ensemble(ensemble)
    if not loaded.merged:
        return _without_secrets(loaded.plain or {}, loaded)
    expanded = merge.expand(loaded.document, loaded.path, loaded.project_root)
    return _without_secrets(dict(yamlio.to_plain(expanded)), loaded)


def _without_secrets(document: dict[str, Any], loaded: Ensemble) -> dict[str, Any]:
    """What ``export`` prints is read by people and pasted into tickets: a sensitive
    input's or property's value (from an included, git-ignored file too) is redacted, and
    so is every other place the spec's secrets appear."""
    # start-up: keeps expressions.context (7 modules) off `plan` until _without_secrets() runs
    from unfurl_lite.expressions.context import (
        CREDENTIAL_SECRETS,
        spec_secrets,
        wrapped_inputs,
    )
    from unfurl_lite.security.redaction import redact

    topology = loaded.topology
    secrets = spec_secrets(topology) | set(secrets_in(wrapped_inputs(topology)))
    spec = _section(document, "spec")
    tosca = _section(_section(spec, "service_template"), "topology_template")
    given, declared = _section(spec, "inputs"), _section(tosca, "inputs")
    for name in topology.sensitive_inputs:
        if _plain_value(given.get(name)):
            given[name] = REDACTED
        definition = _section(declared, name)
        if _plain_value(definition.get("default")):
            definition["default"] = REDACTED
    for name, template in topology.templates.items():
        properties = _section(_section(_section(tosca, "node_templates"), name), "properties")
        for key in template.sensitive_properties:
            value = properties.get(key)
            if key in template.credential_properties and isinstance(value, dict):
                for field in CREDENTIAL_SECRETS:  # a Credential keeps its shape
                    if _plain_value(value.get(field)):
                        value[field] = REDACTED
            elif _plain_value(value):
                properties[key] = REDACTED
    cleaned: dict[str, Any] = redact(document, secrets)
    return cleaned


def _section(mapping: Any, key: str) -> dict[str, Any]:
    found = mapping.get(key) if is_map(mapping) else None
    return found if is_map(found) else {}


def _plain_value(value: Any) -> bool:
    """A value that is the secret itself: a literal, or a list or map of literals (a
    sensitive map is secret whole), not an expression or template that fetches it."""
    return value is not None and not _computed(value)


def _computed(value: Any) -> bool:
    """Whether any part of ``value`` is evaluated when read (a template, an expression
    the resolver evaluates where it stands: ``eval:``, ``ref:``, a bare TOSCA function), so
    export may show it: it names where a secret comes from."""
    # start-up: keeps expressions.analysis and .resolve off `export` until a sensitive value
    from unfurl_lite.expressions.analysis import could_be_template
    from unfurl_lite.expressions.resolve import is_ref

    if isinstance(value, str):
        return could_be_template(value)
    if isinstance(value, dict):
        return is_ref(value) or any(_computed(item) for item in value.values())
    if isinstance(value, list):
        return any(_computed(item) for item in value)
    return False
