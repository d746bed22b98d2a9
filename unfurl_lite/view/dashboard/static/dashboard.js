// unfurl dashboard: live updates over server-sent events (EventSource), nothing else.
// The pages are complete without it; this only moves progress and reloads on a new record.
"use strict";

function text(node, value) { if (node) { node.textContent = value; } }

function showRunning(jobs) {
  const banner = document.getElementById("running");
  if (!banner) { return; }
  banner.replaceChildren();
  for (const job of jobs) {
    const line = document.createElement("div");
    const link = document.createElement("a");
    link.href = "/jobs/" + job.changeId;
    link.textContent = job.changeId;
    line.append("Job ", link, " (" + (job.workflow || "job") + ") is running: " +
                job.done + " of " + job.total + " tasks done");
    banner.append(line);
  }
  banner.hidden = jobs.length === 0;
}

function followProject() {
  const source = new EventSource("/events");
  let first = null;
  source.addEventListener("jobs", (event) => {
    const data = JSON.parse(event.data);
    showRunning(data.running);
    const stamp = JSON.stringify(data.jobsLog);
    const page = document.body.dataset.page;
    if (first === null) { first = stamp; return; }
    if (stamp !== first && (page === "overview" || page === "history")) {
      source.close();
      window.location.reload(); // a job was recorded: show the new state
    }
  });
}

function setProgress(done, total) {
  const bar = document.getElementById("progress");
  if (!bar) { return; }
  bar.setAttribute("aria-valuemax", String(total));
  bar.setAttribute("aria-valuenow", String(done));
  const fill = bar.querySelector(".fill");
  if (fill) { fill.style.width = (total ? (100 * done / total) : 100).toFixed(1) + "%"; }
}

function followJob(section) {
  const source = new EventSource(section.dataset.events);
  const summary = document.getElementById("summary");
  source.addEventListener("progress", (event) => {
    const data = JSON.parse(event.data);
    setProgress(data.done, data.total);
    text(summary, data.done + " of " + data.total + " tasks done" +
         (data.running ? ", " + data.running + " running" : "") +
         (data.failed ? ", " + data.failed + " failed" : ""));
    for (const task of data.tasks) {
      const row = document.querySelector('#tasks tr[data-number="' + task.number + '"]');
      if (!row) { continue; }
      row.dataset.state = task.state || "";
      if (task.changeId) {
        row.dataset.changeId = task.changeId;
        text(row.querySelector(".changeid"), task.changeId);
      }
      text(row.querySelector(".status .badge"), task.status || task.state || "pending");
    }
    document.body.dataset.live = "progress";
  });
  source.addEventListener("summary", (event) => {
    const data = JSON.parse(event.data);
    source.close();
    const total = Number(document.getElementById("progress")?.getAttribute("aria-valuemax"));
    setProgress(total, total);
    text(summary, data.summary + " (" + data.status + ")");
    document.body.dataset.live = "done";
    section.dataset.status = data.status;
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const job = document.querySelector("[data-events]");
  if (job) { followJob(job); } else { followProject(); }
});
