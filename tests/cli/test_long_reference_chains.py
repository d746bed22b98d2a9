"""A chain of ``get_property`` links (each property reading the next), as long as Unfurl
1.2.0 evaluates (200), renders in the ``unfurl`` command's process; one Unfurl cannot load
(a loop, more than MAX_REFERENCE_CHAIN links) is refused at validate, by name; a far longer
chain through ``eval`` links, which only the render reads (as in Unfurl), is a clean render
error, never a traceback or a crash."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import git, run_unfurl, unfurl120
from unfurl_lite.load.reference_chains import MAX_REFERENCE_CHAIN


def chain(links: int, link: str = "{{get_property: [SELF, p{next}]}}",
          end: str = "the end") -> str:
    declared = "\n".join(f"          p{i}: {{type: string}}" for i in range(links + 1))
    values = "\n".join(f"            p{i}: " + link.format(next=i + 1) for i in range(links))
    return f"""\
apiVersion: unfurl/v1alpha1
kind: Ensemble
spec:
  service_template:
    node_types:
      T:
        derived_from: tosca.nodes.Root
        properties:
{declared}
    topology_template:
      node_templates:
        a:
          type: T
          properties:
{values}
            p{links}: {end}
          interfaces:
            Standard:
              create: echo "v={{{{ SELF.p0 }}}}"
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "ada@example.com")
    git(tmp_path, "config", "user.name", "Ada")
    return tmp_path


def test_a_chain_of_200_links_renders_as_in_unfurl(repo: Path) -> None:
    (repo / "ensemble.yaml").write_text(chain(200))
    result = run_unfurl(repo, "deploy", "--approve", "ensemble.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    (changes,) = (repo / "changes").glob("*.yaml")
    assert 'echo "v=the end"' in changes.read_text()


@pytest.mark.parametrize(("links", "end", "refused"), [
    (MAX_REFERENCE_CHAIN + 1, "the end", f"a chain of {MAX_REFERENCE_CHAIN + 1} get_property "
     f"links from a.p0 is longer than {MAX_REFERENCE_CHAIN}: Unfurl 1.2.0 cannot load it"),
    (2, "{get_property: [SELF, p0]}", "get_property loop: a.p0 -> a.p1 -> a.p2 -> a.p0: "
     "Unfurl 1.2.0 cannot load it"),
])
def test_a_chain_unfurl_cannot_load_is_refused_by_name(repo: Path, links: int, end: str,
                                                       refused: str) -> None:
    (repo / "ensemble.yaml").write_text(chain(links, end=end))
    result = run_unfurl(repo, "validate", "ensemble.yaml")
    assert result.returncode == 1
    assert refused in " ".join((result.stdout + result.stderr).split())
    (repo / "ensemble.yaml").write_text(chain(MAX_REFERENCE_CHAIN))
    assert run_unfurl(repo, "validate", "ensemble.yaml").returncode == 0


def test_a_far_longer_chain_of_eval_links_is_a_clean_render_error(repo: Path) -> None:
    (repo / "ensemble.yaml").write_text(chain(1500, link="{{eval: '.::p{next}'}}"))
    result = run_unfurl(repo, "deploy", "--approve", "ensemble.yaml")
    assert result.returncode == 64  # the job failed: its render aborted it
    assert "expression nested too deeply" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


UNFURL = unfurl120()


@pytest.mark.unfurl120
@pytest.mark.skipif(not UNFURL.exists(),
                    reason="set UNFURL120_VENV to a virtualenv with unfurl==1.2.0")
@pytest.mark.parametrize(("links", "end"), [(MAX_REFERENCE_CHAIN + 30, "the end"),
                                            (2, "{get_property: [SELF, p0]}")])
def test_unfurl_still_cannot_load_them(repo: Path, links: int, end: str) -> None:
    """Its threshold is not sharp (it depends on what else is on the stack: 241 links
    failed to load for one deploy and rendered for another, 249 fail its validate)."""
    (repo / "ensemble.yaml").write_text(chain(links, end=end))
    proc = subprocess.run([str(UNFURL), "--home", "", "validate", "ensemble.yaml"],
                          cwd=repo, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1
    assert "maximum recursion depth exceeded" in proc.stdout + proc.stderr
