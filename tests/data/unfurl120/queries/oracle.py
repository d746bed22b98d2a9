"""Unfurl 1.2.0 as an oracle: evaluate probes sent one per line, as probe.py evaluates them.

Run with the interpreter of a virtualenv holding Unfurl 1.2.0:
    $UNFURL120_VENV/bin/python tests/data/unfurl120/queries/oracle.py CASE

It deploys the case's ensemble once in a fresh git repository (as probe.py does), prints
"ready", then reads probes as JSON lines on stdin and writes each result as one JSON line
on stdout (the keys probe.py records: one/list for `q`, value for `v`). The hypothesis
tests of tests/expressions/test_expressions_against_unfurl.py drive it.
"""

import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import probe  # noqa: E402  (probe.py, beside this file)


def deployed(case):
    work, deploy = probe.deploy_case(case)
    deploy.check_returncode()
    from unfurl.localenv import LocalEnv

    os.chdir(work)
    return work, LocalEnv(os.path.join(work, "ensemble.yaml"), homePath="").get_manifest()


def main():
    work, manifest = deployed(sys.argv[1])
    out = sys.stdout
    sys.stdout = sys.stderr  # Unfurl's and Ansible's chatter stays off the answers
    out.write("ready\n")
    out.flush()
    try:
        for line in sys.stdin:
            result = probe.evaluate(manifest.rootResource, json.loads(line))
            out.write(json.dumps(result, default=str) + "\n")
            out.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
