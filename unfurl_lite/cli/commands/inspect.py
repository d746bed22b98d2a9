"""Commands that read the history and run nothing: status, history, show, diff."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from unfurl_lite.cli.commands.common import ENSEMBLE_ARG, echo_json, is_terminal, show

JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
ENSEMBLE_OPTION = click.option(
    "--ensemble",
    "-e",
    "ensemble",
    type=click.Path(),
    default=None,
    help="The ensemble (default: ./ensemble.yaml).",
)


def _table(title: str, columns: list[Any], rows: list[list[str]]) -> Any:
    """Aligned columns fitted to the terminal (to $COLUMNS, if set, in a pipe or log)."""
    from unfurl_lite.cli import tables
    from unfurl_lite.cli.terminal import colour_disabled

    if is_terminal():
        return tables.plain(title, columns, rows, tables.terminal_width(),
                            bold_header=not colour_disabled())
    return tables.plain(title, columns, rows, tables.environment_width())


def _fitted(sentence: str) -> str:
    """A sentence under a table, wrapped to the same width (ids and times kept whole)."""
    from unfurl_lite.cli import tables

    width = tables.terminal_width() if is_terminal() else tables.environment_width()
    return tables.wrap(sentence, width)


def _short_time(iso_time: str | None) -> str:
    return iso_time.replace("T", " ")[:19] if iso_time else "-"


# --------------------------------------------------------------------------------- status


@click.command()
@ENSEMBLE_ARG
@JSON_OPTION
def status(ensemble: str | None, as_json: bool) -> None:
    """Show every instance: status, node state, last change and when, and drift.

    A `*` in DRIFT means the spec's inputs for an operation that deployed the instance
    changed since it ran (`unfurl deploy` does not re-run it by itself; see the docs).
    """
    from unfurl_lite.cli.overview import status_report
    from unfurl_lite.load.loader import load_ensemble

    loaded = load_ensemble(ensemble)
    report = status_report(loaded)
    if as_json:
        echo_json(report)
        return
    rows = []
    for row in report["instances"]:
        effective = row["effective"] if row["effective"] != row["status"] else ""
        marks = []
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
    from unfurl_lite.cli.tables import Column

    columns = [Column("INSTANCE", keep=True), Column("TEMPLATE"), Column("STATUS", keep=True),
               Column("EFFECTIVE"), Column("STATE"), Column("LAST CHANGE", keep=True),
               Column("TIME (UTC)", keep=True), Column("NOTES")]
    show(_table(f"Ensemble {loaded.path}", columns, rows))
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
        from unfurl_lite.record.interrupted import Interrupted

        job = report["interrupted"]
        click.echo(_fitted(Interrupted(job["changeId"], job["workflow"], job["pid"],
                                       tuple(job["inFlight"])).sentence()))


# -------------------------------------------------------------------------------- history


@click.command()
@ENSEMBLE_ARG
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
    from unfurl_lite.record import history as hist

    path, jobs_tsv = _paths(ensemble)
    jobs = hist.history(
        path.parent, jobs_tsv, hist.Filters(instance, since, workflow, limit)
    )
    if as_json:
        echo_json([job.as_json() for job in jobs])
        return
    if not jobs:
        click.echo("No jobs" + (" match." if instance or since or workflow else " yet."))
        return
    rows = [
        [
            job.change_id,
            _short_time(hist.iso(job.time)),
            job.workflow or "?",
            job.shown_status,
            job.summary,
            job.commit.hexsha[:10] if job.commit else "(not committed)",
            job.commit.author if job.commit else "",
        ]
        for job in jobs
    ]
    from unfurl_lite.cli.tables import Column

    columns = [Column("CHANGEID", keep=True), Column("TIME (UTC)", keep=True),
               Column("WORKFLOW"), Column("STATUS", keep=True), Column("SUMMARY"),
               Column("COMMIT", keep=True), Column("AUTHOR")]
    show(_table("", columns, rows))


def _paths(ensemble: str | None) -> tuple[Path, Path]:
    """The ensemble file and its jobs log, without loading (or validating) the spec."""
    from unfurl_lite.load.loader import resolve_path

    path = resolve_path(ensemble)
    jobs_log = "jobs.tsv"
    try:
        from ruamel.yaml import YAML

        doc = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and isinstance(doc.get("jobsLog"), str):
            jobs_log = doc["jobsLog"]
    except Exception:  # the history must stay readable even when the spec is broken
        pass
    return path, path.parent / jobs_log


# ----------------------------------------------------------------------------------- show


def _secrets_of(path: Path) -> set[str]:
    """Values the current spec marks sensitive, redacted again in case old records hold them."""
    try:
        from unfurl_lite.expressions.context import wrapped_inputs
        from unfurl_lite.load.loader import load_ensemble
        from unfurl_lite.security.taint import secrets_in

        loaded = load_ensemble(path)
    except Exception:
        return set()
    found = set(secrets_in(wrapped_inputs(loaded.topology)))
    for template in loaded.topology.templates.values():
        for key in template.sensitive_properties:
            if template.properties.get(key) is not None:
                found.add(str(template.properties[key]))
    return found


@click.command(name="show")
@click.argument("change_id", metavar="CHANGEID")
@ENSEMBLE_OPTION
@click.option("--no-diff", is_flag=True, help="Leave out the git diff of the ensemble.")
@JSON_OPTION
def show_change(change_id: str, ensemble: str | None, no_diff: bool, as_json: bool) -> None:
    """Show one job or task: its record, inputs (secrets redacted), outputs, and the diff
    of the ensemble in the job's commit."""
    from unfurl_lite.load import yamlio
    from unfurl_lite.model import changeid
    from unfurl_lite.record import history as hist
    from unfurl_lite.security.redaction import redact

    path, jobs_tsv = _paths(ensemble)
    root = path.parent
    job, task = hist.find_job(root, jobs_tsv, change_id)
    secrets = _secrets_of(path)
    entries = [redact(e, secrets) for e in hist.job_entries(job)]
    record = entries[0] if entries else None
    wanted = str(changeid.parse(change_id))
    if not wanted.endswith("0000"):
        shown = next((e for e in entries if str(e.get("changeId")) == wanted), None)
        if shown is None and task is not None:
            shown = {
                "changeId": task.change_id,
                "target": f"::{task.target}",
                "operation": task.operation,
                "status": task.status,
                "summary": task.summary,
            }
    else:
        shown = record
    diff = ""
    if job.commit and not no_diff:
        rel = str(path.relative_to(root))
        sha = job.commit.hexsha
        secrets |= _written(root, rel, [f"{sha}^", sha])
        diff = hist.redact_known(hist.ensemble_diff(root, rel, None, sha), secrets)
    if as_json:
        echo_json(
            {
                "job": job.as_json(),
                "record": shown,
                "tasks": entries[1:] if shown is record else None,
                "diff": diff or None,
            }
        )
        return
    kind = "job" if shown is record else "task"
    click.echo(f"{kind} {shown.get('changeId') if shown else change_id} "
               f"({job.workflow or 'unknown workflow'}, {hist.iso(job.time)})")
    if job.commit:
        click.echo(
            f"commit {job.commit.hexsha}  {job.commit.author} <{job.commit.email}>  "
            f"{job.commit.date}"
        )
    else:
        click.echo("commit: (not committed)")
    if shown is None:
        click.echo("(no job file: only the jobs.tsv line is known)")
        click.echo(job.summary)
    else:
        click.echo(yamlio.dump(_ordered(shown)).rstrip())
    if shown is record and entries[1:]:
        click.echo("tasks:")
        for entry in entries[1:]:
            impl = entry.get("implementation") or {}
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


def _written(root: Path, rel: str, commits: list[str | None]) -> set[str]:
    """The secrets written in each version of the ensemble a diff shows (None: the
    working tree), so that a secret since removed from the spec stays redacted."""
    from unfurl_lite.record import history as hist

    found: set[str] = set()
    for commit in commits:
        if commit is None:
            text = (root / rel).read_text(encoding="utf-8") if (root / rel).exists() else None
        else:
            text = hist.file_at(root, commit, rel)
        found |= hist.written_secrets(text)
    return found


@click.command()
@click.argument("first", metavar="CHANGEID")
@click.argument("second", metavar="[CHANGEID|now]", required=False)
@ENSEMBLE_OPTION
@JSON_OPTION
def diff(first: str, second: str | None, ensemble: str | None, as_json: bool) -> None:
    """What a job changed in the ensemble (given one CHANGEID), or what changed between two
    jobs, or since a job (CHANGEID now): the instances whose status changed, then the git
    diff of the ensemble."""
    from unfurl_lite.record import history as hist

    path, jobs_tsv = _paths(ensemble)
    root = path.parent
    rel = str(path.relative_to(root))
    since = second is not None and second.lower() == "now"
    jobs = [hist.find_job(root, jobs_tsv, c)[0] for c in (first, second) if c and c != "now"]
    if since:
        jobs = jobs[:1]
    for job in jobs:
        if job.commit is None:
            raise hist.HistoryError(
                f"job {job.change_id} was not committed, so git has no state to compare",
                hint="commit its records, or compare with a committed job",
            )
    if len(jobs) == 2 and jobs[0].change_id > jobs[1].change_id:
        jobs.reverse()
    shas = [j.commit.hexsha for j in jobs]  # type: ignore[union-attr]
    if len(jobs) == 2:
        base, head, from_label, to_label = shas[0], shas[1], jobs[0].change_id, jobs[1].change_id
        text = hist.ensemble_diff(root, rel, base, head)
    elif since:
        base, head, from_label, to_label = shas[0], None, jobs[0].change_id, "now"
        text = hist.ensemble_diff(root, rel, base, None)
    else:  # the job's own change: its commit against the one before it
        base, head = f"{shas[0]}^", shas[0]
        from_label, to_label = f"{jobs[0].change_id}^", jobs[0].change_id
        text = hist.ensemble_diff(root, rel, None, head)
    before = hist.status_at(hist.file_at(root, base, rel))
    after = hist.status_at(
        hist.file_at(root, head, rel) if head else path.read_text(encoding="utf-8")
    )
    changes = hist.status_changes(before, after)
    secrets = _secrets_of(path) | _written(root, rel, [base, head])
    text = hist.redact_known(text, secrets)
    if as_json:
        echo_json({"from": from_label, "to": to_label, "instances": changes, "diff": text})
        return
    if len(jobs) == 2:
        click.echo(f"From job {from_label} to job {to_label}:")
    elif since:
        click.echo(f"From job {from_label} to now:")
    else:
        click.echo(f"What job {to_label} changed:")
    if not changes:
        click.echo("  no instance changed status")

    def fmt(s: dict[str, Any] | None) -> str:
        return "(none)" if s is None else f"{s['status']}/{s['state'] or '-'}"

    for change in changes:
        click.echo(f"  {change['instance']}: {fmt(change['before'])} -> {fmt(change['after'])}")
    if text:
        click.echo("")
        click.echo(text.rstrip())
