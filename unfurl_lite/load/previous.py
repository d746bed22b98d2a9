"""Templates the spec no longer has, as the ensemble's git history last defined them.

Cloudify's update uninstalls the instances of removed nodes, which needs their stop and
delete operations after the user has deleted them from the spec. The repository is the
deployment history, so the last committed version of ensemble.yaml that still defined a
template is where its operations are read from. Includes and imports are resolved against
today's files. Nothing here is an error: a template that cannot be found is simply not returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from unfurl_lite.load import gitobjects

if TYPE_CHECKING:
    from unfurl_lite.model.documents import EnsembleDoc
    from unfurl_lite.model.ensemble import Ensemble
    from unfurl_lite.model.entities import NodeTemplate, Requirement

DEPTH = 50  # commits of ensemble.yaml looked through at most


def removed_templates(ensemble: Ensemble, names: set[str]) -> dict[str, NodeTemplate]:
    return removed_with_links(ensemble, names)[0]


def removed_with_links(
    ensemble: Ensemble, names: set[str]
) -> tuple[dict[str, NodeTemplate], dict[str, tuple[Requirement, ...]]]:
    """The removed templates as last defined, and, from those same commits, the
    requirements other templates had on them (template -> its requirements on a removed
    one): the spec dropped them with the target, and their unlink must still run."""
    found: dict[str, NodeTemplate] = {}
    links: dict[str, tuple[Requirement, ...]] = {}
    wanted = set(names)
    for text in gitobjects.versions(ensemble.path, DEPTH):
        old = _templates(ensemble, text)
        here = [n for n in wanted if n in old]
        for name in here:
            found[name] = old[name]
            wanted.discard(name)
        for template in old.values():
            if template.name in names:
                continue
            reqs = tuple(r for r in template.requirements if r.node in here)
            if reqs:
                links[template.name] = (*links.get(template.name, ()), *reqs)
        if not wanted:
            break
    return found, links


def _templates(ensemble: Ensemble, text: str) -> dict[str, Any]:
    # start-up: keeps ruamel (68 modules) off previous's import until _templates() runs
    from unfurl_lite.load import builder, imports, merge, yamlio

    try:
        data = yamlio.parse_plain(text)
        if isinstance(data, dict) and (merge.has_directives(data) or imports.has_imports(data)):
            document = yamlio.parse(text, str(ensemble.path))
            merged = merge.expand(document, ensemble.path, ensemble.project_root)
            merged = imports.apply(merged, ensemble.path, ensemble.project_root)
            data = yamlio.to_plain(merged)
        if not isinstance(data, dict):
            return {}
        document = cast("EnsembleDoc", data)  # parsed YAML: the ensemble's shape
        return dict(builder.build(ensemble.path, text, document).topology.templates)
    except Exception:  # an old version that no longer loads is just not used
        return {}
