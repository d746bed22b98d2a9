"""The ensemble format reference documents only keys the schema knows."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.conftest import ROOT


def schema_keys(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                found.update(value)
            found |= schema_keys(value)
    elif isinstance(node, list):
        for item in node:
            found |= schema_keys(item)
    return found


def test_every_documented_key_is_in_the_schema():
    schema = json.loads((ROOT / "unfurl_lite" / "schema" / "ensemble.schema.json").read_text())
    known = schema_keys(schema)
    doc = (ROOT / "docs" / "ensemble-format.md").read_text()
    section = doc.split("## Merge directives")[0]
    documented = set(re.findall(r"^\| `([A-Za-z_]+)` \|", section, flags=re.M))
    assert len(documented) > 30
    assert documented - known == set()
