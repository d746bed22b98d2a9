"""A chain of ``get_property`` links (each property reading the next), as long as Unfurl
1.2.0 evaluates (200), renders in the ``unfurl`` command's process; a far longer one is a
clean render error, never a traceback or a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import git, run_unfurl


def chain(links: int) -> str:
    declared = "\n".join(f"          p{i}: {{type: string}}" for i in range(links + 1))
    values = "\n".join(f"            p{i}: {{get_property: [SELF, p{i + 1}]}}"
                       for i in range(links))
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
            p{links}: the end
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


def test_a_far_longer_chain_is_a_clean_render_error(repo: Path) -> None:
    (repo / "ensemble.yaml").write_text(chain(1500))
    result = run_unfurl(repo, "deploy", "--approve", "ensemble.yaml")
    assert result.returncode == 64  # the job failed: its render aborted it
    assert "expression nested too deeply" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
