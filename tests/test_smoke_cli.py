from tests.conftest import REFERENCE


def test_reference_deploy_then_nothing_to_do(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    result = invoke("deploy", "--approve")
    assert result.exit_code == 0, result.output
    assert project.local("db") == "ok" and project.state("app") == "configured"
    again = invoke("deploy", "--approve")
    assert again.exit_code == 0
    assert "Nothing to do" in again.output
    assert project.commits()[0].startswith("Updating status for job A")
    assert len(project.commits()) == 3  # init, write, one job


def test_unknown_instance_is_a_clear_error(project, invoke):
    project.write((REFERENCE / "ensemble.before.yaml").read_text())
    result = invoke("deploy", "--approve", "--instance", "dbb")
    assert result.exit_code == 1
    assert "no instance named 'dbb'" in result.output and "did you mean 'db'" in result.output
