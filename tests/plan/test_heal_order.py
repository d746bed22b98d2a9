"""heal decides what to reinstall from the outcome of its checks and heal operations, so
every guarded step waits for the tasks its guard names (before, a host's check racing the
hosted instances' uninstall made heal skip them when the check was slow)."""

from __future__ import annotations

import re

from tests.plan.test_workflows import HOSTED, deployed, node


def _tasks(plan_text: str) -> dict[int, tuple[str, str, set[int], str]]:
    """number -> (instance, step, after, guard) from a printed plan."""
    tasks, target = {}, ""
    for line in plan_text.splitlines():
        if line.startswith("  ") and not line.startswith("    ") and " (" in line:
            target = line.split()[0]
            continue
        found = re.match(r"    (\d+)\. (.*?) \[\w+\](?: after ([\d,]+))?(?: \((.*)\))?$", line)
        if found:
            after = {int(n) for n in (found[3] or "").split(",") if n}
            tasks[int(found[1])] = (target, found[2], after, found[4] or "")
    return tasks


def _before(tasks: dict[int, tuple[str, str, set[int], str]], number: int) -> set[int]:
    seen: set[int] = set()
    todo = [number]
    while todo:
        for dep in tasks[todo.pop()][2] - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def test_every_guarded_step_runs_after_the_tasks_its_guard_names(project, invoke):
    templates = dict(HOSTED)
    for name in ("server", "module"):  # each with a check of its own, so each is guarded
        templates[name] = node(requirements=templates[name]["requirements"],
                               Validation=("check_status",))
    deployed(project, invoke, templates)
    result = invoke("heal", "module", "--dryrun", "--approve")
    assert result.exit_code == 0, result.output
    tasks = _tasks(result.output.split("\n[", 1)[0])
    check = next(n for n, (target, step, _, _) in tasks.items()
                 if target == "host" and step == "Validation.check_status")
    named = {n: {int(m) for m in re.findall(r"\d+", guard.split("failed")[0])}
             for n, (*_, guard) in tasks.items() if "only if" in guard}
    # the host's check decides for the host and everything in it
    assert {tasks[n][0] for n, on in named.items() if check in on} >= {"host", "server", "module"}
    late = [f"{tasks[n][0]} {tasks[n][1]}" for n, on in named.items()
            if not on <= _before(tasks, n)]
    assert late == [], result.output
