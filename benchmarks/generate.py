"""Generate benchmark ensembles: a layered DAG of N nodes, W per layer.

Each node after the first layer requires one or two nodes of the layer before it, so a
deploy must respect N dependency edges while W tasks can run side by side. Every node has
Standard create and delete Shell operations (``true`` or ``sleep S``) written in the long
form that both unfurl-lite and Unfurl 1.2.0 read.
"""

from __future__ import annotations

import argparse
from pathlib import Path

#: generated data stays out of git (.gitignore)
OUT = Path(__file__).resolve().parent / "out"

HEADER = """apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    topology_template:
      node_templates:
"""


def node_name(index: int) -> str:
    return f"n{index:05d}"


def requirements_of(index: int, width: int) -> list[int]:
    """The nodes of the previous layer this node requires (none in the first layer)."""
    layer, slot = divmod(index, width)
    if layer == 0:
        return []
    base = (layer - 1) * width
    first = base + slot
    second = base + (slot + 1) % width
    return [first] if second == first else [first, second]


def node_yaml(index: int, width: int, command: str) -> str:
    lines = [f"        {node_name(index)}:", "          type: tosca.nodes.Root"]
    needs = requirements_of(index, width)
    if needs:
        lines.append("          requirements:")
        lines.extend(f"            - dependency: {node_name(n)}" for n in needs)
    lines += ["          interfaces:", "            Standard:", "              operations:"]
    for op in ("create", "delete"):
        lines += [
            f"                {op}:",
            "                  implementation:",
            "                    className: Shell",
            "                  inputs:",
            f'                    command: "{command}"',
        ]
    return "\n".join(lines) + "\n"


def ensemble_text(nodes: int, width: int, command: str = "true") -> str:
    return HEADER + "".join(node_yaml(i, width, command) for i in range(nodes))


def independent_text(nodes: int, command: str) -> str:
    """N nodes with no requirements at all: the parallel case."""
    return ensemble_text(nodes, width=nodes, command=command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("nodes", type=int)
    parser.add_argument("--width", type=int, default=10)
    parser.add_argument("--command", default="true", help="e.g. 'true' or 'sleep 1'")
    parser.add_argument("-o", "--output", type=Path, default=OUT / "ensemble.yaml",
                        help="where to write it (default: benchmarks/out/, which git ignores)")
    args = parser.parse_args()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(ensemble_text(args.nodes, args.width, args.command))


if __name__ == "__main__":
    main()
