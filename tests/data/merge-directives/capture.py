"""Regenerate each case's unfurl-expanded.json with Unfurl 1.2.0's own loader.

Run with the interpreter of a virtualenv holding Unfurl 1.2.0, from the repository root:
    $UNFURL120_VENV/bin/python tests/data/merge-directives/capture.py
YamlConfig is what Unfurl loads ensemble.yaml with; ``expanded`` is the document after its
includes and merge directives (the one `unfurl export` prints).
"""

import json
import os
import sys

from unfurl.yamlloader import YamlConfig

HERE = os.path.dirname(os.path.abspath(__file__))

for case in sorted(os.listdir(HERE)):
    path = os.path.join(HERE, case, "ensemble.yaml")
    if not os.path.isfile(path):
        continue
    expanded = YamlConfig(path=path).expanded
    with open(os.path.join(HERE, case, "unfurl-expanded.json"), "w") as out:
        json.dump(expanded, out, indent=2, default=str)
        out.write("\n")
    print(case, file=sys.stderr)
