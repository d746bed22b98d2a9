"""The wire format between the controller and workers: JSON, never pickle.

A secret travels marked, so the other side wraps it again and keeps it out of records.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from unfurl_lite.run.operations.base import OperationRequest, OperationResult
from unfurl_lite.security.taint import Sensitive, Tainted

if TYPE_CHECKING:
    from unfurl_lite.model.narrow import YAMLValue


def encode(value: YAMLValue | set[Any] | frozenset[Any]) -> Any:
    """JSON-ready data; a secret becomes ``{"__sensitive__": text}`` (never plain text in
    a structure that could be mistaken for an ordinary value)."""
    if isinstance(value, Sensitive):
        return {"__sensitive__": str(value), "tainted": isinstance(value, Tainted)}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [encode(v) for v in value]
    return value


def decode(value: YAMLValue) -> Any:
    if isinstance(value, dict):
        if "__sensitive__" in value and set(value) <= {"__sensitive__", "tainted"}:
            cls = Tainted if value.get("tainted") else Sensitive
            return cls(value["__sensitive__"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def encode_request(request: OperationRequest) -> dict[str, Any]:
    return {f.name: encode(getattr(request, f.name)) for f in fields(request)}


def decode_request(data: dict[str, Any]) -> OperationRequest:
    known = {f.name for f in fields(OperationRequest)}
    return OperationRequest(**{k: decode(v) for k, v in data.items() if k in known})


def encode_result(result: OperationResult) -> dict[str, Any]:
    return {f.name: encode(getattr(result, f.name)) for f in fields(result)}


def decode_result(data: dict[str, Any]) -> OperationResult:
    known = {f.name for f in fields(OperationResult)}
    return OperationResult(**{k: decode(v) for k, v in data.items() if k in known})
