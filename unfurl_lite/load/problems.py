"""Where a problem is: locating a path of the merged document in its file, and the small
helpers every validation check shares."""

from __future__ import annotations

from unfurl_lite.errors import Problem
from unfurl_lite.expressions.names import did_you_mean  # noqa: F401 (checks import it here)
from unfurl_lite.load import positions
from unfurl_lite.load.origins import format_path, source_file
from unfurl_lite.model.narrow import YAMLMap, YAMLValue

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SERVICE = ("spec", "service_template")
TOPOLOGY = (*SERVICE, "topology_template")


def locate(doc: Any, path: tuple[Any, ...] | list[Any], file: str) -> tuple[str, int | None,
                                                                             int | None]:
    """(file, line, column) of a path in the merged document, down to the deepest known node."""
    node: YAMLValue = doc
    container: YAMLValue = None
    key = None
    for part in path:
        if isinstance(node, dict) and part in node:  # noqa: SIM114 (each index typed apart)
            container, key, node = node, part, node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            container, key, node = node, part, node[part]
        else:
            break
    if container is None:
        line, column = positions.location(node)
        return source_file(node) or file, line, column
    line, column = positions.location(container, key)
    return source_file(container, key) or file, line, column


def problem_at(
    doc: Any, path: tuple[Any, ...] | list[Any], file: str, message: str, hint: str | None
) -> Problem:
    where, line, column = locate(doc, path, file)
    return Problem(message, file=where, line=line, column=column,
                   path=format_path(list(path)) or None, hint=hint)


def mapping(value: Any) -> YAMLMap:
    return value if isinstance(value, dict) else {}  # is_map's test, inline: ~70 calls a template


def get_section(doc: Any, path: tuple[Any, ...]) -> YAMLMap:
    node = doc
    for part in path:
        node = mapping(node).get(part)
    return mapping(node)


def declared_types(doc: Any, section: str) -> YAMLMap:
    """The service template's types of one kind (``interface_types``, say) with Unfurl's
    ``types:``, where a type of any kind may be declared (the kind's own section last)."""
    service = get_section(doc, SERVICE)
    return {**mapping(service.get("types")), **mapping(service.get(section))}
