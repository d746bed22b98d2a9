from typing import Any

from ruamel.yaml.error import StreamMark

class Node:
    tag: str
    value: Any
    start_mark: StreamMark
    end_mark: StreamMark
    anchor: str | None
    comment: Any

class ScalarNode(Node):
    value: str
    style: str | None

class CollectionNode(Node):
    flow_style: bool | None

class SequenceNode(CollectionNode):
    value: list[Node]

class MappingNode(CollectionNode):
    value: list[tuple[Node, Node]]
    merge: list[tuple[Node, Node]] | None

def __getattr__(name: str) -> Any: ...
