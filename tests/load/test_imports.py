"""TOSCA ``imports:`` of local files, against what Unfurl 1.2.0 did with the same files
(tests/data/unfurl120/15-imports-types)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, InvokeIn, Project, git, safe_load
from unfurl_lite.load import yamlio
from unfurl_lite.load.loader import load_ensemble

CAPTURED = ROOT / "tests" / "data" / "unfurl120" / "15-imports-types"
HEAD = "apiVersion: unfurl/v1alpha1\nkind: Ensemble\n"


def case(project: Project, name: str) -> Path:
    """The captured case's input files, committed in the project."""
    shutil.copytree(CAPTURED / name / "input", project.root, dirs_exist_ok=True)
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", f"case {name}")
    return project.root


def unfurl_outputs(name: str, step: str = "deploy") -> dict:
    file = CAPTURED / name / step / "ensemble.after.yaml"
    return dict(yamlio.to_plain(yamlio.parse(file.read_text(), str(file)))["status"]["outputs"])


def task_rows(jobs_tsv: str) -> set[tuple[str, str, str]]:
    rows = set()
    for line in jobs_tsv.splitlines():
        fields = dict(f.split("=", 1) for f in line.split("\t")[1:] if "=" in f)
        if "operation" in fields:
            rows.add((fields["target"], fields["operation"], fields["status"]))
    return rows


def test_imported_types_win_and_lose_as_in_unfurl(project: Project) -> None:
    """The ensemble's own type beats an imported one, the later import beats the earlier,
    a nested import is relative to the file that imports it, a prefix names the types."""
    ensemble = load_ensemble(case(project, "imports-basic"))
    seen = {f"{name}_who": t.properties["who"] for name, t in ensemble.topology.templates.items()}
    assert seen == unfurl_outputs("imports-basic")  # a: base, c: main, e: dup-from-base2, ...
    assert ensemble.topology.templates["b"].type_lineage[:2] == ("X.Extra", "X.Helper")
    assert ensemble.topology.templates["a"].type_lineage[:2] == ("Base", "Nested")


def test_deploy_runs_the_imported_operations_unfurl_ran(project: Project,
                                                      invoke_in: InvokeIn) -> None:
    root = case(project, "imports-basic")
    before = safe_load((root / "ensemble.yaml").read_text())["spec"]
    result = invoke_in(root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    expected = (CAPTURED / "imports-basic" / "deploy" / "jobs.tsv").read_text()
    assert task_rows((root / "jobs.tsv").read_text()) == task_rows(
        expected)
    # the imported types stay in their files: ensemble.yaml's spec is the user's own text
    assert safe_load((root / "ensemble.yaml").read_text())["spec"] == before


def test_imports_of_an_included_service_template_are_relative_to_its_file(
    project: Project, invoke_in: InvokeIn
) -> None:
    root = case(project, "imports-in-include")  # spec/st.yaml imports types.yaml: spec/types.yaml
    result = invoke_in(root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert task_rows((root / "jobs.tsv").read_text()) == task_rows(
        (CAPTURED / "imports-in-include" / "deploy" / "jobs.tsv").read_text())


def test_an_import_of_a_fragment_brings_the_types_under_it(project: Project,
                                                         invoke_in: InvokeIn) -> None:
    root = case(project, "imports-fragment")
    assert (CAPTURED / "imports-fragment" / "validate" / "exitcode.txt").read_text().strip() == "0"
    result = invoke_in(root, "validate")
    assert result.exit_code == 0, result.output
    template = load_ensemble(root).topology.templates["a"]
    assert template.operation("create") is not None


@pytest.mark.parametrize(("name", "where", "message"), [
    ("imports-cycle", "b.yaml:2:", "import cycle: ensemble.yaml -> a.yaml -> b.yaml -> a.yaml"),
    ("imports-missing", "ensemble.yaml:6:", "imported file 'nothere.yaml' not found"),
    ("imports-outside", "ensemble.yaml:6:", "escapes the project directory"),
    ("imports-badyaml", "bad.yaml:5:", "YAML syntax error"),
    ("imports-badtype", "bad.yaml:3:", "unknown type 'NoSuchParent'"),
    ("imports-py", "ensemble.yaml:6:", "Unfurl's TOSCA Python DSL) is not supported"),
])
def test_a_bad_import_is_refused_naming_the_file_and_line(
    project: Project, invoke_in: InvokeIn, name: str, where: str, message: str
) -> None:
    root = case(project, name)
    result = invoke_in(root, "validate")
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert where in output and message in output, output
    assert "Traceback" not in output


@pytest.mark.parametrize(("entry", "message", "hint"), [
    ("{repository: unfurl, file: tosca_plugins/k8s.yaml}",
     "importing from repository 'unfurl' is not supported: repositories are Unfurl's project "
     "machinery", "copy the file into the project"),
    ("https://example.com/types.yaml", "(a URL) is not supported", "download the file"),
    ("{file: types.yaml, when: x}", "a conditional import (`when:`, Unfurl's expression over "
     "the topology) is not supported", "import the file unconditionally"),
    ("{file: types.yaml, namespace_uri: x}", "import key 'namespace_uri' is not supported",
     "namespace_prefix"),
    ("{file: types.yaml, namespace_prefix: [a]}", "namespace_prefix must be a name", None),
])
def test_imports_unfurl_resolves_through_its_machinery_are_refused_by_name(
    project: Project, invoke_in: InvokeIn, entry: str, message: str, hint: str | None
) -> None:
    project.write("node_types: {}\n", "types.yaml")
    project.write(HEAD + textwrap.dedent(f"""\
        spec:
          service_template:
            imports:
              - {entry}
            topology_template:
              node_templates:
                a: {{type: tosca.nodes.Root}}
        """))
    result = invoke_in(project.root, "validate")
    assert result.exit_code == 1
    output = " ".join(result.output.split())
    assert message in output and "ensemble.yaml:6:" in output, output
    assert hint is None or hint in output


def test_a_changed_imported_file_is_seen_by_the_next_load(project: Project,
                                                        parse_cache: Path) -> None:
    del parse_cache  # the cache is on: an import is a dependency of the cached result
    project.write(HEAD + textwrap.dedent("""\
        spec:
          service_template:
            imports: [lib/types.yaml]
            topology_template:
              node_templates:
                a: {type: T}
        """))
    lib = "node_types:\n  T:\n    derived_from: tosca.nodes.Root\n    properties:\n" \
          "      v: {type: string, default: %s}\n"
    project.write(lib % "one", "lib/types.yaml")
    assert load_ensemble(project.root).topology.templates["a"].properties["v"] == "one"
    assert load_ensemble(project.root).topology.templates["a"].properties["v"] == "one"
    project.write(lib % "two", "lib/types.yaml")
    assert load_ensemble(project.root).topology.templates["a"].properties["v"] == "two"


def test_a_prefixed_import_renames_references_between_its_types(project: Project) -> None:
    project.write("""\
        relationship_types:
          Uses:
            derived_from: tosca.relationships.DependsOn
            interfaces:
              Configure:
                add_target: echo uses
        node_types:
          Base:
            derived_from: tosca.nodes.Root
            interfaces:
              Standard:
                create: echo base
          Db:
            derived_from: Base
          App:
            derived_from: Base
            requirements:
              - db: {node: Db, relationship: Uses}
        """, "lib.yaml")
    project.write(HEAD + textwrap.dedent("""\
        spec:
          service_template:
            imports:
              - {file: lib.yaml, namespace_prefix: L}
            topology_template:
              node_templates:
                db: {type: L.Db}
                app: {type: L.App}
        """))
    app = load_ensemble(project.root).topology.templates["app"]
    assert app.type_lineage[:2] == ("L.App", "L.Base")
    assert app.operation("create") is not None
    (requirement,) = app.requirements
    assert (requirement.node, requirement.relationship) == ("db", "L.Uses")
    assert "add_target" in requirement.interfaces["Configure"]


def test_an_imported_files_node_templates_are_not_instantiated(project: Project,
                                                               invoke_in: InvokeIn) -> None:
    root = case(project, "imports-topology")
    result = invoke_in(root, "deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert set(project.status()) == {"a"}  # Unfurl 1.2.0 deployed `a` only
    assert task_rows((root / "jobs.tsv").read_text()) == task_rows(
        (CAPTURED / "imports-topology" / "deploy" / "jobs.tsv").read_text())


def test_update_deletes_a_removed_template_whose_type_was_imported(
    project: Project, invoke_in: InvokeIn
) -> None:
    """The removed template's operations are read from history, its imports resolved."""
    project.write("node_types:\n  T:\n    derived_from: tosca.nodes.Root\n    interfaces:\n"
                  "      Standard:\n        create: echo create\n        delete: echo gone\n",
                  "lib.yaml")
    spec = HEAD + textwrap.dedent("""\
        spec:
          service_template:
            imports: [lib.yaml]
            topology_template:
              node_templates:
                a: {type: T}
                b: {type: T}
        """)
    project.write(spec)
    assert invoke_in(project.root, "deploy", "--approve").exit_code == 0
    project.write(project.ensemble.read_text().replace("        b: {type: T}\n", ""))
    result = invoke_in(project.root, "update", "--approve")
    assert result.exit_code == 0, result.output
    assert ("::b", "delete", "ok") in task_rows((project.root / "jobs.tsv").read_text())


def test_an_imported_operation_runs_in_the_project_directory(project: Project,
                                                             invoke_in: InvokeIn) -> None:
    """Unfurl 1.2.0 printed the project directory for `pwd` from types/lib.yaml."""
    root = case(project, "imports-cwd")
    assert invoke_in(root, "deploy", "--approve").exit_code == 0
    (job,) = (root / "jobs").glob("job*.yaml")
    stdout = [c["result"]["stdout"] for c in safe_load(job.read_text())["changes"]
              if "result" in c]
    assert stdout == [f"{root}\n", f"{root}\n"]
    assert (CAPTURED / "imports-cwd" / "deploy" / "console.txt").read_text().count(
        "'stdout': '.\\n'") == 2  # the scratch project's path, replaced by '.'
