"""Commands that read the history and run nothing: status, history, show, diff."""

from __future__ import annotations

import re
from typing import Any

import click

from unfurl_lite import api
from unfurl_lite.cli import tables
from unfurl_lite.cli.commands.common import echo_json, ensemble_option, is_terminal, show
from unfurl_lite.cli.tables import Column
from unfurl_lite.cli.terminal import colour_disabled
from unfurl_lite.load import yamlio

JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
ENSEMBLE_OPTION = ensemble_option(positional=False)


def _table(title: str, columns: list[Any], rows: list[list[str]]) -> Any:
    """Aligned columns fitted to the terminal (to $COLUMNS, if set, in a pipe or log)."""
    if is_terminal():
        return tables.plain(title, columns, rows, tables.terminal_width(),
                            bold_header=not colour_disabled())
    return tables.plain(title, columns, rows, tables.environment_width())


def _fitted(sentence: str) -> str:
    """A sentence under a table, wrapped to the same width (ids and times kept whole)."""
    width = tables.terminal_width() if is_terminal() else tables.environment_width()
    return tables.wrap(sentence, width)


def _short_time(iso_time: str | None) -> str:
    return iso_time.replace("T", " ")[:19] if iso_time else "-"


# --------------------------------------------------------------------------------- status


@click.command()
@ensemble_option()
@JSON_OPTION
def status(ensemble: str | None, as_json: bool) -> None:
    """Show every instance: status, node state, last change and when, and drift.

    A `*` in DRIFT means the spec's inputs for an operation that deployed the instance
    changed since it ran (`unfurl deploy` does not re-run it by itself; see the docs).
    """
    report = api.status(ensemble)
    if as_json:
        echo_json(report)
        return
    rows = []
    for row in report["instances"]:
        effective = row["effective"] if row["effective"] != row["status"] else ""
        marks: list[str] = []
        if row["drift"]["drifted"]:
            marks.append("* " + "; ".join(row["drift"]["changes"]))
        elif row["drift"]["unknown"]:
            marks.append("? " + "; ".join(row["drift"]["unknown"]))
        if row["discovered"]:
            marks.append("discovered")
        if not row["recorded"]:
            marks.append("not deployed")
        rows.append(
            [
                row["name"],
                row["template"],
                row["status"],
                effective,
                row["state"] or "",
                row["lastChange"] or "",
                _short_time(row["lastChangeTime"]) if row["lastChange"] else "",
                ", ".join(marks),
            ]
        )
    columns = [Column("INSTANCE", keep=True), Column("TEMPLATE"), Column("STATUS", keep=True),
               Column("EFFECTIVE"), Column("STATE"), Column("LAST CHANGE", keep=True),
               Column("TIME (UTC)", keep=True), Column("NOTES")]
    show(_table(f"Ensemble {report['ensemble']}", columns, rows))
    last = report["lastJob"]
    if last:
        click.echo(_fitted(
            f"Last job: {last['changeId']} {last['workflow'] or ''} {last['status'] or ''} "
            f"at {_short_time(last['time'])}: {last['summary'] or ''}".replace("  ", " ")
        ))
        if report["specChanged"]:
            click.echo("The spec changed since the last job.")
    elif not report["interrupted"]:
        click.echo("No job has run yet: unfurl plan, then unfurl deploy.")
    if report["interrupted"]:
        # start-up: keeps record.interrupted (4 modules) off inspect's import until status() runs
        from unfurl_lite.record.interrupted import Interrupted

        job = report["interrupted"]
        click.echo(_fitted(Interrupted(job["changeId"], job["workflow"], job["pid"],
                                       tuple(job["inFlight"])).sentence()))


# -------------------------------------------------------------------------------- history


@click.command()
@ensemble_option()
@click.option("--instance", "-i", help="Only jobs with a task on this instance.")
@click.option("--since", help="Only jobs at or after this date/time (UTC) or changeId.")
@click.option("--workflow", "-w", help="Only jobs of this workflow (deploy, check, ...).")
@click.option("--limit", "-n", type=click.IntRange(min=1), help="At most this many jobs.")
@JSON_OPTION
def history(
    ensemble: str | None,
    instance: str | None,
    since: str | None,
    workflow: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """List jobs, newest first, with the commit that recorded each.

    Read from jobs.tsv, the jobs/ files and git log, so a fresh clone shows it all.
    """
    # start-up: keeps record.history (56 modules) off inspect's import until history() runs
    from unfurl_lite.record import history as hist

    jobs = api.history(ensemble, api.HistoryFilters(instance, since, workflow, limit))
    if as_json:
        echo_json([job.as_json() for job in jobs])
        return
    if not jobs:
        click.echo("No jobs" + (" match." if instance or since or workflow else " yet."))
        return
    rows = [
        [
            job.change_id or "-",
            _short_time(hist.iso(job.time)),
            job.workflow or "?",
            job.execution,
            job.shown_status,
            job.summary,
            job.commit.hexsha[:10] if job.commit else "(not committed)",
            job.commit.author if job.commit else "",
        ]
        for job in jobs
    ]
    columns = [Column("CHANGEID", keep=True), Column("TIME (UTC)", keep=True),
               Column("WORKFLOW"), Column("EXECUTION", give=2), Column("STATUS", keep=True),
               Column("SUMMARY", give=1, short=compact_summary),
               Column("COMMIT", keep=True), Column("AUTHOR", give=3)]
    show(_table("", columns, rows))


def compact_summary(summary: str) -> str:
    """Unfurl's summary without its zero counts, for a narrow table:
    ``4 tasks (2 changed, 4 ok, 0 failed, …)`` is ``4 tasks (2 changed, 4 ok)``."""

    inner = re.search(r"\((.*)\)", summary)
    if inner is None:
        return summary
    kept = [part for part in inner.group(1).split(", ") if not re.fullmatch(r"0 \w+", part)]
    return summary[: inner.start()] + (f"({', '.join(kept)})" if kept else "").rstrip() + \
        summary[inner.end():]


# ----------------------------------------------------------------------------------- show


@click.command(name="show")
@click.argument("change_id", metavar="CHANGEID")
@ENSEMBLE_OPTION
@click.option("--no-diff", is_flag=True, help="Leave out the git diff of the ensemble.")
@JSON_OPTION
def show_change(change_id: str, ensemble: str | None, no_diff: bool, as_json: bool) -> None:
    """Show one job or task: its record, inputs (secrets redacted), outputs, and the diff
    of the ensemble in the job's commit."""
    # start-up: keeps record.history (56 modules) off inspect's import until show_change() runs
    from unfurl_lite.record import history as hist

    found = api.show(change_id, ensemble, with_diff=not no_diff)
    if as_json:
        echo_json(found.as_json())
        return
    job, shown, entries, diff = found.job, found.record, found.tasks, found.diff
    kind = "job" if found.is_job else "task"
    click.echo(f"{kind} {shown.get('changeId') if shown else change_id} "
               f"({job.workflow or 'unknown workflow'}, {hist.iso(job.time)})")
    click.echo(f"execution: {job.execution}")
    if job.commit:
        click.echo(_fitted(
            f"commit {job.commit.hexsha}  {job.commit.author} <{job.commit.email}>  "
            f"{job.commit.date}"
        ))
    else:
        click.echo("commit: (not committed)")
    if shown is None:
        click.echo("(no job file: only the jobs.tsv line is known)")
        click.echo(job.summary)
    else:
        click.echo(yamlio.dump(_ordered(shown)).rstrip())
    if found.is_job and entries:
        click.echo("tasks:")
        for entry in entries:
            impl: dict[str, Any] = entry.get("implementation") or {}
            outcome = entry.get("status") or entry.get("state") or ""  # blocked: no status
            click.echo(
                f"  {entry.get('changeId') or '-':<12}"
                f"  {str(entry.get('target', '')).removeprefix('::')}"
                f"  {impl.get('operation', '')}  {outcome}  {entry.get('reason', '')}"
            )
    if diff:
        click.echo("")
        click.echo(diff.rstrip())


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    """The record with inputs and outputs last, where they are easy to find."""
    tail = ("inputs", "result", "outputs", "attributes")
    ordered = {k: v for k, v in entry.items() if k not in tail}
    ordered.update({k: entry[k] for k in tail if k in entry})
    return ordered


# ----------------------------------------------------------------------------------- diff


@click.command()
@click.argument("first", metavar="CHANGEID")
@click.argument("second", metavar="[CHANGEID|now]", required=False)
@ENSEMBLE_OPTION
@JSON_OPTION
def diff(first: str, second: str | None, ensemble: str | None, as_json: bool) -> None:
    """What a job changed in the ensemble (given one CHANGEID), or what changed between two
    jobs, or since a job (CHANGEID now): the instances whose status changed, then the git
    diff of the ensemble."""
    found = api.diff(first, second, ensemble)
    if as_json:
        echo_json(found.as_json())
        return
    changes, text = found.instances, found.diff
    if found.kind == "between":
        click.echo(f"From job {found.from_label} to job {found.to_label}:")
    elif found.kind == "since":
        click.echo(f"From job {found.from_label} to now:")
    else:
        click.echo(f"What job {found.to_label} changed:")
    if not changes:
        click.echo("  no instance changed status")

    def fmt(s: dict[str, Any] | None) -> str:
        return "(none)" if s is None else f"{s['status']}/{s['state'] or '-'}"

    for change in changes:
        click.echo(f"  {change['instance']}: {fmt(change['before'])} -> {fmt(change['after'])}")
    if text:
        click.echo("")
        click.echo(text.rstrip())
