"""A filter or test whose arguments are constants still runs at each render, in that
render's context: jinja would otherwise call it once while compiling and keep its result
in the compiled template, which every later render, of any job, reuses (a secret kept in
clear; a file read once)."""

from __future__ import annotations

from pathlib import Path

from unfurl_lite.expressions.expr import EvalContext
from unfurl_lite.expressions.sandbox import render_template
from unfurl_lite.security.taint import Sensitive, Tainted


def _ctx(root: Path | None = None, **inputs: object) -> EvalContext:
    ctx = EvalContext(self_view={}, inputs=dict(inputs))
    ctx.project_root = root
    return ctx


def test_a_secret_from_a_constant_expression_is_a_secret_at_every_render() -> None:
    text = "echo {{ {'get_input': 'pw'} | eval }} constant-folding-1"
    for value in ("first-s3cret", "second-s3cret", "third-s3cret"):
        ctx = _ctx(pw={"eval": {"sensitive": value}})
        rendered = render_template(text, ctx)
        assert isinstance(rendered, Tainted)
        assert str(rendered) == f"echo {value} constant-folding-1"  # not the first's
        assert value in ctx.secrets


def test_a_constant_sensitive_filter_taints_every_render() -> None:
    text = "{{ 'abc-literal-2' | sensitive }}"
    for _ in range(2):
        assert isinstance(render_template(text, _ctx()), Sensitive)


def test_a_file_read_by_a_constant_filter_is_read_at_each_render(tmp_path: Path) -> None:
    (tmp_path / "conf.txt").write_text("one")
    text = "{{ 'conf.txt' | file }} constant-folding-3"
    assert render_template(text, _ctx(tmp_path)) == "one constant-folding-3"
    (tmp_path / "conf.txt").write_text("two")
    assert render_template(text, _ctx(tmp_path)) == "two constant-folding-3"
    other = tmp_path / "other"
    other.mkdir()
    (other / "conf.txt").write_text("three")
    assert render_template(text, _ctx(other)) == "three constant-folding-3"
