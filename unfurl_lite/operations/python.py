"""Python operations: the user's own function, named in the spec as ``package.module:function``.

Only code named in the spec runs; the name is never produced by a template.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from unfurl_lite.operations.base import OperationRequest, OperationResult, RetryOperation


def resolve(class_name: str, project_root: str) -> Any:
    module_name, sep, attr = class_name.partition(":")
    if not sep:
        module_name, _, attr = class_name.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"expected 'package.module:function', got {class_name!r}")
    if project_root not in sys.path:
        sys.path.insert(0, project_root)
    module = importlib.import_module(module_name)
    return getattr(module, attr)


def run(request: OperationRequest) -> OperationResult:
    try:
        function = resolve(request.class_name, request.cwd)
    except (ImportError, AttributeError) as exc:
        return OperationResult(
            success=False,
            modified=False,
            error=f"cannot load Python operation {request.class_name!r}: {exc}",
        )
    context = {
        "target": request.target,
        "operation": request.operation,
        "inputs": request.inputs,
        "attributes": dict(request.attributes),
        "properties": dict(request.properties),
        "dryrun": request.dryrun,
        "task_id": request.task_id,
    }
    try:
        returned = function(context)
    except RetryOperation as exc:
        return OperationResult(
            success=False, modified=False, retry=True, error=str(exc) or "retry requested"
        )
    except Exception as exc:  # the user's code failed: that is the task's outcome, not ours
        return OperationResult(success=False, modified=None, error=f"{type(exc).__name__}: {exc}")
    return _result(returned)


def _result(returned: Any) -> OperationResult:
    if returned is None:
        return OperationResult(success=True, modified=True)
    if not isinstance(returned, dict):
        return OperationResult(success=True, modified=True, outputs={"result": returned})
    return OperationResult(
        success=bool(returned.get("success", True)),
        modified=returned.get("modified", True),
        status=returned.get("status"),
        attributes=dict(returned.get("attributes") or {}),
        outputs=dict(returned.get("outputs") or {}),
        error=returned.get("error"),
        resources=list(returned.get("resources") or []),
    )
