"""The library API: every use case the CLI offers is one call, usable without click, with
no side effects a library caller did not ask for (no parse cache in ~/.cache, no
gc.freeze on their heap), and the public names importable from ``unfurl_lite`` lazily."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, Project, ensemble_yaml, run_in_process, shell_node


def _python(code: str, cwd: Path, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter (nothing imported yet); it prints one JSON line."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    for name in [k for k, v in env.items() if v == ""]:
        full_env.pop(name)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _gated(project: Project) -> Path:
    """a is created at once; b's create fails until the gate file exists."""
    gate = project.root / "gate"
    project.write(ensemble_yaml(shell_node("a", "echo a") + shell_node("b", f"test -e {gate}")))
    return gate


def test_deploy_resume_and_history_through_the_api_without_click(project: Project) -> None:
    gate = _gated(project)
    seen = _python(f"""
        import json, pathlib, sys
        import unfurl_lite
        from unfurl_lite import api

        first = api.run_job(api.JobRequest("ensemble.yaml", "deploy"))
        pathlib.Path({str(gate)!r}).write_text("")
        resumed = api.resume("ensemble.yaml")
        jobs = unfurl_lite.history("ensemble.yaml")
        print(json.dumps({{
            "first": str(first.state), "firstId": first.job_id,
            "resumed": str(resumed.result.state), "resumes": resumed.change_id,
            "history": [[j.change_id, j.workflow, j.shown_status, bool(j.commit)] for j in jobs],
            "click": "click" in sys.modules, "rich": "rich" in sys.modules,
        }}))
    """, project.root)
    assert seen["first"] == "failed" and seen["resumed"] == "succeeded"
    assert seen["resumes"] == seen["firstId"]
    assert [h[1:] for h in seen["history"]] == [["deploy", "ok", True], ["deploy", "error", True]]
    assert seen["history"][1][0] == seen["firstId"]  # newest first
    assert project.local("a") == project.local("b") == "ok"
    assert not seen["click"] and not seen["rich"]


def test_the_api_leaves_no_parse_cache_in_home_unless_enabled(project: Project,
                                                             tmp_path: Path) -> None:
    project.write(ensemble_yaml(shell_node("a", "echo a")))
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "UNFURL_LITE_CACHE": "", "XDG_CACHE_HOME": ""}
    _python("""
        import json
        from unfurl_lite import api

        api.validate("ensemble.yaml")
        result = api.run_job(api.JobRequest("ensemble.yaml", "deploy"))
        print(json.dumps({"state": str(result.state)}))
    """, project.root, **env)
    assert project.local("a") == "ok"
    assert not (home / ".cache").exists()
    _python("""
        import json
        from unfurl_lite import api

        api.enable_parse_cache()
        api.validate("ensemble.yaml")
        print(json.dumps({}))
    """, project.root, **env)
    assert list((home / ".cache" / "unfurl-lite").glob("*.marshal"))


def test_the_command_still_uses_the_cache_in_home(project: Project, tmp_path: Path) -> None:
    project.write(ensemble_yaml(shell_node("a", "echo a")))
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop("UNFURL_LITE_CACHE", None)
    env.pop("XDG_CACHE_HOME", None)
    done = subprocess.run([sys.executable, "-m", "unfurl_lite", "validate"], cwd=project.root,
                          env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert list((home / ".cache" / "unfurl-lite").glob("*.marshal"))


def test_a_job_run_through_the_api_leaves_the_collector_alone(project: Project,
                                                              monkeypatch) -> None:
    from unfurl_lite import api

    project.write(ensemble_yaml(shell_node("a", "echo a") + shell_node("b", "echo b")))
    monkeypatch.chdir(project.root)
    frozen: list[int] = []

    class Watch(api.Observer):
        def task_started(self, run) -> None:
            frozen.append(gc.get_freeze_count())

    before = gc.get_threshold()
    result = api.run_job(api.JobRequest(project.ensemble, "deploy"), observer=Watch())
    assert str(result.state) == "succeeded"
    assert frozen and set(frozen) == {0}
    assert gc.get_threshold() == before


def test_plan_options_are_typed_and_checked_against_the_workflow(project: Project) -> None:
    from unfurl_lite import api
    from unfurl_lite.errors import PlanError

    project.write(ensemble_yaml(shell_node("a", "echo a") + shell_node("b", "echo b")))
    ensemble = api.load(project.ensemble)
    plan = api.make_plan(ensemble, "deploy", api.PlanOptions(instance_names=["b"]))
    assert {t.target for t in plan.tasks} == {"b"}
    with pytest.raises(PlanError) as refused:
        api.make_plan(ensemble, "deploy", api.PlanOptions(delta=2))
    assert "deploy does not take the option(s) delta" in refused.value.message
    assert "instance_names, force" in (refused.value.hint or "")
    with pytest.raises(PlanError, match="unknown plan option"):
        api.PlanOptions.from_mapping({"instances": ["b"]})


def test_importing_the_package_imports_nothing_heavy_and_exports_everything(
        tmp_path: Path) -> None:
    seen = _python("""
        import json, sys
        import unfurl_lite
        light = sorted(m for m in sys.modules if m.startswith(("unfurl_lite.", "ruamel", "click",
                                                               "rich", "jinja2", "git")))
        names = {name: type(getattr(unfurl_lite, name)).__name__ for name in unfurl_lite.__all__}
        from unfurl_lite.run.operations.base import RetryOperation
        from unfurl_lite.api import load
        print(json.dumps({
            "light": light, "names": names,
            "retry": unfurl_lite.RetryOperation is RetryOperation,
            "load": unfurl_lite.load_ensemble is load,
            "errors": [n for n in unfurl_lite.ERRORS if n != "Problem"
                       and not issubclass(getattr(unfurl_lite, n), Exception)],
        }))
    """, tmp_path)
    assert seen["light"] == []
    assert seen["retry"] and seen["load"]
    assert seen["errors"] == []
    for name in ("run_job", "resume", "cancel", "history", "show", "diff", "export", "status",
                 "init", "validate", "make_plan", "load_ensemble"):
        assert seen["names"][name] == "function"
    for name in ("UnfurlLiteError", "InputError", "PlanError", "JobError", "ExpressionError",
                 "PathError", "ChangeIdError", "HistoryError", "RetryOperation"):
        assert seen["names"][name] == "type"
    assert seen["names"]["PlanOptions"] == "type" and seen["names"]["JobRequest"] == "type"


def test_show_diff_status_and_export_through_the_api(project: Project) -> None:
    from unfurl_lite import api

    project.write(ensemble_yaml(shell_node("a", "echo a")))
    result = api.run_job(api.JobRequest(project.ensemble, "deploy"))
    assert result is not None
    shown = api.show(result.job_id, project.ensemble)
    assert shown.is_job and shown.record is not None
    assert shown.record["changeId"] == result.job_id
    assert [t["target"] for t in shown.tasks] == ["::a"]
    assert "+" in shown.diff and shown.job.commit is not None
    changed = api.diff(result.job_id, ensemble=project.ensemble)
    assert changed.kind == "job"
    assert [c["instance"] for c in changed.instances] == ["a"]
    overview = api.status(project.ensemble)
    assert overview["lastJob"]["changeId"] == result.job_id
    assert [row["status"] for row in overview["instances"]] == ["ok"]
    document = api.export(project.ensemble)
    assert "a" in document["spec"]["service_template"]["topology_template"]["node_templates"]


def test_cancel_through_the_api_says_when_no_job_runs(project: Project) -> None:
    from unfurl_lite import api
    from unfurl_lite.errors import JobError

    project.write(ensemble_yaml(shell_node("a", "echo a")))
    with pytest.raises(JobError, match="no job is running"):
        api.cancel(project.ensemble)


def test_init_through_the_api(tmp_path: Path, monkeypatch) -> None:
    from unfurl_lite import api

    for name, value in (("GIT_AUTHOR_NAME", "T"), ("GIT_AUTHOR_EMAIL", "t@example.com"),
                        ("GIT_COMMITTER_NAME", "T"), ("GIT_COMMITTER_EMAIL", "t@example.com")):
        monkeypatch.setenv(name, value)
    created = api.init(tmp_path / "new")
    assert created.new_repository and created.problem is None
    assert api.validate(created.ensemble).topology.templates.keys() == {"db", "app"}


ENSEMBLE_COMMANDS = ["deploy", "undeploy", "check", "discover", "run", "validate", "plan",
                     "status", "history", "show", "diff", "export", "resume", "cancel",
                     "agents", "execute-operation", "start", "stop", "restart", "heal",
                     "scale", "update", "install", "uninstall", "graph"]


@pytest.mark.parametrize("command", ENSEMBLE_COMMANDS)
def test_every_command_takes_the_ensemble_option(invoke, command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert "-e, --ensemble PATH" in result.output


def test_the_ensemble_option_and_argument_name_the_same_thing(project: Project,
                                                             tmp_path: Path) -> None:
    project.write(ensemble_yaml(shell_node("a", "echo a")))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    by_option = run_in_process(elsewhere, "validate", "-e", str(project.ensemble))
    by_argument = run_in_process(elsewhere, "validate", str(project.ensemble))
    assert by_option.returncode == by_argument.returncode == 0
    assert by_option.stdout == by_argument.stdout
    deployed = run_in_process(elsewhere, "deploy", "--approve", "-e", str(project.root))
    assert deployed.returncode == 0, deployed.stderr
    assert project.local("a") == "ok"
    both = run_in_process(elsewhere, "status", str(project.ensemble), "-e", str(elsewhere))
    assert both.returncode == 2 and "two ensembles given" in both.stderr


def test_the_documented_example_runs(project: Project) -> None:
    text = (ROOT / "docs" / "api.md").read_text()
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    project.write(ensemble_yaml(shell_node("db", "echo db") + shell_node("app", "echo app")))
    full_env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", example], cwd=project.root, env=full_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "['app.create']"
    job_id, state, summary = lines[1].split(" ", 2)
    assert state == "succeeded" and summary.startswith("2 tasks (2 changed, 2 ok, 0 failed")
    assert lines[2].split()[:3] == [job_id, "deploy", "ok"] and len(lines) == 3


def test_confirm_sees_the_plan_first_and_declining_runs_and_writes_nothing(
        project: Project) -> None:
    from unfurl_lite import api
    from unfurl_lite.record import lock

    project.write(ensemble_yaml(shell_node("a", "echo a") + shell_node("b", "echo b")))
    seen: list[tuple[list[str], bool]] = []

    def confirm(ensemble, plan) -> bool:
        seen.append(([t.target for t in plan.tasks],
                     lock.read_lock(lock.lock_path(ensemble.path)) is not None))
        return False

    before = project.commits()
    assert api.run_job(api.JobRequest(project.ensemble, "deploy"), confirm=confirm) is None
    assert seen == [(["a", "b"], False)]  # shown before the lock is taken
    assert project.commits() == before and project.jobs_tsv() == []
    assert "a" not in project.status()


def test_a_job_through_the_api_installs_no_signal_handlers(project: Project) -> None:
    import signal

    from unfurl_lite import api

    project.write(ensemble_yaml(shell_node("a", "echo a") + shell_node("b", "echo b")))
    counts: list[int] = []
    handlers: list[object] = []
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)

    class Watch(api.Observer):
        def task_started(self, run) -> None:
            handlers.append((signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)))

    def observe(count: int):
        counts.append(count)
        return Watch()

    result = api.run_job(api.JobRequest(project.ensemble, "deploy"), observe=observe)
    assert result is not None and str(result.state) == "succeeded"
    assert counts == [2]  # made once, when the job is about to run its two tasks
    assert handlers and set(handlers) == {before}


def test_every_api_name_resolves_and_the_examples_are_the_commands(invoke) -> None:
    from unfurl_lite import api

    assert [name for name in api.__all__ if getattr(api, name, None) is None] == []
    names = [name for name, _ in api.examples()]
    assert "three-tier" in names
    listed = invoke("init", "--list-examples").output.splitlines()
    assert [line.split()[0] for line in listed] == names


@pytest.mark.parametrize("line, expected", [
    ("jobsLog: logs/jobs.tsv", "logs/jobs.tsv"),
    ("jobsLog: 'my jobs.tsv'  # where the jobs go", "my jobs.tsv"),
    ('jobsLog: "quoted.tsv"', "quoted.tsv"),
    ("", "jobs.tsv"),
    ("jobsLog: [not, a, path]", "jobs.tsv"),
])
def test_the_jobs_log_is_found_without_loading_a_broken_spec(tmp_path, line, expected):
    from unfurl_lite.api.inspect import ensemble_paths

    ensemble = tmp_path / "ensemble.yaml"
    ensemble.write_text("apiVersion: unfurl/v1alpha1\nkind: Ensemble\n" + line
                        + "\nspec: {service_template: [unclosed\n")
    assert ensemble_paths(ensemble) == (ensemble, tmp_path / expected)
