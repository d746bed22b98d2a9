"""One git layer: every git process the package starts goes through load/gitrepo.py,
with the same environment and the same errors, and no module imports GitPython."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest

from tests import sources
from tests.conftest import ROOT, Project, ensemble_yaml, git, run_unfurl, shell_node
from unfurl_lite.errors import GitError
from unfurl_lite.load import gitobjects, gitrepo

REAL_GIT = shutil.which("git") or "git"
WATCHED = ("LC_ALL", "LANGUAGE", "GIT_TERMINAL_PROMPT", "GIT_PAGER", "GIT_EDITOR",
           "GIT_OPTIONAL_LOCKS")


def spying_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose ``git`` logs its subcommand and environment, then runs git."""
    bin_dir = tmp_path / "spybin"
    bin_dir.mkdir()
    log = tmp_path / "git-calls.log"
    script = bin_dir / "git"
    script.write_text("#!/bin/sh\n{ printf '%s' \"$1\"; "
                      + "".join(f"printf ' {v}=%s' \"${{{v}-unset}}\"; " for v in WATCHED)
                      + f"echo; }} >> {log}\nexec {REAL_GIT} \"$@\"\n")
    script.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LC_ALL": "en_US.UTF-8",
           "LANGUAGE": "fr", "GIT_PAGER": "less", "GIT_EDITOR": "vi"}
    return env, log


def test_every_git_process_runs_in_c_locale_without_prompt_pager_or_editor(
    project: Project, tmp_path: Path
) -> None:
    """Deploy (dirty check, commit), history (git log) and show (git show) alike, whatever
    the user's own locale, pager and editor."""
    project.write(ensemble_yaml(shell_node("a", "echo hi")))
    env, log = spying_git(tmp_path)
    deployed = run_unfurl(project.root, "deploy", "--approve", env=env)
    assert deployed.returncode == 0, deployed.stderr
    job = project.jobs_tsv()[-1].split("\t")[0]
    for args in (("history",), ("show", job)):
        shown = run_unfurl(project.root, *args, env=env)
        assert shown.returncode == 0, shown.stderr
    calls = [line.split() for line in log.read_text().splitlines()]
    assert {"status", "commit", "log", "show"} <= {call[0] for call in calls}
    expected = ["LC_ALL=C", "LANGUAGE=C", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat",
                "GIT_EDITOR=:", "GIT_OPTIONAL_LOCKS=0"]
    assert [call for call in calls if call[1:] != expected] == []


def _loaded_after(project: Project, *args: str) -> str:
    code = ("import sys\nfrom unfurl_lite.cli.main import main\n"
            f"try:\n    main({list(args)!r})\nexcept SystemExit as exit:\n"
            "    print('EXIT', exit.code)\n"
            "print('GITPYTHON', 'git' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=project.root, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    return done.stdout


@pytest.mark.parametrize("args", [("--version",), ("validate",), ("plan", "deploy"),
                                  ("deploy", "--approve", "-q")])
def test_no_command_imports_gitpython(project: Project, args) -> None:
    """A job's git is a few ``git`` processes: GitPython's import (and the two ``git
    version`` processes it starts) cost a job more than all of them."""
    project.write(ensemble_yaml(shell_node("a", "echo hi")))
    out = _loaded_after(project, *args)
    assert "EXIT 0" in out or "EXIT" not in out, out
    assert "GITPYTHON False" in out, out


def test_a_deploy_runs_exactly_the_git_commands_its_record_needs(
    project: Project, tmp_path: Path
) -> None:
    """Finding the work tree, the identity, the dirty check, adding and committing the
    records: no probe of git's version, HEAD and the branch read from .git's files; the
    next job finds the identity remembered (the same environment and config files)."""
    project.write(ensemble_yaml(shell_node("a", "echo hi")))
    env, log = spying_git(tmp_path)
    done = run_unfurl(project.root, "deploy", "--approve", "-q", env=env)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in log.read_text().splitlines()] == [
        "status", "var", "add", "commit"]
    assert project.commits()[0].startswith("Updating status for job")
    log.unlink()
    project.write(ensemble_yaml(shell_node("a", "echo hi") + shell_node("b", "echo ho")))
    done = run_unfurl(project.root, "deploy", "--approve", "-q", env=env)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in log.read_text().splitlines()] == [
        "status", "add", "commit"]  # one status: the dirty check's and the leftovers' both
    assert project.commits()[0].startswith("Updating status for job")


def test_a_jobs_commit_starts_no_maintenance_process(project: Project, tmp_path: Path) -> None:
    """git's commit starts `git maintenance run --auto` after itself (the suite's git is
    told not to: here it is not); the job's commit does not, as Unfurl 1.2.0's."""
    project.write(ensemble_yaml(shell_node("a", "echo hi")))
    trace = tmp_path / "trace"
    env = {"GIT_CONFIG_COUNT": "0", "GIT_TRACE": str(trace)}
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "by hand"], cwd=project.root,
                   env={**os.environ, **env}, check=True)
    assert "maintenance run --auto" in trace.read_text()  # git's own, as a user's commit
    trace.unlink()
    done = run_unfurl(project.root, "deploy", "--approve", "-q", env=env)
    assert done.returncode == 0, done.stderr
    assert "built-in: git commit" in trace.read_text()
    assert "maintenance" not in trace.read_text()
    assert project.commits()[0].startswith("Updating status for job")


def _identity_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str) -> Path:
    """A HOME whose .gitconfig is ``config``, and no system config, git variables or
    identity in the repository's own config."""
    git(tmp_path / "project", "config", "--unset", "user.name")
    git(tmp_path / "project", "config", "--unset", "user.email")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".gitconfig").write_text(config)
    for name in list(os.environ):
        if name.startswith("GIT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


IDENTITY = "[user]\n\tname = Someone\n\temail = someone@example.com\n"
NO_IDENTITY = "[user]\n\tuseConfigOnly = true\n"


def test_an_identity_remembered_is_asked_again_once_a_config_file_changes(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parse_cache: Path
) -> None:
    """What git found is kept against the files it read: an identity removed from the
    global config, or from the repository's, is refused at once, never taken from memory."""
    home = _identity_home(tmp_path, monkeypatch, IDENTITY)
    assert gitrepo.identity_problem(project.root) is None
    assert len(list(parse_cache.glob("git-identity-*"))) == 1
    (home / ".gitconfig").write_text(NO_IDENTITY)
    assert "no identity" in str(gitrepo.identity_problem(project.root))
    (home / ".gitconfig").write_text(IDENTITY)
    assert gitrepo.identity_problem(project.root) is None
    git(project.root, "config", "user.name", "")  # the repository's own config
    assert "no identity" in str(gitrepo.identity_problem(project.root))
    git(project.root, "config", "--unset", "user.name")
    assert gitrepo.identity_problem(project.root) is None
    monkeypatch.setenv("GIT_AUTHOR_NAME", "")  # the environment: asked too
    assert "no identity" in str(gitrepo.identity_problem(project.root))


def test_the_callers_work_runs_once_while_git_is_asked(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parse_cache: Path
) -> None:
    """A job overlaps its own work (importing its executor) with git's answer about the
    identity: the work runs once, before the answer is taken, whether git is asked, the
    answer remembered or the identity missing."""
    home = _identity_home(tmp_path, monkeypatch, IDENTITY)
    ran: list[tuple[str, int]] = []

    def work(name: str) -> None:
        ran.append((name, len(list(parse_cache.glob("git-identity-*")))))

    assert gitrepo.identity_problem(project.root, meanwhile=lambda: work("asked")) is None
    assert gitrepo.identity_problem(project.root, meanwhile=lambda: work("remembered")) is None
    (home / ".gitconfig").write_text(NO_IDENTITY)
    refused = gitrepo.identity_problem(project.root, meanwhile=lambda: work("refused"))
    assert "no identity" in str(refused)
    assert ran == [("asked", 0), ("remembered", 1), ("refused", 1)]


def test_an_identity_from_an_included_file_is_always_asked(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parse_cache: Path
) -> None:
    """An included file can change while the files git names do not: no answer is kept."""
    home = _identity_home(tmp_path, monkeypatch, "[include]\n\tpath = ~/identity\n")
    (home / "identity").write_text(IDENTITY)
    assert gitrepo.identity_problem(project.root) is None
    (home / "identity").write_text(NO_IDENTITY)
    assert "no identity" in str(gitrepo.identity_problem(project.root))
    assert list(parse_cache.glob("git-identity-*")) == []


def test_without_git_init_says_git_is_not_installed(tmp_path: Path) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    done = run_unfurl(tmp_path, "init", "proj", env={"PATH": str(empty)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "git is not installed" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "proj" / "ensemble.yaml").exists()


def test_without_git_a_job_in_a_repository_says_so_unless_told_not_to_use_it(
    project: Project, tmp_path: Path
) -> None:
    project.write(ensemble_yaml(shell_node("a", "echo hi")))
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    refused = run_unfurl(project.root, "deploy", "--approve", env={"PATH": str(empty)})
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "git is not installed" in refused.stderr and "--no-commit --dirty=ok" in refused.stderr
    assert "Traceback" not in refused.stderr and project.jobs_tsv() == []
    done = run_unfurl(project.root, "deploy", "--approve", "--no-commit", "--dirty=ok",
                      env={"PATH": str(empty)})
    assert done.returncode == 0, done.stderr
    assert project.local("a") == "ok" and project.commits()[0] == "write ensemble.yaml"


def test_a_missing_directory_is_not_reported_as_a_missing_git(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="no such directory"):
        gitrepo.output(tmp_path / "gone", "status")
    assert gitrepo.find_repo(tmp_path / "gone" / "ensemble.yaml") is None


def test_a_failing_command_names_itself_and_gits_message(tmp_path: Path) -> None:
    with pytest.raises(GitError, match=r"git rev-parse failed: fatal: not a git repository"):
        gitrepo.output(tmp_path, "rev-parse", "HEAD")


def test_file_at_keeps_the_text_byte_for_byte(project: Project) -> None:
    project.write("one\n\n\n", name="notes.txt")
    head = git(project.root, "rev-parse", "HEAD").strip()
    assert gitobjects.file_at(project.root, head, "notes.txt") == "one\n\n\n"
    assert gitobjects.file_at(project.root, head[:10], "notes.txt") == "one\n\n\n"
    assert gitobjects.file_at(project.root, head, "missing.txt") is None
    assert gitobjects.file_at(project.root, "0" * 40, "notes.txt") is None
    assert gitobjects.file_at(project.root, "no-such-branch", "notes.txt") is None


def test_file_at_reads_paths_relative_to_a_subdirectory(project: Project) -> None:
    project.write("inner\n", name="sub/notes.txt")
    head = git(project.root, "rev-parse", "HEAD").strip()
    assert gitobjects.file_at(project.root / "sub", head, "notes.txt") == "inner\n"


def test_history_reads_nothing_outside_a_repository(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x\n")
    assert gitobjects.file_at(tmp_path, "HEAD", "notes.txt") is None


def test_versions_lists_a_files_texts_newest_first(project: Project, tmp_path: Path) -> None:
    for text in ("v1\n", "v2\n", "v3\n"):
        project.write(text, name="sub/spec.yaml")
    assert list(gitobjects.versions(project.root / "sub" / "spec.yaml", 2)) == ["v3\n", "v2\n"]
    assert list(gitobjects.versions(project.root / "sub" / "never.yaml", 2)) == []
    outside = tmp_path / "outside"
    outside.mkdir()
    assert list(gitobjects.versions(outside / "spec.yaml", 5)) == []


def test_commit_takes_only_the_given_paths(project: Project) -> None:
    project.write("mine\n", name="mine.txt", commit=False)
    project.write("theirs\n", name="theirs.txt", commit=False)
    git(project.root, "add", "theirs.txt")
    repo = gitrepo.find_repo(project.root)
    assert repo is not None
    sha = repo.commit([project.root / "mine.txt"], "only mine")
    assert git(project.root, "show", "--name-only", "--format=", sha).split() == ["mine.txt"]
    assert git(project.root, "diff", "--cached", "--name-only").split() == ["theirs.txt"]


def test_committing_records_already_committed_is_that_commit_not_an_error(
    project: Project,
) -> None:
    """A job killed after its commit, resumed: the records it writes again are the ones
    already committed, so the commit that holds them is the job's (found by the
    kill-anywhere property test, where resume used to fail with "nothing to commit")."""
    project.write("records\n", name="records.txt", commit=False)
    project.write("someone else's\n", name="untracked.txt", commit=False)
    repo = gitrepo.find_repo(project.root)
    assert repo is not None
    first = repo.commit([project.root / "records.txt"], "the job")
    again = repo.commit([project.root / "records.txt"], "the job, resumed")
    assert again == first
    assert git(project.root, "log", "--format=%s").splitlines()[0] == "the job"


def _git_commands(path: Path) -> list[int]:
    """Lines of list or tuple literals that start with the string "git": a git command
    line built to be run by subprocess."""
    lines = []
    for node in sources.nodes(path):
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value == "git":
                lines.append(node.lineno)
    return lines


def test_no_module_but_the_git_layer_runs_git() -> None:
    package = ROOT / "unfurl_lite"
    found = {str(p.relative_to(ROOT)): lines for p in sources.python_files(package)
             if p.name != "gitrepo.py" and (lines := _git_commands(p))}
    assert found == {}
    assert _git_commands(package / "load" / "gitrepo.py") != []


def test_gitpython_reads_history_and_nothing_else() -> None:
    """GitPython is a dependency for one job: reading earlier versions of files (one
    cat-file process for many reads); jobs run the git command (see above)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert [d for d in project["dependencies"] if d.lower().startswith("gitpython")]
    importers = set()
    for path in sources.python_files(ROOT / "unfurl_lite"):
        for node in sources.nodes(path):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "git" or n.startswith("git.") for n in names):
                importers.add(path.relative_to(ROOT).as_posix())
    assert importers == {"unfurl_lite/load/gitobjects.py"}


def test_update_uninstalls_a_removed_template_of_an_ensemble_in_a_subdirectory(
    project: Project, invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The removed template's operations come from the ensemble's git history, which is
    found for an ensemble below the repository's root too."""
    from tests.conftest import safe_load
    from tests.plan.test_workflows import LOG, ensemble, ensemble_data, node, ok, yaml_text

    sub = "envs/prod"
    project.write(f"{sub}/{LOG}\njobs/*.log\n", name=".gitignore")
    templates = {"keep": node(), "old": node()}
    project.write(ensemble(templates), name=f"{sub}/ensemble.yaml")
    path = f"{sub}/ensemble.yaml"
    monkeypatch.chdir(project.root / sub)
    ok(invoke("deploy", "--approve"))
    doc = safe_load((project.root / path).read_text())
    del templates["old"]
    doc["spec"] = ensemble_data(templates)["spec"]
    project.write(yaml_text(doc), name=path)
    (project.root / sub / LOG).unlink()
    ok(invoke("update", "--approve"))
    assert (project.root / sub / LOG).read_text().splitlines() == ["old stop", "old delete"]


def test_git_operations_leave_the_callers_environment_alone(project: Project) -> None:
    """The git environment is passed to each git process, never set in the library
    user's own process."""
    code = ("import os\nfrom pathlib import Path\nfrom unfurl_lite.load import gitrepo\n"
            "before = dict(os.environ)\n"
            "repo = gitrepo.find_repo(Path('.'))\nrepo.dirty_files()\n"
            "print('SAME', before == dict(os.environ), 'git' in __import__('sys').modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=project.root, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "SAME True False" in done.stdout, done.stdout + done.stderr


def test_head_is_read_however_git_stores_it(project: Project, tmp_path: Path) -> None:
    """Loose and packed refs, a detached HEAD, a linked worktree, a subdirectory; before
    the first commit there is none."""
    head = git(project.root, "rev-parse", "HEAD").strip()
    repo = gitrepo.find_repo(project.root / "ensemble.yaml")
    assert repo is not None and repo.root == project.root.resolve()
    assert repo.head() == head
    git(project.root, "pack-refs", "--all")
    (project.root / "sub").mkdir()
    assert gitrepo.head_of(project.root / "sub") == head
    git(project.root, "worktree", "add", "-q", "-b", "other", str(tmp_path / "wt"))
    linked = gitrepo.find_repo(tmp_path / "wt")
    assert linked is not None and linked.head() == head
    assert linked.index_lock() == project.root / ".git" / "worktrees" / "wt" / "index.lock"
    git(project.root, "checkout", "-q", "--detach")
    assert repo.head() == head
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    assert gitrepo.Repo(fresh).head() is None
    with pytest.raises(GitError, match="not in a git repository"):
        gitrepo.head_of(tmp_path)


def test_a_commit_waits_for_another_git_process_holding_the_branch(project: Project) -> None:
    """Jobs on two ensembles of one repository commit at once: git refuses the second
    while the first holds the branch's ref ("cannot lock ref"); it is run again, as for the
    index, instead of failing the job."""
    path = project.write("a: 1\n", name="a.yaml")
    path.write_text("a: 2\n")
    branch = git(project.root, "symbolic-ref", "HEAD").strip()
    lock = project.root / ".git" / f"{branch}.lock"
    lock.write_text("")  # what a commit of another job holds while it moves the branch
    release = threading.Timer(0.3, lock.unlink)
    release.start()
    try:
        head = gitrepo.Repo(project.root).commit([path], "second job")
    finally:
        release.join()
    assert git(project.root, "rev-parse", "HEAD").strip() == head
    assert git(project.root, "log", "-1", "--format=%s").strip() == "second job"


def test_a_commit_stages_again_what_another_jobs_index_write_dropped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three ensembles of one repository committing at once: a job on another ensemble
    may write the index it read before this job's `git add`, and the staged records are
    gone when the commit names them ("did not match any file(s) known to git"). The commit
    stages them again instead of failing the job. Here the other job is played by a `git`
    that unstages the paths before the first commit it is asked for."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "ada@example.com")
    git(repo, "config", "user.name", "Ada")
    (repo / "kept.txt").write_text("first\n")
    git(repo, "add", "kept.txt")
    git(repo, "commit", "-qm", "first")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    once = tmp_path / "dropped-once"
    (bin_dir / "git").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = commit ] && [ ! -e {once} ]; then : > {once}; '
        f"{REAL_GIT} rm -q --cached -- three/jobs.tsv; fi\n"
        f'exec {REAL_GIT} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (repo / "three").mkdir()
    (repo / "three" / "jobs.tsv").write_text("a record\n")
    head = gitrepo.Repo(repo).commit([repo / "three" / "jobs.tsv"], "the job's records")
    assert once.exists()  # the first commit did meet an index without the record
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert git(repo, "show", "--name-only", "--format=", "HEAD").strip() == "three/jobs.tsv"


def test_a_commits_meanwhile_runs_once_while_git_add_runs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The job's next plan overlaps git's work: ``meanwhile`` is called once, when the
    first git process has started and before it is waited for. Here `git add` waits for
    the file ``meanwhile`` writes (and fails after five seconds without it), so a call
    made only once git has ended fails the commit."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "ada@example.com")
    git(repo, "config", "user.name", "Ada")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    flag = tmp_path / "meanwhile"
    (bin_dir / "git").write_text(
        "#!/bin/sh\n"
        'if [ "$1" = add ]; then i=0; '
        f"while [ ! -e {flag} ]; do i=$((i+1)); [ $i -gt 500 ] && exit 7; sleep 0.01; done; fi\n"
        f'exec {REAL_GIT} "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    (repo / "jobs.tsv").write_text("a record\n")
    calls: list[bool] = []

    def meanwhile() -> None:
        calls.append(flag.exists())
        flag.write_text("")

    head = gitrepo.Repo(repo).commit([repo / "jobs.tsv"], "the job's records", meanwhile)
    assert calls == [False]
    assert git(repo, "show", "--name-only", "--format=", head).strip() == "jobs.tsv"
