"""``x.name`` on a mapping in a template, as Unfurl 1.2.0 renders it: the mapping's method
for ``items``/``keys``/``values``/``get`` (even when an input or key has that name:
``inputs['items']`` reads it), the key for any other name (``SELF.config.copy`` is the key
``copy``), as tests/data/unfurl120/29-jinja-attributes recorded Unfurl deploying it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import safe_load
from tests.load.test_validate import problems_in, templates
from unfurl_lite.errors import ExpressionError
from unfurl_lite.expressions.attributes import MAPPING_METHODS, UNFURL_INTERNALS
from unfurl_lite.expressions.expr import EvalContext
from unfurl_lite.expressions.sandbox import render_template

CAPTURE = Path(__file__).resolve().parent.parent / "data" / "unfurl120" / "29-jinja-attributes"


def test_a_task_reads_names_as_unfurl_does(project, invoke) -> None:
    theirs = safe_load((CAPTURE / "1-deploy" / "ensemble.after.yaml").read_text())
    assert (CAPTURE / "1-deploy" / "exitcode.txt").read_text().strip() == "0"
    project.write((CAPTURE / "input" / "ensemble.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    ours = project.status()["test"]["attributes"]
    assert ours == theirs["status"]["instances"]["test"]["attributes"]
    assert ours["items_method"] is True and ours["copy_input"] == "the copy input"


def _render(text: str, **variables: object) -> object:
    return render_template(text, EvalContext(self_view={}, inputs={}, extra=variables),
                           native=True)


@pytest.mark.parametrize("method", sorted(MAPPING_METHODS - {"pop", "popitem", "clear",
                                                            "update", "setdefault"}))
def test_a_mappings_reading_methods_win_over_its_keys(method: str) -> None:
    value = {method: "the key", "other": 1}
    assert _render(f"{{{{ d.{method} is callable }}}}", d=value) is True
    assert _render(f"{{{{ d['{method}'] }}}}", d=value) == "the key"


@pytest.mark.parametrize("name", ["copy", "fromkeys", "name", "sort", "index"])
def test_any_other_name_is_the_key(name: str) -> None:
    assert _render(f"{{{{ d.{name} }}}}", d={name: "the key"}) == "the key"
    with pytest.raises(ExpressionError, match=name):
        _render(f"{{{{ d.{name} }}}}", d={"other": 1})  # missing: not dict's method


@pytest.mark.parametrize("name", ["pop", "update", "clear", "setdefault", "popitem"])
def test_methods_that_change_a_mapping_are_refused(name: str) -> None:
    with pytest.raises(ExpressionError, match=name):
        _render(f"{{{{ d.{name} }}}}", d={name: 1})


@pytest.mark.parametrize("name", sorted(UNFURL_INTERNALS))
def test_unfurls_own_machinery_is_refused_by_name(name: str) -> None:
    with pytest.raises(ExpressionError, match=f"`.{name}`"):
        _render(f"{{{{ d.{name} }}}}", d={name: 1})
    assert _render(f"{{{{ d['{name}'] }}}}", d={name: 1}) == 1


@pytest.mark.parametrize("template, refused", [
    ("{{ SELF.context }}", "`SELF.context`"),
    ("{{ SELF.config.resolve }}", "`.resolve`"),
    ("{{ inputs.defs }}", "`inputs.defs`"),
    ("{{ inputs.validate }}", None),  # Unfurl's value, False
    ("{{ SELF['context'] }}", None),  # the key
    ("{% set ns = namespace(context=1) %}{{ ns.context }}", None),  # not a mapping's
])
def test_validate_refuses_unfurls_machinery_by_name(tmp_path: Path, template: str,
                                                    refused: str | None) -> None:
    body = ("app:\n  type: tosca.nodes.Root\n  properties:\n    context: 1\n"
            "    config: {resolve: 2}\n  interfaces:\n    Standard:\n      create:\n"
            "        implementation: Template\n        inputs:\n          validate: 1\n"
            "          defs: 2\n          resultTemplate:\n            attributes:\n"
            f"              a: \"{template}\"\n")
    problems = [p.format() for p in problems_in(tmp_path, templates(body))]
    if refused is None:
        assert not any("Unfurl's internal" in p for p in problems), problems
    else:
        assert any(refused in p and "not supported" in p for p in problems), problems


@pytest.mark.parametrize(("text", "expected"), [
    ("x {{ n }} y", "x None y"),  # a null inside text is its text, as Jinja2 (and Unfurl)
    ("x {{ [none] | first }} y", "x None y"),
    ("{{ n }}{{ n }}", "NoneNone"),
    ("{{ n }}", None),  # the whole template one null: the value itself
    ("{{ [none] | first }}", None),
    ("", None),
])
def test_a_null_among_a_templates_pieces_is_kept(text: str, expected: object) -> None:
    assert _render(text, n=None) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("#jinja2: variable_start_string: '<%', variable_end_string: '%>'\n<% 1 + 1 %> {{ x }}",
     "2 {{ x }}"),
    ("#jinja2: block_start_string: '<%', block_end_string: '%>'\n<% if 1 %>y<% endif %>", "y"),
    ("#jinja2: trim_blocks: False\n{% if 1 %}\nz{% endif %}", "\nz"),
    ("#jinja2: trim_blocks: True\n{% if 1 %}\nz{% endif %}", "z"),
])
def test_a_jinja2_first_line_sets_the_syntax_as_ansible_reads_it(text: str,
                                                                  expected: str) -> None:
    assert render_template(text, EvalContext(self_view={}, inputs={})) == expected


@pytest.mark.parametrize("line", ["#jinja2: autoescape: True", "#jinja2: finalize: None",
                                  "#jinja2: trim_blocks True", "#jinja2: trim_blocks: yes"])
def test_a_jinja2_first_line_sets_nothing_else(line: str) -> None:
    with pytest.raises(ExpressionError, match="#jinja2: line"):
        render_template(line + "\n{{ 1 }}", EvalContext(self_view={}, inputs={}))
