"""The expression context of the render in progress, for the code Jinja2 calls back into
(Unfurl's filters, ``file()``, ``get_env``): it sits below the evaluator and the sandbox,
so a filter reaches the evaluator through the context it is given, never by importing it.
"""

from __future__ import annotations

import contextvars

TYPE_CHECKING = False
if TYPE_CHECKING:
    from unfurl_lite.expressions.expr import EvalContext

current_ctx: contextvars.ContextVar[EvalContext | None] = contextvars.ContextVar(
    "unfurl_lite_ctx", default=None
)
