"""pyright's strict mode over the package, its unknown-type reports counted (issue 27 item 4).

Not part of the test suite (pyright takes minutes here): run on demand,
``python benchmarks/typing_report.py`` (pyright on PATH: ``pip install pyright``). It
runs pyright with the repository's ``pyrightconfig.json`` in strict mode (a copy in a
temporary file beside it, so the stubs in ``typings/`` and the include list are the
same), then prints the unknown-type reports (``reportUnknown*``) by rule, by package
and by module, and the other strict-mode reports by rule. ``--basic`` runs the
configuration as it is (basic mode: the count must be 0). ``--json FILE`` reads a
saved ``pyright --outputjson`` instead of running pyright. docs/typing.md keeps the counts.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_pyright(strict: bool) -> dict[str, Any]:
    config = json.loads((ROOT / "pyrightconfig.json").read_text())
    if strict:
        config["typeCheckingMode"] = "strict"
    fd, name = tempfile.mkstemp(suffix=".json", prefix=".pyright-", dir=ROOT)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(config, out)
        done = subprocess.run(["pyright", "--outputjson", "-p", name], cwd=ROOT,
                              capture_output=True, text=True, check=False)
    finally:
        os.unlink(name)
    return json.loads(done.stdout)


def report(found: dict[str, Any], top: int) -> None:
    diagnostics = [d for d in found["generalDiagnostics"] if d["severity"] == "error"]
    unknown = [d for d in diagnostics if d.get("rule", "").startswith("reportUnknown")]
    other = [d for d in diagnostics if d not in unknown]
    print(f"errors: {len(diagnostics)}   unknown-type reports: {len(unknown)}")
    print("\nunknown-type reports by rule:")
    for rule, count in collections.Counter(d["rule"] for d in unknown).most_common():
        print(f"  {count:5}  {rule}")
    modules = collections.Counter(
        Path(d["file"]).resolve().relative_to(ROOT / "unfurl_lite").as_posix() for d in unknown)
    packages: collections.Counter[str] = collections.Counter()
    for module, count in modules.items():
        packages[module.split("/")[0] if "/" in module else "(top)"] += count
    print("\nby package:")
    for package, count in packages.most_common():
        print(f"  {count:5}  {package}")
    print(f"\nby module (the first {top}):")
    for module, count in modules.most_common(top):
        print(f"  {count:5}  {module}")
    print("\nother reports by rule:")
    for rule, count in collections.Counter(d.get("rule", "?") for d in other).most_common():
        print(f"  {count:5}  {rule}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--basic", action="store_true", help="basic mode (expects 0 errors)")
    parser.add_argument("--json", type=Path, help="a saved `pyright --outputjson` to count")
    parser.add_argument("--top", type=int, default=25, help="modules to list")
    args = parser.parse_args()
    found = (json.loads(args.json.read_text()) if args.json
             else run_pyright(strict=not args.basic))
    report(found, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
