"""List every name Unfurl 1.2.0's expression language defines, from Unfurl itself.

Run with the interpreter of a virtualenv holding Unfurl 1.2.0, from the repository root:
    $UNFURL120_VENV/bin/python tests/data/unfurl120/queries/names.py

It imports Unfurl (and the modules that register eval functions: support, projectpaths,
dsl, the Kubernetes configurator), builds the Jinja2 environment Unfurl renders templates
with (Ansible's Templar with Unfurl's filter and lookup plugins), loads the ensemble that
probe.py deployed for the `relationships` case, and writes names.json:
  functions: eval functions (``RefContext._Funcs``), with ``top`` (evaluated as a bare
             one-key mapping) and ``safe`` (allowed in safe mode)
  filters, tests: what Ansible's plugin loaders find (its core plugins and Unfurl's
             filter_plugins; a few replace Jinja2's own, listed apart under
             jinja_filters, jinja_tests)
  globals:   the Templar environment's (Jinja2's own listed apart under jinja_globals)
  lookups:   every lookup plugin Ansible's loader finds (Unfurl's `unfurl` included)
  query_keys: `.KEY`: a query reads ``getattr(instance, KEY)``; every public property and
             data attribute of each kind of instance (node, root, capability,
             relationship), with the kinds that have it
  ref_keys:  the keys an `eval:` mapping takes beside it
The per-name test table (tests/expressions/test_every_name.py) reads names.json.
"""

import inspect
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def jinja_builtins():
    import jinja2

    environment = jinja2.Environment()
    return set(environment.filters), set(environment.tests), set(environment.globals)


def templar_environment():
    import unfurl  # noqa: F401  (adds Unfurl's filter and lookup plugin folders)
    from ansible.parsing.dataloader import DataLoader
    from unfurl.support import Templar

    return Templar(DataLoader()).environment


def plugins(loader_name):
    """Ansible's filters and tests load by name when first used: list what its loaders
    find (Ansible's core ones and Unfurl's filter_plugins)."""
    import unfurl  # noqa: F401
    from ansible.plugins import loader

    return sorted({plugin._load_name for plugin in getattr(loader, loader_name).all()})


def lookups():
    import unfurl  # noqa: F401
    from ansible.plugins.loader import lookup_loader

    names = set()
    for plugin in lookup_loader.all(class_only=True):
        names.add(getattr(plugin, "_load_name", plugin.__module__.rsplit(".", 1)[-1]))
    return sorted(n.rsplit(".", 1)[-1] for n in names)


def functions():
    import unfurl.dsl  # noqa: F401  (registers computed)
    import unfurl.projectpaths  # noqa: F401  (file, tempfile, abspath, get_dir)
    import unfurl.support  # noqa: F401
    from unfurl.eval import RefContext, SafeRefContext, _FuncsTop

    found = {name: {"top": name in _FuncsTop, "safe": name in SafeRefContext._Funcs}
             for name in sorted(RefContext._Funcs)}
    # the Kubernetes configurator needs the kubernetes package to import: read its source
    import unfurl.configurators

    k8s = os.path.join(os.path.dirname(unfurl.configurators.__file__), "k8s.py")
    with open(k8s) as f:
        for name in re.findall(r'set_eval_func\(\s*"(\w+)"', f.read()):
            found.setdefault(name, {"top": False, "safe": False})
    return dict(sorted(found.items()))


def _public_keys(instance):
    keys = set()
    for klass in type(instance).__mro__:
        for name, member in vars(klass).items():
            if name.startswith("_") or klass is object:
                continue
            if isinstance(member, property) or not (callable(member) or
                                                    isinstance(member, (staticmethod,
                                                                        classmethod))):
                keys.add(name)
    for name, member in vars(instance).items():
        if not name.startswith("_") and not callable(member):
            keys.add(name)
    return keys


def query_keys():
    from unfurl.localenv import LocalEnv

    work = tempfile.mkdtemp()  # Unfurl writes beside the ensemble it loads
    shutil.copy(os.path.join(HERE, "relationships", "ensemble.after.yaml"),
                os.path.join(work, "ensemble.yaml"))
    manifest = LocalEnv(os.path.join(work, "ensemble.yaml"), homePath="").get_manifest()
    root = manifest.rootResource
    app = root.find_instance("app")
    server = root.find_instance("server")
    kinds = {
        "root": root,
        "node": app,
        "capability": app.capabilities[0] if app.capabilities else server.capabilities[0],
        "relationship": server.requirements[0],
    }
    found = {}
    for kind, instance in kinds.items():
        for key in _public_keys(instance):
            found.setdefault(key, []).append(kind)
    shutil.rmtree(work)
    return {key: sorted(kinds_) for key, kinds_ in sorted(found.items())}


def ref_keys():
    from unfurl import eval as unfurl_eval

    source = inspect.getsource(unfurl_eval)
    return sorted(k for k in ("vars", "foreach", "select", "trace", "strict", "eval", "ref")
                  if repr(k) in source or f'"{k}"' in source)


def main():
    jinja_filters, jinja_tests, jinja_globals = jinja_builtins()
    environment = templar_environment()
    names = {
        "unfurl": "1.2.0",
        "functions": functions(),
        "filters": plugins("filter_loader"),
        "tests": plugins("test_loader"),
        "globals": sorted(environment.globals),
        "jinja_globals": sorted(jinja_globals),
        "jinja_filters": sorted(jinja_filters),
        "jinja_tests": sorted(jinja_tests),
        "lookups": lookups(),
        "query_keys": query_keys(),
        "ref_keys": ref_keys(),
    }
    with open(os.path.join(HERE, "names.json"), "w") as out:
        json.dump(names, out, indent=1, sort_keys=True)
        out.write("\n")
    print({k: len(v) for k, v in names.items()}, file=sys.stderr)


if __name__ == "__main__":
    main()
