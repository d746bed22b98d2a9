from typing import Any

class StreamMark:
    name: Any
    index: int
    line: int
    column: int

class YAMLError(Exception): ...

class MarkedYAMLError(YAMLError):
    context: str | None
    context_mark: StreamMark | None
    problem: str | None
    problem_mark: StreamMark | None
    note: str | None

def __getattr__(name: str) -> Any: ...
