"""Names a template reads that do not exist: strict, as Unfurl's rendering is.

``{{ SELF.wrokdir }}`` must never render as empty text (``rm -rf {{ SELF.wrokdir }}/cache``
would run as ``rm -rf /cache``): reading it fails the render with the name and the closest
existing one. Testing a name (``is defined``, ``| default(...)``) still works, as in Jinja's
``StrictUndefined``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: the variables every operation's templates see
OPERATION_VARIABLES = frozenset({"SELF", "HOST", "SOURCE", "TARGET", "inputs", "TOPOLOGY",
                                 "ROOT", "NODES", "__unfurl", "task"})
#: and those of ``resultTemplate`` and ``done`` (besides the operation's own outputs)
RESULT_VARIABLES = frozenset({"stdout", "stderr", "returncode", "result", "success", "error",
                              "outputs"})
#: what every instance a template reads has, besides its properties and attributes
VIEW_FIELDS = frozenset({"name", "template", "type", "attributes", "properties", "status",
                         "state"})
#: what a misspelt variable may have meant
TEMPLATE_VARIABLES = OPERATION_VARIABLES | RESULT_VARIABLES | frozenset(
    {"range", "get_env", "lookup", "query", "file"})


def did_you_mean(word: str, choices: Iterable[Any]) -> str | None:
    """``did you mean 'workdir'?`` for the closest of ``choices``, or None."""
    word = str(word)  # the name itself is no suggestion ("'outputs' ...; did you mean 'outputs'?")
    import difflib  # start-up: a misspelled name only, not every command's imports

    close = difflib.get_close_matches(word, [str(c) for c in choices if str(c) != word],
                                      n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else None


def describe(obj: Any) -> str:
    """How a message names the value a missing name was read from."""
    label = getattr(obj, "_label", None)
    if isinstance(label, str) and label:
        return label
    if obj is None:
        return "None (no value)"
    return f"{type(obj).__name__!r} value"


def missing_message(obj: Any, name: Any, missing_variable: bool = False) -> str:
    """``node 'app' has no attribute 'wrokdir'; did you mean 'workdir'?``"""
    if missing_variable:
        text = f"{name!r} is undefined"
        if name in RESULT_VARIABLES:  # a real variable, but not of this operation's result
            return (f"{text} here: a configurator's results are read by resultTemplate and "
                    "done only, and only those it gives (Shell: stdout, stderr, returncode, "
                    "error, timeout)")
        close = did_you_mean(str(name), TEMPLATE_VARIABLES)
        return f"{text}; {close}" if close else text
    label = describe(obj)
    text = (label.format(name=repr(str(name))) if "{name}" in label
            else f"{label} has no attribute {str(name)!r}")
    if isinstance(obj, Mapping):
        try:
            keys = [k for k in obj if isinstance(k, str)][:10_000]
        except Exception:  # a lazy mapping that cannot list its keys: no suggestion
            keys = []
        if VIEW_FIELDS.issubset(keys):  # an instance: its own names first, as validate says
            keys = [k for k in keys if k not in VIEW_FIELDS] or keys
        close = did_you_mean(str(name), keys)
        if close:
            return f"{text}; {close}"
    return text


def strict_undefined() -> type:
    """Jinja's ``StrictUndefined`` with the messages above."""
    # start-up: keeps jinja2, markupsafe (39 modules) off `plan` until strict_undefined() runs
    from jinja2 import StrictUndefined
    from jinja2.utils import missing

    class MissingName(StrictUndefined):
        __slots__ = ()

        @property
        def _undefined_message(self) -> str:
            if self._undefined_hint:
                return self._undefined_hint
            if self._undefined_obj is missing:
                return missing_message(None, self._undefined_name, missing_variable=True)
            return missing_message(self._undefined_obj, self._undefined_name)

    return MissingName
