"""``x.name`` on a mapping in a template, as Unfurl 1.2.0 resolves it.

Jinja2 tries the Python attribute first and the key second. Unfurl's templates see its
values as ``ResultsMap`` objects, so which names are attributes is decided by that class,
not by ``dict``: ``inputs.items`` is the method (even when the operation has an input
named ``items``: ``inputs['items']`` reads it), while ``d.copy`` is the key ``copy``, as
``ResultsMap`` has no ``copy``. Names that are Unfurl's own machinery on that class
(``SELF.context``, ``SELF.resolve``...) are refused by name rather than read as keys,
since Unfurl would give its internal object, unless the view gives Unfurl's value
(``inputs.validate`` is False: :class:`~unfurl_lite.expressions.lazy.OperationInputs`).
tests/data/unfurl120/queries/names-probes records Unfurl's answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from unfurl_lite.errors import ExpressionError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: a mapping's methods in Unfurl's templates (``collections.abc.MutableMapping``'s)
MAPPING_METHODS = frozenset({"get", "items", "keys", "values", "pop", "popitem", "clear",
                             "update", "setdefault"})
#: the ones that would change the value: refused, as the sandbox refuses them on a dict
_CHANGING = frozenset({"pop", "popitem", "clear", "update", "setdefault"})
#: what else ``x.NAME`` gives on a mapping in Unfurl 1.2.0: its ``ResultsMap``'s machinery
UNFURL_INTERNALS = frozenset({"applyTemplates", "bump_change_count", "change_count",
                              "context", "defs", "get_copy", "get_datatype_defs", "get_diff",
                              "get_resolved", "has_diff", "is_compatible", "map_all",
                              "resolve", "resolve_all", "validate"})


def mapping_attribute(env: Any, obj: Mapping[Any, Any], attribute: str,
                      python_attribute: Callable[[Any, str], Any]) -> Any:
    """``obj.attribute`` for a mapping: its method, its key, or undefined."""
    if attribute in MAPPING_METHODS:
        if attribute in _CHANGING:
            return env.unsafe_undefined(obj, attribute)
        return python_attribute(obj, attribute)
    if attribute in UNFURL_INTERNALS:
        if hasattr(type(obj), attribute):  # a view that gives Unfurl's value for it
            return python_attribute(obj, attribute)
        raise ExpressionError(
            f"`.{attribute}` of a mapping is Unfurl's internal {attribute!r}, not the key "
            f"{attribute!r}: not supported",
            hint=f"read the key with ['{attribute}']")
    found = env.getitem(obj, attribute)  # (read once: a lazy value is evaluated by reading)
    if getattr(found, "__self__", None) in (obj, type(obj)):  # Jinja found a method instead
        return env.undefined(obj=obj, name=attribute)
    return found
