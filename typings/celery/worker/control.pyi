# the remote control commands a worker answers (the consumer wraps `revoke`)
from collections.abc import Callable
from typing import Any

class Panel:
    data: dict[str, Callable[..., Any]]
    def __getattr__(self, name: str) -> Any: ...

def __getattr__(name: str) -> Any: ...
