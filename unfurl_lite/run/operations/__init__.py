# pyright: reportUnusedImport=false
# (the TYPE_CHECKING imports name for type checkers what EXPORTS offers at run time)
"""Operations ("configurators" in Unfurl): the code that does the work of a task."""

from __future__ import annotations

from unfurl_lite.exports import lazy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from unfurl_lite.run.operations.base import (
        OperationRequest,
        OperationResult,
        RetryOperation,
    )
    from unfurl_lite.run.operations.dispatch import run_operation
    from unfurl_lite.run.operations.processes import ProcessTable

#: public name -> "module:attribute" it is defined in
EXPORTS: dict[str, str] = {
    "OperationRequest": "unfurl_lite.run.operations.base:OperationRequest",
    "OperationResult": "unfurl_lite.run.operations.base:OperationResult",
    "RetryOperation": "unfurl_lite.run.operations.base:RetryOperation",
    "ProcessTable": "unfurl_lite.run.operations.processes:ProcessTable",
    "run_operation": "unfurl_lite.run.operations.dispatch:run_operation",
}

__all__ = sorted(EXPORTS)  # pyright: ignore[reportUnsupportedDunderAll]  # made from EXPORTS

__getattr__, __dir__ = lazy(__name__, EXPORTS)
