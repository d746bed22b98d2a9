"""The fast path of what an operation read: when nothing in its inputs is evaluated, the
reads are known without watching a second rendering, and must be exactly what watching
finds (digestKeys are compared with Unfurl's)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from unfurl_lite.expressions.analysis import is_template
from unfurl_lite.expressions.expr import EvalContext
from unfurl_lite.expressions.reads import operation_reads, plain_reads

NAMES = st.sampled_from(["command", "cwd", "dryrun", "shell", "keeplines", "echo", "timeout",
                         "run", "foo", "region"])
PLAIN = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                  st.text(alphabet="abc ${}%#-_.:/", max_size=12),
                  st.lists(st.text(alphabet="abc ", max_size=4), max_size=3))


@given(st.dictionaries(NAMES, PLAIN, max_size=6), st.sampled_from(["Shell", "Template", "Python"]))
def test_plain_inputs_read_what_watching_finds(inputs, kind):
    fast = plain_reads(inputs, None, kind)
    watched = operation_reads(inputs, None, kind, EvalContext(self_view={}, inputs={}))
    if fast is None:  # a template marker came up ({{ }} {% %}, as Unfurl's): it is watched
        assert any(is_template(v) for v in inputs.values())
    else:
        assert fast == watched


def test_templates_environment_and_after_run_inputs_are_watched():
    assert plain_reads({"command": "echo {{ SELF.x }}"}, None, "Shell") is None
    assert plain_reads({"command": {"get_input": "x"}}, None, "Shell") is None
    assert plain_reads({"command": "true"}, {"X": "1"}, "Shell") is None
    assert plain_reads({"command": "true", "done": {"status": "ok"}}, None, "Shell") is None
