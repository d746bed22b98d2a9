"""``.super``: the property values an instance's template inherits, as later Unfurl
versions give them (``'.super::main' | eval | combine(...)`` extends an inherited value).

For a property the template sets, ``.super`` gives its type's default; for one it takes
from its type, the default of the next type up that has one. An expression inside such a
default that reads ``.super`` again reaches the type above, and so on.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from typing import Any

from unfurl_lite.model.lineage import as_mapping

#: (instance, type) whose default is being evaluated: `.super` in it starts above that type
_level: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "unfurl_lite_super_level", default=None)


class SuperValues(Mapping[str, Any]):
    def __init__(self, entity: Any) -> None:
        self.entity = entity
        world = entity.world
        self.lineage = world.lineage(entity.template)
        definitions = world.definitions()
        self.node_types = as_mapping(definitions.get("node_types"))
        template = as_mapping(as_mapping(definitions.get("node_templates")).get(entity.template))
        self.assigned = as_mapping(template.get("properties"))

    def _defaults(self, key: str) -> list[tuple[str, Any]]:
        found: list[tuple[str, Any]] = []
        for type_name in self.lineage:
            definition = as_mapping(as_mapping(as_mapping(
                self.node_types.get(type_name)).get("properties")).get(key))
            if "default" in definition:
                found.append((type_name, definition["default"]))
        return found

    def _candidates(self, key: str) -> list[tuple[str, Any]]:
        defaults = self._defaults(key)
        level = _level.get()
        if level is not None and level[0] == self.entity.name:
            names = [t for t, _ in defaults]
            if level[1] in names:
                return defaults[names.index(level[1]) + 1:]
        return defaults if key in self.assigned else defaults[1:]

    def __getitem__(self, key: str) -> Any:
        candidates = self._candidates(key)
        if not candidates:
            raise KeyError(key)
        type_name, value = candidates[0]
        token = _level.set((self.entity.name, type_name))
        try:
            return self.entity.world.evaluate(value)
        finally:
            _level.reset(token)

    def __iter__(self) -> Iterator[str]:
        names: dict[str, None] = {}
        for type_name in self.lineage:
            names.update(dict.fromkeys(as_mapping(as_mapping(
                self.node_types.get(type_name)).get("properties"))))
        return iter([n for n in names if self._candidates(n)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


def super_values(entity: Any) -> SuperValues:
    return SuperValues(entity)
