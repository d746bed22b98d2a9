from pathlib import Path
from typing import IO, Any

from ruamel.yaml.nodes import Node

class YAML:
    typ: list[str]
    pure: bool
    preserve_quotes: bool | None
    width: int | None
    default_flow_style: bool | None
    allow_duplicate_keys: bool
    def __init__(
        self,
        *,
        typ: str | list[str] | None = None,
        pure: bool = False,
        output: Any = None,
        plug_ins: Any = None,
    ) -> None: ...
    def load(self, stream: Path | str | bytes | IO[str] | IO[bytes]) -> Any: ...
    def compose(self, stream: Path | str | bytes | IO[str] | IO[bytes]) -> Node | None: ...
    def dump(self, data: Any, stream: Path | IO[str] | IO[bytes] | None = None, *,
             transform: Any = None) -> Any: ...
    def indent(self, mapping: int | None = None, sequence: int | None = None,
               offset: int | None = None) -> None: ...
    def __getattr__(self, name: str) -> Any: ...

def __getattr__(name: str) -> Any: ...
