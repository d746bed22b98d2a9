"""Evaluate expressions with Unfurl 1.2.0's own evaluator, after a real deploy.

Run with the interpreter of a virtualenv holding Unfurl 1.2.0, from the repository root:
    $UNFURL120_VENV/bin/python tests/data/unfurl120/queries/probe.py [CASE...]

For each case folder (ensemble.yaml, probes.yaml) it deploys the ensemble with the real
`unfurl deploy` in a fresh git repository, keeps the ensemble it recorded
(ensemble.after.yaml), then loads that ensemble and evaluates every probe there, writing
results.json. A probe is a mapping:
  at: an instance name (default: the root), or "SOURCE~REQUIREMENT" for a relationship
  q: a query string: recorded resolved as one value (`one`) and as a list (`list`)
  v: any value: recorded as Unfurl evaluates an input holding it (`value`)
  vars: variables for the query
  read_file: true: also record the contents of the file whose path the value is
Instances in results are {"instance": name}, capabilities {"capability": [node, name]},
relationships {"relationship": [source, name]}; a failure is {"error": "Type: message"}.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

WORK: list = []  # the repository a case runs in, written <repo> in results
HERE = os.path.dirname(os.path.abspath(__file__))
UNFURL = os.path.join(os.path.dirname(sys.executable), "unfurl")


def plain(value, depth=0):
    from unfurl.runtime import (CapabilityInstance, NodeInstance, RelationshipInstance,
                                TopologyInstance)

    if depth > 20:
        return "<deep>"
    if isinstance(value, TopologyInstance):
        return {"instance": "root"}
    if isinstance(value, NodeInstance):
        return {"instance": value.name}
    if isinstance(value, CapabilityInstance):
        return {"capability": [value.parent.name if value.parent else None, value.name]}
    if isinstance(value, RelationshipInstance):
        return {"relationship": [value.source.name if value.source else None, value.name]}
    if hasattr(value, "resolved") and hasattr(value, "external"):  # a Result
        return plain(value.resolved, depth + 1)
    if isinstance(value, str):
        text = str(value).replace(WORK[0], "<repo>") if WORK else str(value)
        return {"sensitive": text} if "sensitive" in type(value).__name__ else text
    if isinstance(value, (bool, int, float)) or value is None:
        if type(value).__name__.startswith("Scalar"):  # ruamel's ScalarFloat, ScalarInt...
            return bool(value) if "Boolean" in type(value).__name__ else type(value).__mro__[1](value)
        if type(value) not in (bool, int, float, type(None)):
            return {"enum": type(value).__name__, "name": getattr(value, "name", None)}
        return value
    if hasattr(value, "items"):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or hasattr(value, "__iter__"):
        return [plain(v, depth + 1) for v in value]
    return {"object": type(value).__name__, "repr": repr(value)}


def failure(ex):
    return {"error": f"{type(ex).__name__}: {ex}".splitlines()[0][:300]}


def context_for(root, at):
    from unfurl.eval import RefContext

    if not at:
        return root
    if "~" in at:
        source, _, requirement = at.partition("~")
        node = root.find_instance(source)
        return next(r for r in node.requirements if r.name == requirement)
    return root.find_instance(at)


def task_vars(instance, extra):
    """The variables a task's inputs see (Unfurl's TaskView.inputs), for templates."""
    from unfurl.support import set_context_vars

    node = getattr(instance, "target", None) or instance
    found = dict(SELF=instance.attributes, HOST=(node.parent or node).attributes)
    if getattr(instance, "source", None) is not None:
        found.update(SOURCE=instance.source.attributes, TARGET=node.attributes)
    set_context_vars(found, node)
    found.update(extra or {})
    return found


def evaluate(root, probe):
    from unfurl.eval import Ref, RefContext, map_value

    try:
        instance = context_for(root, probe.get("at"))
        if instance is None:
            return {"error": f"no instance {probe.get('at')}"}
    except Exception as ex:
        return failure(ex)
    out = {}
    if "q" in probe:
        for key, want in (("one", False), ("list", True)):
            try:
                ctx = RefContext(instance, vars=probe.get("vars"))
                out[key] = plain(Ref(probe["q"]).resolve(ctx, wantList=want))
            except Exception as ex:
                out[key] = failure(ex)
    if "v" in probe:
        try:
            ctx = RefContext(instance, vars=task_vars(instance, probe.get("vars")))
            value = map_value(probe["v"], ctx)
            out["value"] = plain(value)
            if probe.get("read_file") and isinstance(value, str) and os.path.isfile(value):
                with open(value, "rb") as f:
                    out["file_contents"] = f.read().decode("utf-8", "replace")
                out["suffix"] = os.path.splitext(value)[1]
            if isinstance(value, str) or type(value).__name__ in ("Status", "NodeState"):
                out["text"] = str(value)
        except Exception as ex:
            out["value"] = failure(ex)
    return out


def deploy_case(case):
    """The case's files in a fresh git repository, deployed by `unfurl deploy`: the
    repository and the deploy's completed process."""
    folder = os.path.join(HERE, case)
    work = os.path.realpath(tempfile.mkdtemp())
    WORK[:] = [work]
    for name in os.listdir(folder):
        if name not in ("results.json", "ensemble.after.yaml", "probes.yaml"):
            source = os.path.join(folder, name)
            if os.path.isdir(source):
                shutil.copytree(source, os.path.join(work, name))
            else:
                shutil.copy(source, work)
    env = dict(os.environ, PROBE_SECRET="s3cr3t-value", PROBE_PLAIN="plain-value")
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    subprocess.run([*git, "add", "-A"], cwd=work, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=work, check=True)
    deploy = subprocess.run(
        [UNFURL, "--home", "", "deploy", "--approve", "--dirty=ok", "--commit", "ensemble.yaml"],
        cwd=work, env=env, capture_output=True, text=True)
    return work, deploy


def run_case(case):
    folder = os.path.join(HERE, case)
    work, deploy = deploy_case(case)
    if deploy.returncode:
        print(deploy.stdout[-3000:], deploy.stderr[-3000:], file=sys.stderr)
    shutil.copy(os.path.join(work, "ensemble.yaml"), os.path.join(folder, "ensemble.after.yaml"))
    os.environ.update(PROBE_SECRET="s3cr3t-value", PROBE_PLAIN="plain-value")
    from unfurl.localenv import LocalEnv

    cwd = os.getcwd()
    os.chdir(work)
    try:
        manifest = LocalEnv(os.path.join(work, "ensemble.yaml"), homePath="").get_manifest()
        with open(os.path.join(folder, "probes.yaml")) as f:
            probes = yaml.safe_load(f)
        results = []
        for probe in probes:
            results.append({**probe, **evaluate(manifest.rootResource, probe)})
    finally:
        os.chdir(cwd)
    with open(os.path.join(folder, "results.json"), "w") as out:
        json.dump({"deploy_exit": deploy.returncode, "results": results}, out, indent=1,
                  default=str)
        out.write("\n")
    shutil.rmtree(work)
    print(case, deploy.returncode, file=sys.stderr)


if __name__ == "__main__":
    cases = sys.argv[1:] or sorted(
        d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "probes.yaml")))
    for name in cases:
        run_case(name)
