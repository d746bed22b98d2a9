"""The parse cache never serves one project's ensemble to another, nor an entry it cannot
trust: the same text means what *this* project's included files make it mean."""

from __future__ import annotations

import marshal
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ensemble_yaml, examples, git, run_unfurl, suppressed
from unfurl_lite.errors import InputError
from unfurl_lite.load import parsecache
from unfurl_lite.load.loader import load_ensemble

ENSEMBLE = ensemble_yaml("""\
deployer:
  type: tosca.nodes.Root
  +include: env.yaml
  interfaces:
    Standard:
      operations:
        create:
          implementation: {className: Shell}
          inputs:
            command: "echo deploying to {{ SELF.cluster }} > out.txt"
""")


def new_project(root: Path, env: str | None, ensemble: str = ENSEMBLE) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "test@example.com")
    git(root, "config", "user.name", "Test")
    (root / "ensemble.yaml").write_text(ensemble)
    if env is not None:
        (root / "env.yaml").write_text(env)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def cluster_of(root: Path) -> object:
    return load_ensemble(root / "ensemble.yaml").topology.templates["deployer"].properties.get(
        "cluster")


def test_same_ensemble_text_in_two_projects_uses_each_projects_own_include(
    tmp_path: Path, parse_cache: Path
) -> None:
    staging = new_project(tmp_path / "staging", "properties: {cluster: staging-cluster}\n")
    prod = new_project(tmp_path / "prod", "properties: {cluster: prod-cluster}\n")
    env = {"UNFURL_LITE_CACHE": str(parse_cache)}
    for root in (staging, prod):
        result = run_unfurl(root, "deploy", "--approve", env=env)
        assert result.returncode == 0, result.stdout + result.stderr
    assert (staging / "out.txt").read_text() == "deploying to staging-cluster\n"
    assert (prod / "out.txt").read_text() == "deploying to prod-cluster\n"


def test_an_edited_include_in_a_fresh_project_runs_that_projects_command(
    tmp_path: Path, parse_cache: Path
) -> None:
    text = ensemble_yaml("web:\n  type: example.T\n").replace(
        "  service_template:\n", "  service_template:\n    +include: types.yaml\n")
    types = textwrap.dedent("""\
        node_types:
          example.T:
            derived_from: tosca.nodes.Root
            interfaces:
              Standard:
                operations:
                  create:
                    implementation: {className: Shell}
                    inputs: {command: "echo %s > out.txt"}
        """)
    first = new_project(tmp_path / "first", None, text)
    (first / "types.yaml").write_text(types % "first")
    assert run_unfurl(first, "deploy", "--approve",
                      env={"UNFURL_LITE_CACHE": str(parse_cache)}).returncode == 0
    fresh = new_project(tmp_path / "fresh", None, text)
    (fresh / "types.yaml").write_text(types % "edited")
    result = run_unfurl(fresh, "deploy", "--approve", env={"UNFURL_LITE_CACHE": str(parse_cache)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert (fresh / "out.txt").read_text() == "edited\n"


ENVS = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]).map(
    lambda c: f"properties: {{cluster: {c}}}\n"))


@settings(max_examples=examples(15),
          suppress_health_check=suppressed(HealthCheck.function_scoped_fixture))
@given(envs=st.lists(ENVS, min_size=2, max_size=3),
       steps=st.lists(st.tuples(st.integers(0, 2), st.one_of(st.none(), ENVS)), max_size=5),
       optional=st.booleans())
def test_projects_sharing_text_always_see_their_own_includes(
    tmp_path_factory: pytest.TempPathFactory, envs: list[str | None],
    steps: list[tuple[int, str | None]], optional: bool,
) -> None:
    """Several projects with one ensemble text, differing in env.yaml (absent, or a cluster),
    loaded in any order while their env.yaml files are edited, created or removed: every load
    gives what a parse of that project (without the cache) gives."""
    base = tmp_path_factory.mktemp("projects")
    text = ENSEMBLE.replace("+include:", "+?include:") if optional else ENSEMBLE
    roots = [base / f"p{n}" for n in range(len(envs))]
    for root, env in zip(roots, envs, strict=True):
        root.mkdir()
        (root / "ensemble.yaml").write_text(text)
        if env is not None:
            (root / "env.yaml").write_text(env)
    for index, edit in [(n, envs[n]) for n in range(len(envs))] + steps:
        root = roots[index % len(roots)]
        if edit is None:
            (root / "env.yaml").unlink(missing_ok=True)
        else:
            (root / "env.yaml").write_text(edit)
        for each in roots:
            env_file = each / "env.yaml"
            if env_file.exists():
                expected: object = env_file.read_text().split("cluster: ")[1].rstrip("}\n")
            elif optional:
                expected = None
            else:
                with pytest.raises(InputError):
                    load_ensemble(each / "ensemble.yaml")
                continue
            assert cluster_of(each) == expected


# ------------------------------------------------------------ entries that are not to be trusted


@pytest.fixture
def poisoned(tmp_path: Path, parse_cache: Path) -> Path:
    """A project whose cache entry has been rewritten to say cluster "poisoned": the entry is
    otherwise well formed, so only the checks on who wrote it stand between it and a job."""
    root = new_project(tmp_path / "p", "properties: {cluster: real}\n")
    assert cluster_of(root) == "real"
    (entry,) = parse_cache.glob("*.marshal")
    data = marshal.loads(entry.read_bytes())
    data["data"]["spec"]["service_template"]["topology_template"]["node_templates"][
        "deployer"]["properties"]["cluster"] = "poisoned"
    entry.write_bytes(marshal.dumps(data))
    entry.chmod(0o600)
    assert cluster_of(root) == "poisoned"  # our own private entry is trusted: the control
    return root


def the_entry(parse_cache: Path) -> Path:
    (entry,) = parse_cache.glob("*.marshal")
    return entry


def test_an_entry_written_by_another_user_is_ignored(
    poisoned: Path, parse_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = the_entry(parse_cache)
    if os.geteuid() == 0:
        os.chown(entry, 4321, 4321)
    else:  # as an ordinary user we cannot give a file away: be another user instead
        real = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: real + 1)
    assert cluster_of(poisoned) == "real"


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o606, 0o000])
def test_an_entry_others_can_read_or_write_or_nobody_can_read_is_ignored(
    poisoned: Path, parse_cache: Path, mode: int
) -> None:
    the_entry(parse_cache).chmod(mode)
    assert cluster_of(poisoned) == "real"


def test_a_symlinked_entry_is_ignored(poisoned: Path, parse_cache: Path, tmp_path: Path) -> None:
    entry = the_entry(parse_cache)
    elsewhere = tmp_path / "elsewhere.marshal"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    assert cluster_of(poisoned) == "real"


@pytest.mark.parametrize("payload", [b"", b"\x00garbage", marshal.dumps([1, 2]),
                                     marshal.dumps({"data": 1})[:-3],
                                     marshal.dumps({"data": {}, "deps": {}})])
def test_a_corrupt_or_keyless_entry_is_a_miss_not_a_traceback(
    tmp_path: Path, parse_cache: Path, payload: bytes
) -> None:
    root = new_project(tmp_path / "p", "properties: {cluster: real}\n")
    assert cluster_of(root) == "real"
    entry = the_entry(parse_cache)
    entry.write_bytes(payload)
    entry.chmod(0o600)
    assert cluster_of(root) == "real"
    result = run_unfurl(root, "deploy", "--approve", env={"UNFURL_LITE_CACHE": str(parse_cache)})
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert (root / "out.txt").read_text() == "deploying to real\n"


def test_an_entry_naming_files_outside_its_project_is_ignored(
    poisoned: Path, parse_cache: Path, tmp_path: Path
) -> None:
    entry = the_entry(parse_cache)
    data = marshal.loads(entry.read_bytes())
    outside = tmp_path / "outside.yaml"
    outside.write_text("x: 1\n")
    data["deps"] = {str(outside): parsecache.file_digest(outside)}
    entry.write_bytes(marshal.dumps(data))
    assert cluster_of(poisoned) == "real"


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_a_cache_directory_others_can_write_is_neither_read_nor_written(
    tmp_path: Path, parse_cache: Path, mode: int
) -> None:
    root = new_project(tmp_path / "p", "properties: {cluster: real}\n")
    parse_cache.chmod(mode)
    assert cluster_of(root) == "real"
    assert list(parse_cache.iterdir()) == []


def test_a_symlinked_cache_directory_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "target"
    target.mkdir(mode=0o700)
    link = tmp_path / "cache"
    link.symlink_to(target)
    monkeypatch.setenv("UNFURL_LITE_CACHE", str(link))
    root = new_project(tmp_path / "p", "properties: {cluster: real}\n")
    assert cluster_of(root) == "real"
    assert list(target.iterdir()) == []


def test_the_cli_with_a_foreign_cache_directory_still_deploys(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    root = new_project(tmp_path / "p", "properties: {cluster: real}\n")
    result = run_unfurl(root, "deploy", "--approve", env={"UNFURL_LITE_CACHE": str(cache)})
    assert result.returncode == 0, result.stderr
    assert (root / "out.txt").read_text() == "deploying to real\n"
    assert subprocess.run(["ls", "-A", str(cache)], capture_output=True, text=True).stdout == ""


def test_a_change_to_the_validating_code_is_a_new_cache_key(tmp_path):
    """A checkout moved to another commit keeps its version number: the cache key must
    still change, or the old code's verdict on an ensemble would be reused."""
    import os

    from unfurl_lite.load.parsecache import VALIDATING, code_stamp

    for folder in VALIDATING:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "rules.py").write_text("RULE = 1\n")
    before = code_stamp(tmp_path)
    assert code_stamp(tmp_path) == before
    rules = tmp_path / "load" / "rules.py"
    rules.write_text("RULE = 2\n")
    os.utime(rules, ns=(1, 1))
    assert code_stamp(tmp_path) != before
    (tmp_path / "cli.py").write_text("# not validating code\n")
    stamp = code_stamp(tmp_path)
    (tmp_path / "cli.py").write_text("# changed\n")
    assert code_stamp(tmp_path) == stamp


@pytest.mark.parametrize("size", [0, 1, parsecache.LARGE - 1, parsecache.LARGE,
                                  parsecache.LARGE + 1])
def test_a_digest_is_sha256_on_either_side_of_the_large_size(size: int) -> None:
    import hashlib  # the reference: OpenSSL's SHA-256

    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert parsecache.large_digest(data) == hashlib.sha256(data).digest()


def test_a_large_ensemble_is_found_again_in_the_cache(tmp_path: Path, parse_cache: Path) -> None:
    """Past the size where OpenSSL digests the text, the entry stored is the one the next
    load finds (shown by editing the stored entry: the next load says what it says)."""
    padding = "p" * (parsecache.LARGE + 10)
    root = new_project(tmp_path / "p", None, ensemble_yaml(f"""\
deployer:
  type: tosca.nodes.Root
  properties:
    cluster: real
    padding: {padding}
"""))
    assert cluster_of(root) == "real"
    entry = the_entry(parse_cache)
    data = marshal.loads(entry.read_bytes())
    data["data"]["spec"]["service_template"]["topology_template"]["node_templates"][
        "deployer"]["properties"]["cluster"] = "edited"
    entry.write_bytes(marshal.dumps(data))
    assert cluster_of(root) == "edited"
