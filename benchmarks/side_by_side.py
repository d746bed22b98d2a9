"""Run the real-Unfurl corpus (tests/data/unfurl-cases/) in Unfurl 1.2.0 and here, side by side.

Not part of the test suite: run on demand, with Unfurl 1.2.0 installed in a virtualenv:

    python benchmarks/side_by_side.py [--unfurl PATH] [--capture] [--markdown FILE] [CASE ...]

Each case is a folder holding an ``ensemble.yaml`` (and the files it includes) and an
optional ``case.yaml`` (``description``, ``source``, ``env``: variables for every step,
``steps``: a subset of STEPS and EXTRA_STEPS, in the order they run, ``compare``: what
else to compare (``lastJob``: its workflow, readyState and summary), ``args``: per step,
more arguments given to both tools (an option a case exercises, e.g. ``deploy:
[--check]``), ``before``: per step, a shell command run in the scratch repo and committed
before the step (e.g. an edit of the ensemble)).
For each tool the case is copied into a scratch git repo
and the steps run one after another: validate, plan, deploy, a second deploy, check,
undeploy. After each step the harness takes a *snapshot*: the exit status, each
instance's readyState / created / protected / attributes / host, the outputs, the
jobs.tsv rows the step added and whether it made a commit, with time-dependent values
(changeIds, times, commit hashes, digests, the scratch path) normalised.

Each case is then classified:

- ``same``: every step's snapshot is equal;
- ``refused here``: unfurl-lite's validate exits 1 naming the construct as not supported
  (the compatibility rule's other half);
- ``refused by Unfurl``: Unfurl 1.2.0 itself does not load it (validate or deploy exit 1);
- ``DIFFERENT``: a silent difference; what differs is printed.

``--capture`` writes Unfurl's side into each case's ``expected/`` (``STEP.json`` snapshots,
``STEP.console.txt``) and the classification into ``expected/verdict.json``, which
tests/cli/test_unfurl_cases.py checks our side against without Unfurl installed.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "data" / "unfurl-cases"
UNFURL = Path(os.environ.get("UNFURL120_VENV", "/work/unfurl120")) / "bin" / "unfurl"

STEPS = ("validate", "plan", "deploy", "deploy2", "check", "undeploy")
_JOB = ["--dirty=ok", "--commit", "--jobexitcode", "error"]
#: Unfurl's check and plan reject --approve; ours accept it (and check asks without it).
ARGS: dict[str, dict[str, list[str]]] = {
    "unfurl": {
        "validate": ["validate", "ensemble.yaml"],
        "plan": ["plan", "ensemble.yaml"],
        "deploy": ["deploy", "--approve", *_JOB, "ensemble.yaml"],
        "deploy2": ["deploy", "--approve", *_JOB, "ensemble.yaml"],
        "check": ["check", *_JOB, "ensemble.yaml"],
        "undeploy": ["undeploy", "--approve", *_JOB, "ensemble.yaml"],
        "discover": ["discover", "--approve", *_JOB, "ensemble.yaml"],
        "stop": ["stop", "--approve", *_JOB, "ensemble.yaml"],
    },
    "lite": {
        "validate": ["validate", "ensemble.yaml"],
        "plan": ["plan", "ensemble.yaml"],
        "deploy": ["deploy", "--approve", *_JOB, "ensemble.yaml"],
        "deploy2": ["deploy", "--approve", *_JOB, "ensemble.yaml"],
        "check": ["check", "--approve", *_JOB, "ensemble.yaml"],
        "undeploy": ["undeploy", "--approve", *_JOB, "ensemble.yaml"],
        "discover": ["discover", "--approve", *_JOB, "ensemble.yaml"],
        "stop": ["stop", "--approve", *_JOB, "ensemble.yaml"],
    },
}
#: steps a case may name in its ``steps`` besides the default ones
EXTRA_STEPS = ("discover", "stop")
#: what a case's ``compare`` may add to the snapshot: lastJob's fields (``lastJob``)
LAST_JOB_KEYS = ("workflow", "readyState", "summary")

#: A changeId: "A" + 7 time digits + 4 hex digits (Unfurl's form, and ours).
CHANGE_ID = re.compile(r"\bA[0-9A-Za-z]{7}[0-9A-Fa-f]{4}\b")
TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[-T ]\d{2}[-:]\d{2}[-:]\d{2}([-.]\d+)?\b")
HEX40 = re.compile(r"\b[0-9a-f]{40}\b")
#: what labels make of the volatile values (``to_dns_label`` of get_ensemble_metadata):
#: a changeId in lower case, a commit's first 8 digits (x first when they start with a
#: number), the scratch path (the harness's temporary directory, ``side-by-side-*``)
CHANGE_ID_LABEL = re.compile(r"\ba[0-9a-z]{7}[0-9a-f]{4}\b")
SHORT_COMMIT = re.compile(r"\bx?([0-9a-f]{8})\b")  # a label starts with a letter
SCRATCH_LABEL = re.compile(r"\btmpside-by-side-[a-z0-9-]*")
#: jobs.tsv columns whose values can never match between two runs.
VOLATILE_COLUMNS = {"startTime", "endTime", "specDigest", "startCommit", "changelog",
                    "digestValue"}
REFUSAL_WORDS = ("not supported", "unsupported", "is not implemented", "not available here")
INSTANCE_KEYS = ("template", "readyState", "created", "protected", "attributes", "host")

#: Runs one step of a case in a repo: (repo, command line, environment) -> (exit status,
#: console); the command line is the tool's arguments for the step (see step_args).
Runner = Callable[[Path, list[str], dict[str, str]], tuple[int, str]]


def case_order(case: Path) -> tuple[int, str]:
    """Cases in the order of their numbers (``9-`` before ``10-`` before ``100-``)."""
    number, _, rest = case.name.partition("-")
    return (int(number), rest) if number.isdigit() else (1 << 30, case.name)


def all_cases() -> list[Path]:
    return sorted((p for p in CASES.iterdir() if (p / "ensemble.yaml").exists()), key=case_order)


def load_yaml(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text()) if path.exists() else None


def parse_yaml(text: str) -> Any:
    """The ensemble's data; an unreadable ensemble as a mapping that says so (compared as
    any other value)."""
    try:
        try:
            return YAML(typ="safe").load(text) or {}
        except Exception:  # the safe loaders refuse plain scalars with ':' in flow mappings
            return json.loads(json.dumps(YAML(typ="rt").load(text) or {}, default=str))
    except Exception as error:
        # Unfurl 1.2.0 may save a spec that strict YAML rejects (a flow mapping holding
        # `get_attribute: [...]`): the status section alone is what is compared
        start = text.find("\nstatus:")
        if start >= 0:
            with contextlib.suppress(Exception):
                return YAML(typ="safe").load(text[start:]) or {}
        return {"status": {"outputs": {"<unreadable ensemble>": str(error).splitlines()[0]}}}


@functools.cache
def case_settings(case: Path) -> dict[str, Any]:
    """The case's case.yaml (read once: each step asks for it again; never change it)."""
    return load_yaml(case / "case.yaml") or {}


def case_steps(case: Path) -> list[str]:
    return list(case_settings(case).get("steps") or STEPS)


def step_args(case: Path, tool: str, step: str) -> list[str]:
    """The step's command line for ``tool``: the harness's, with the case's ``args`` for the
    step placed before the ensemble's path."""
    base = ARGS[tool][step]
    extra = [str(a) for a in (case_settings(case).get("args") or {}).get(step) or ()]
    return [*base[:-1], *extra, base[-1]]


def run_before(case: Path, repo: Path, step: str) -> None:
    """The case's ``before`` command for the step (an edit between steps), committed."""
    command = (case_settings(case).get("before") or {}).get(step)
    if not command:
        return
    subprocess.run(["sh", "-c", command], cwd=repo, check=True, capture_output=True)
    for args in (["add", "-A"], ["commit", "-q", "--allow-empty", "-m", f"before {step}"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


_IDENTITY = "[user]\n\temail = side@by.side\n\tname = side-by-side\n"


def make_repo(case: Path, into: Path) -> Path:
    """A scratch git repo holding the case's files (not its captures), one commit."""
    repo = into / case.name
    shutil.copytree(case, repo, ignore=shutil.ignore_patterns("expected", "case.yaml"))
    subprocess.run(["git", "init", "-q", "-b", "main", "--template="], cwd=repo, check=True,
                   capture_output=True)  # no sample hooks: fewer files to write
    with open(repo / ".git" / "config", "a") as config:  # no git process for the identity
        config.write(_IDENTITY)
    for args in (["add", "-A"], ["commit", "-q", "-m", "the case"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def head(repo: Path) -> str:
    """The commit HEAD names, read from .git without starting git (a step is compared by
    whether it moved)."""
    git = repo / ".git"
    ref = (git / "HEAD").read_text().strip()
    if not ref.startswith("ref: "):
        return ref
    name = ref[len("ref: "):]
    loose = git / name
    if loose.exists():
        return loose.read_text().strip()
    packed = git / "packed-refs"
    for line in packed.read_text().splitlines() if packed.exists() else ():
        if line.endswith(" " + name):
            return line.split(" ", 1)[0]
    return ""


class Normaliser:
    """Replaces what differs between any two runs with stable tokens: a changeId becomes
    ``STEP:NNNN`` (the step whose job made it, and the task's number), times ``<time>``,
    commit hashes ``<commit>``, the scratch path ``<repo>``."""

    def __init__(self, repo: Path) -> None:
        self.repo = str(repo)
        self.jobs: dict[str, str] = {}
        self.step = ""
        self.commits: set[str] = set()  # the first 8 digits of the step's commits

    def text(self, value: str) -> str:
        value = value.replace(self.repo, "<repo>")
        value = CHANGE_ID.sub(lambda m: self._change_id(m.group(0)), value)
        value = CHANGE_ID_LABEL.sub(lambda m: self._change_id_label(m.group(0)), value)
        value = SCRATCH_LABEL.sub("<repo-label>", value)
        value = TIMESTAMP.sub("<time>", value)
        value = HEX40.sub("<commit>", value)
        return SHORT_COMMIT.sub(
            lambda m: "<commit>" if m.group(1) in self.commits else m.group(0), value)

    def _change_id(self, change_id: str) -> str:
        job = self.jobs.setdefault(change_id[:8], self.step)
        return f"{job}:{change_id[8:]}"

    def _change_id_label(self, label: str) -> str:
        """A changeId seen before, in lower case (its label): the same token, lowered."""
        for prefix, job in self.jobs.items():
            if prefix.lower() == label[:8]:
                return f"{job}:{label[8:]}".lower()
        return label

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {str(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.data(v) for v in value]
        return value


def flatten(instances: dict[str, Any] | None, host: str | None = None) -> dict[str, dict]:
    """Unfurl nests an instance under its host's ``instances:``; one flat map, with the host."""
    flat: dict[str, dict] = {}
    for name, record in (instances or {}).items():
        record = dict(record or {})
        nested = record.pop("instances", None)
        record["host"] = host
        flat[name] = record
        flat.update(flatten(nested, name))
    return flat


def parse_jobs(text: str) -> list[dict[str, str]]:
    """jobs.tsv's rows as mappings, without the columns that never match between runs."""
    rows = []
    for line in text.splitlines():
        fields = line.split("\t")
        if not fields[0]:
            continue
        row = {"changeId": fields[0]}
        for field in fields[1:]:
            key, _, value = field.partition("=")
            if key == "digestPut":  # Unfurl joins a Python set: its order is arbitrary
                value = ",".join(sorted(filter(None, value.split(","))))
            if key not in VOLATILE_COLUMNS:
                row[key] = value
        rows.append(row)
    return rows


def raw_step(repo: Path, code: int, console: str, head_before: str) -> dict[str, Any]:
    """What a step left: its exit status and console, the ensemble and jobs.tsv as text,
    whether it committed. Captured as is; normalised only when compared."""
    ensemble, jobs = repo / "ensemble.yaml", repo / "jobs.tsv"
    label = repo_label(repo)

    def scrubbed(text: str) -> str:
        return label.sub("<repo-label>", text.replace(str(repo), "<repo>"))

    return {
        "exit": code,
        "console": scrubbed(re.sub(r"\x1b\[[0-9;]*m", "", console)),
        "ensemble": scrubbed(ensemble.read_text()) if ensemble.exists() else "",
        "jobs_tsv": scrubbed(jobs.read_text()) if jobs.exists() else "",
        "committed": head(repo) != head_before,
    }


def repo_label(repo: Path) -> re.Pattern[str]:
    """The scratch repository's path as a label (``to_dns_label`` of get_ensemble_metadata's
    ``unfurlproject``: the path without its leading slash and extension, an ``x`` first
    when it starts with no letter; every character but a letter, a digit or ``-`` dropped
    from a path longer than 63 characters, made ``--`` in a shorter one; lower case; long
    ones cut and hashed): known by its first 16 characters, whatever the tool cut after
    them. A scratch folder such as ``mktemp -d``'s ``/tmp/tmp.AbC`` keeps no ``.`` in its
    label."""
    text = os.path.splitext(str(repo).strip("/"))[0]
    if text and not re.match("[a-zA-Z]", text[0]):
        text = "x" + text
    start = re.sub(r"[^a-zA-Z0-9-]", "" if len(text) > 63 else "--", text).lower()[:16]
    return re.compile(rf"\b{re.escape(start)}[a-z0-9-]*")


def snapshots(raw: dict[str, dict[str, Any]],
              compare: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """The comparable view of each step, in order: changeIds named after the step whose
    job made them (so the same task in two runs has the same token); ``compare``: the
    case's extra fields (``lastJob``)."""
    norm = Normaliser(Path("<repo>"))
    shots: dict[str, dict[str, Any]] = {}
    rows_before = 0
    for step, step_raw in raw.items():
        norm.step = step
        norm.commits = {c[:8] for c in HEX40.findall(step_raw["ensemble"] + step_raw["jobs_tsv"])}
        doc = parse_yaml(step_raw["ensemble"])
        status = (doc.get("status") or {}) if isinstance(doc, dict) else {}
        instances = {
            name: {key: record[key] for key in INSTANCE_KEYS if record.get(key) is not None}
            for name, record in flatten(status.get("instances")).items()
        }
        rows = parse_jobs(step_raw["jobs_tsv"])
        shots[step] = norm.data({
            "exit": step_raw["exit"],
            "instances": dict(sorted(instances.items())),
            "outputs": status.get("outputs") or {},
            "jobs": rows[rows_before:],
            "committed": step_raw["committed"],
        })
        if "lastJob" in compare:
            last = (doc.get("lastJob") or {}) if isinstance(doc, dict) else {}
            shots[step]["lastJob"] = {k: last.get(k) for k in LAST_JOB_KEYS if k in last}
        shots[step]["console"] = step_raw["console"]
        rows_before = len(rows)
    return shots


def run_case(case: Path, runner: Runner, scratch: Path,
             steps: Iterable[str] | None = None, tool: str = "lite") -> dict[str, dict[str, Any]]:
    """Run the case's steps with one tool (``runner``, whose arguments are ``tool``'s): what
    each step left, in order. Stops after a validate that refused the case."""
    repo = make_repo(case, scratch)
    env = {str(k): str(v) for k, v in (case_settings(case).get("env") or {}).items()}
    results: dict[str, dict[str, Any]] = {}
    for step in steps or case_steps(case):
        run_before(case, repo, step)
        head_before = head(repo)
        code, console = runner(repo, step_args(case, tool, step), env)
        results[step] = raw_step(repo, code, console, head_before)
        if step == "validate" and code != 0:
            break
    return results


FORKSERVER = Path(__file__).resolve().parent / "forkserver.py"
#: what the fork servers import once (the rest each step imports in its own child)
PRELOAD = {
    "unfurl": ["unfurl.__main__:main", "unfurl.job", "unfurl.yamlmanifest", "unfurl.localenv",
               "unfurl.configurators.shell", "unfurl.configurators"],
    "lite": ["unfurl_lite.cli:main", "unfurl_lite.cli.main", "unfurl_lite.api.jobs"],
}


class ForkServer:
    """One tool's fork server (benchmarks/forkserver.py): a step in a fresh child process
    without the interpreter's start-up and the tool's imports."""

    def __init__(self, python: str, tool: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [python, str(FORKSERVER), *PRELOAD[tool]], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env=env)

    def run(self, repo: Path, args: list[str], env: dict[str, str]) -> tuple[int, str]:
        assert self.process.stdin and self.process.stdout
        output = repo.parent / f"{repo.name}.step-output"
        request = {"cwd": str(repo), "args": args, "env": env, "output": str(output)}
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the fork server for {args} stopped")
        return json.loads(answer)["exit"], output.read_text(errors="replace")

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=60)


class ForkServers:
    """A fork server per tool and thread (cases run in parallel threads), closed at exit."""

    def __init__(self, unfurl: Path) -> None:
        self.unfurl = unfurl
        self.local = threading.local()
        self.all: list[ForkServer] = []
        self.lock = threading.Lock()

    def _server(self, tool: str) -> ForkServer:
        server = getattr(self.local, tool, None)
        if server is None:
            if tool == "unfurl":
                python, env = str(self.unfurl.parent / "python3"), dict(os.environ)
            else:
                python, env = sys.executable, {**os.environ, "PYTHONPATH": str(ROOT)}
            server = ForkServer(python, tool, env)
            setattr(self.local, tool, server)
            with self.lock:
                self.all.append(server)
        return server

    def runner(self, tool: str) -> Runner:
        def run(repo: Path, args: list[str], env: dict[str, str]) -> tuple[int, str]:
            if tool == "unfurl":
                args = ["--home", "", *args]
            return self._server(tool).run(repo, args, env)
        return run

    def close(self) -> None:
        for server in self.all:
            server.close()


def refused_by_name(shot: dict[str, Any]) -> bool:
    console = shot["console"].lower()
    return shot["exit"] == 1 and any(word in console for word in REFUSAL_WORDS)


def unfurl_refused(theirs: dict[str, dict[str, Any]]) -> bool:
    """Unfurl does not load the case: validate fails, deploy exits 1, or deploy could not
    even create its job (exit 64 with nothing recorded)."""
    if theirs.get("validate", {}).get("exit", 0) != 0:
        return True
    deploy = theirs.get("deploy", {})
    if "could not create job" in deploy.get("console", "") and not deploy.get("jobs"):
        return True
    return deploy.get("exit", 0) not in (0, 64)


def differences(theirs: dict[str, dict[str, Any]], ours: dict[str, dict[str, Any]],
                steps: Iterable[str]) -> list[str]:
    """What differs, one line per step and field (the console text is never compared)."""
    found = []
    for step in steps:
        a, b = theirs.get(step), ours.get(step)
        if a is None or b is None:
            if a is not b:
                found.append(f"{step}: ran in {'Unfurl' if a else 'unfurl-lite'} only")
            continue
        for key in ("exit", "committed", "outputs", "lastJob"):
            if a.get(key) != b.get(key):
                found.append(f"{step}: {key}: Unfurl {a.get(key)!r}, here {b.get(key)!r}")
        for name in sorted(set(a["instances"]) | set(b["instances"])):
            x, y = a["instances"].get(name), b["instances"].get(name)
            if x is None or y is None:
                found.append(f"{step}: instance {name}: only in "
                             f"{'Unfurl' if x else 'unfurl-lite'}")
                continue
            for key in INSTANCE_KEYS:
                if x.get(key) != y.get(key):
                    found.append(f"{step}: {name}.{key}: Unfurl {x.get(key)!r}, "
                                 f"here {y.get(key)!r}")
        found.extend(_job_differences(step, a["jobs"], b["jobs"]))
    return found


def _job_differences(step: str, theirs: list[dict], ours: list[dict]) -> list[str]:
    if len(theirs) != len(ours):
        return [f"{step}: jobs.tsv rows: Unfurl {len(theirs)}, here {len(ours)}: "
                f"Unfurl {[_row_key(r) for r in theirs]}, here {[_row_key(r) for r in ours]}"]
    found = []
    for x, y in zip(sorted(theirs, key=_row_key), sorted(ours, key=_row_key), strict=True):
        for key in sorted(set(x) | set(y)):
            if x.get(key) != y.get(key):
                found.append(f"{step}: jobs.tsv {_row_key(x)} {key}: Unfurl {x.get(key)!r}, "
                             f"here {y.get(key)!r}")
    return found


def _row_key(row: dict[str, str]) -> str:
    return f"{row.get('target', 'job')}/{row.get('operation', '')}"


def classify(theirs: dict[str, dict[str, Any]], ours: dict[str, dict[str, Any]],
             steps: Iterable[str]) -> tuple[str, list[str]]:
    if unfurl_refused(theirs):
        return "refused by Unfurl", []
    validate = ours.get("validate")
    if validate is not None and validate["exit"] != 0:
        if refused_by_name(validate):
            return "refused here", []
        return "DIFFERENT", ["validate: refused here, but not by name: "
                             + validate["console"].strip()[:300]]
    found = differences(theirs, ours, steps)
    return ("DIFFERENT", found) if found else ("same", [])


def capture(case: Path, theirs: dict[str, dict[str, Any]], verdict: str,
            found: list[str]) -> None:
    """Unfurl's side of a case into its expected/: STEP.exit, STEP.console.txt,
    STEP.ensemble.yaml, STEP.jobs.tsv, STEP.committed; and verdict.json."""
    expected = case / "expected"
    shutil.rmtree(expected, ignore_errors=True)
    expected.mkdir()
    for step, raw in theirs.items():
        (expected / f"{step}.exit").write_text(f"{raw['exit']}\n")
        (expected / f"{step}.console.txt").write_text(raw["console"])
        (expected / f"{step}.ensemble.yaml").write_text(raw["ensemble"])
        (expected / f"{step}.jobs.tsv").write_text(raw["jobs_tsv"])
        (expected / f"{step}.committed").write_text(f"{str(raw['committed']).lower()}\n")
    (expected / "verdict.json").write_text(json.dumps(
        {"verdict": verdict, "differences": found}, indent=1) + "\n")


def load_expected(case: Path) -> dict[str, dict[str, Any]]:
    """What :func:`capture` wrote, as :func:`run_case` returns it."""
    expected = case / "expected"
    return {
        step: {"exit": int((expected / f"{step}.exit").read_text()),
               "console": (expected / f"{step}.console.txt").read_text(),
               "ensemble": (expected / f"{step}.ensemble.yaml").read_text(),
               "jobs_tsv": (expected / f"{step}.jobs.tsv").read_text(),
               "committed": (expected / f"{step}.committed").read_text().strip() == "true"}
        for step in case_steps(case) if (expected / f"{step}.exit").exists()
    }


def verdict_of(case: Path, theirs_raw: dict[str, dict[str, Any]],
               ours_raw: dict[str, dict[str, Any]]) -> tuple[str, list[str]]:
    compare = case_settings(case).get("compare") or ()
    return classify(snapshots(theirs_raw, compare), snapshots(ours_raw, compare),
                    case_steps(case))


def markdown(rows: list[tuple[str, str, str, list[str]]]) -> str:
    lines = ["| case | source | result | what differs |", "| --- | --- | --- | --- |"]
    for name, source, verdict, found in rows:
        what = "<br>".join(" ".join(f.split()).replace("|", "\\|") for f in found[:4])
        if len(found) > 4:
            what += f"<br>… {len(found) - 4} more"
        lines.append(f"| `{name}` | {source} | {verdict} | {what} |")
    return "\n".join(lines) + "\n"


def compare_case(case: Path, scratch: Path, options: argparse.Namespace,
                 servers: ForkServers) -> tuple[str, list[str]]:
    """One case's verdict: Unfurl's side run (or its capture replayed), ours run."""
    if options.replay:
        theirs = load_expected(case)
    else:
        theirs = run_case(case, servers.runner("unfurl"), scratch / "unfurl", tool="unfurl")
    ours = run_case(case, servers.runner("lite"), scratch / "lite")
    try:
        verdict, found = verdict_of(case, theirs, ours)
    except Exception as error:
        verdict, found = "DIFFERENT", [f"harness error: {error!r}"]
    if options.capture:
        capture(case, theirs, verdict, found)
    return verdict, found


def report(cases: list[Path], table: Path | None) -> int:
    """The verdicts recorded in the cases' expected/verdict.json, counted (and tabled)."""
    rows = []
    for case in cases:
        recorded = load_yaml(case / "expected" / "verdict.json") or {}
        rows.append((case.name, case_settings(case).get("source", ""),
                     recorded.get("verdict", "not captured"), recorded.get("differences", [])))
    counts: dict[str, int] = {}
    for _, _, verdict, _ in rows:
        counts[verdict] = counts.get(verdict, 0) + 1
    good = counts.get("same", 0) + counts.get("refused here", 0)
    runs = len(rows) - counts.get("refused by Unfurl", 0)
    print(f"{len(rows)} cases: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
          + f"; same or refused by name: {good} of {runs} that Unfurl runs")
    if table:
        table.write_text(markdown(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", help="case folder names (default: all)")
    parser.add_argument("--unfurl", type=Path, default=UNFURL)
    parser.add_argument("--capture", action="store_true",
                        help="write Unfurl's side into each case's expected/")
    parser.add_argument("--replay", action="store_true",
                        help="compare with the captures instead of running Unfurl")
    parser.add_argument("--markdown", type=Path, help="write the results table here")
    parser.add_argument("--jobs", "-j", type=int, default=1, help="cases run at once")
    parser.add_argument("--recorded", action="store_true",
                        help="run nothing: report the verdicts the captures recorded")
    options = parser.parse_args(argv)
    cases = all_cases()
    if options.cases:
        cases = [c for c in cases if c.name in options.cases]
    if not options.replay and not options.unfurl.exists():
        parser.error(f"{options.unfurl}: Unfurl 1.2.0 is not installed there (--unfurl)")
    rows = []
    counts: dict[str, int] = {}
    if options.recorded:
        return report(cases, options.markdown)
    servers = ForkServers(options.unfurl)
    with tempfile.TemporaryDirectory(prefix="side-by-side-") as scratch, \
            ThreadPoolExecutor(max(1, options.jobs)) as pool, \
            contextlib.closing(servers):
        futures = [pool.submit(compare_case, case, Path(scratch) / case.name, options, servers)
                   for case in cases]
        for case, future in zip(cases, futures, strict=True):
            verdict, found = future.result()
            counts[verdict] = counts.get(verdict, 0) + 1
            source = case_settings(case).get("source", "")
            rows.append((case.name, source, verdict, found))
            print(f"{verdict:18} {case.name}", flush=True)
            for line in found:
                print(f"    {line}")
    total = len(cases)
    good = counts.get("same", 0) + counts.get("refused here", 0)
    print(f"\n{total} cases: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
          + f"; same or refused by name: {good} of {total - counts.get('refused by Unfurl', 0)}"
          " that Unfurl runs")
    if options.markdown:
        options.markdown.write_text(markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
