"""Shared by the dashboard's tests: a deployed project and a server on a free port."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import Project, ensemble_yaml, run_in_process
from unfurl_lite.view.dashboard.server import DashboardServer, start

SECRET = "s3cret-DASH-4242"

ENSEMBLE = ensemble_yaml("""\
db:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      operations:
        create:
          implementation: {className: Shell}
          inputs:
            command: echo "password={{ TOPOLOGY.inputs.db_password }}"
        configure:
          implementation: {className: Shell}
          inputs: {command: "echo configured"}
app:
  type: tosca.nodes.Root
  requirements:
    - dependency: db
  interfaces:
    Standard:
      operations:
        create:
          implementation: {className: Shell}
          inputs: {command: "echo app created"}
cache:
  type: tosca.nodes.Root
  interfaces:
    Standard:
      operations:
        create:
          implementation: {className: Shell}
          inputs: {command: "echo cache"}
        delete:
          implementation: {className: Shell}
          inputs: {command: "echo cache deleted"}
""").replace(
    "    topology_template:\n",
    "    topology_template:\n      inputs:\n        db_password:\n"
    f"          type: unfurl.datatypes.Sensitive\n          default: {SECRET}\n",
)


def deployed(project: Project, times: int = 1) -> Project:
    project.write(ENSEMBLE)
    for _ in range(times):
        result = run_in_process(project.root, "deploy", "--approve")
        assert result.returncode == 0, result.stderr + result.stdout
    return project


@dataclass
class Running:
    server: DashboardServer

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def request(self, path: str, method: str = "GET",
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request(method, path, headers=headers or {})
            response = connection.getresponse()
            body = response.read().decode("utf-8")
            return response.status, {k.lower(): v for k, v in response.getheaders()}, body
        finally:
            connection.close()

    def get(self, path: str) -> str:
        status, _, body = self.request(path)
        assert status == 200, (path, status, body)
        return body


@contextmanager
def serving(ensemble: Path) -> Iterator[Running]:
    server = start(ensemble, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Running(server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def read_events(running: Running, path: str) -> Iterator[tuple[str, dict]]:
    """(event, data) as a browser's EventSource would receive them, until the stream ends."""
    import json

    connection = http.client.HTTPConnection("127.0.0.1", running.port, timeout=60)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        assert response.status == 200, response.read()
        assert response.getheader("Content-Type", "").startswith("text/event-stream")
        name, data = "", ""
        while True:
            line = response.fp.readline().decode("utf-8")
            if not line:
                return
            line = line.rstrip("\n")
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
            elif line == "" and name:
                yield name, json.loads(data)
                name, data = "", ""
    finally:
        connection.close()


def waiting_ensemble(flag: Path) -> str:
    """The dashboard's test ensemble with a task that runs until ``flag`` exists (a job the
    test can watch while it runs, and let finish when it has seen enough)."""
    wait = (f"for i in $(seq 1200); do [ -f {flag} ] && exit 0; sleep 0.05; done; exit 1")
    return ENSEMBLE.replace('inputs: {command: "echo app created"}',
                            f"inputs: {{command: '{wait}'}}")


def tour_failure(root: Path) -> str:
    """The README tour's failed deploy, in a new project at ``root``, with web hosted on
    app (a dependency that is not a host does not block, as in Unfurl): db is created,
    app's create fails (something is in the way), app's configure and web's two tasks are
    blocked. Returns the job's changeId."""
    from tests.conftest import git

    result = run_in_process(root.parent, "init", root.name, "--from", "three-tier")
    assert result.returncode == 0, result.stderr + result.stdout
    git(root, "config", "user.email", "ada@example.com")
    git(root, "config", "user.name", "Ada")
    spec = root / "ensemble.yaml"
    spec.write_text(spec.read_text().replace(
        "- dependency: app", "- host: {node: app, capability: feature}"))
    git(root, "commit", "-qam", "web hosted on app")
    (root / "state" / "app").mkdir(parents=True)  # app's create cannot write state/app
    result = run_in_process(root, "deploy", "--approve")
    assert result.returncode == 64, result.stderr + result.stdout
    return (root / "jobs.tsv").read_text().split("\t", 1)[0]


def cancelled(project: Project, keep: Any = None) -> str:
    """A deploy of the dashboard's ensemble cancelled as its first task ends (one task at
    a time, so what is left never started). Returns the job's changeId; ``keep`` is given
    its result."""
    from unfurl_lite import api
    from unfurl_lite.run.observer import Observer
    from unfurl_lite.run.options import JobOptions

    class CancelAfterFirst(Observer):
        def __init__(self, cancel: threading.Event) -> None:
            self.cancel = cancel

        def task_finished(self, run: object) -> None:
            self.cancel.set()

    project.write(ENSEMBLE)
    cancel = threading.Event()
    result = api.run_job(api.JobRequest(project.ensemble, "deploy",
                                        options=JobOptions(jobs=1)),
                         observer=CancelAfterFirst(cancel), cancel=cancel)
    assert result is not None and str(result.state) == "cancelled"
    if keep is not None:
        keep(result)
    return result.job_id
