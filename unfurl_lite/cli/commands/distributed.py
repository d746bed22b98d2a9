"""``unfurl worker`` and ``unfurl agents``: the Celery side of distributed execution."""

from __future__ import annotations

import os
from typing import Any

import click

from unfurl_lite.cli.commands.common import echo_json, ensemble_option, show

BROKER_OPTION = click.option(
    "--broker",
    default=None,
    help="The Celery broker (default: $UNFURL_BROKER or redis://127.0.0.1:6379/0).",
)


@click.command()
@click.option("--name", default=None, help="The worker's name (default: this host's name).")
@click.option(
    "--queue",
    "-Q",
    "queues",
    multiple=True,
    help="A queue to serve (repeatable; default: the default queue, unfurl.management).",
)
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=None,
              help="Operations run at once, each on a thread (default: 32, or 8 per core "
              "if more: operations mostly wait).")
@BROKER_OPTION
@click.option("--loglevel", "-l", default="INFO", show_default=True, help="Celery's log level.")
@click.option("--project", "project_mode", type=click.Choice(["auto", "git"]), default=None,
              help="Where tasks run: auto (default) runs in the controller's directory when "
              "this machine has it at the job's commit, else in a worktree of the job's "
              "commit fetched from its repository; git always fetches.")
@click.option("--cache", "cache_dir", default=None, type=click.Path(file_okay=False),
              help="Where fetched repositories and worktrees are kept "
              "(default: $UNFURL_WORKER_CACHE or ~/.cache/unfurl-lite/worker).")
@click.option("--broker-password-file", "password_file", default=None,
              help="A file holding only the broker's password ('-': standard input); "
              "default: $UNFURL_BROKER_PASSWORD_FILE. Never put it in --broker.")
def worker(name: str | None, queues: tuple[str, ...], concurrency: int | None,
           broker: str | None, loglevel: str, project_mode: str | None,
           cache_dir: str | None, password_file: str | None) -> None:
    """Start a Celery worker that runs this project's operations (runs until stopped).

    Each operation it runs sees UNFURL_WORKER=NAME, and the job's records name it. It
    runs each task in the job's project at the job's commit, and never passes the broker's
    URL to an operation.
    """

    # start-up: keeps api.distributed (12 modules) off distributed's import until worker() runs
    from unfurl_lite.api.distributed import serve_worker

    if password_file:
        os.environ["UNFURL_BROKER_PASSWORD_FILE"] = password_file

    serve_worker(name, queues, concurrency, broker, loglevel, project_mode, cache_dir,
                 restart=True)


@click.command()
@ensemble_option()
@BROKER_OPTION
@click.option("--start", is_flag=True, help="Start a local worker for each queue that has none.")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=None,
              help="Concurrency of the workers --start starts.")
@click.option("--json", "as_json", is_flag=True, help="Print the queues as JSON.")
def agents(ensemble: str | None, broker: str | None, start: bool, concurrency: int | None,
           as_json: bool) -> None:
    """List the agent queues this ensemble's nodes name and the live workers serving each.

    Like Cloudify's install_new_agents, --start brings up a worker (on this machine) for
    every queue that no live worker serves.
    """
    # start-up: keeps api.distributed (12 modules) off distributed's import until agents() runs
    from unfurl_lite.api.distributed import agents as list_agents

    found = list_agents(ensemble, broker, start, concurrency)
    if as_json:
        echo_json(found.rows)
    else:
        for row in found.rows:
            workers = ", ".join(
                f"{w} ({_version_text(row['versions'][w], found.differs)})"
                for w in row["workers"]) or "none"
            note = f" (started pid {row['started']})" if "started" in row else ""
            show(f"{row['queue']}: {len(row['nodes'])} node(s) [{', '.join(row['nodes'])}]; "
                 f"workers: {workers}{note}")
    problem = found.problem()
    if problem is not None:
        raise problem


def _version_text(version: dict[str, Any], differs: Any) -> str:
    if version.get("protocol") is None:
        return "version unknown: older than protocol 2, refused"
    text = f"unfurl-lite {version['version']}, protocol {version['protocol']}"
    return f"{text}: differs, refused" if differs(version) else text
