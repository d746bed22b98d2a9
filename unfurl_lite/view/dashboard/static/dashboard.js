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
  // jobs.tsv as it was when the server drew this page: another stamp means a new record
  const drawn = JSON.stringify(JSON.parse(document.body.dataset.jobsLog || "null"));
  source.addEventListener("jobs", (event) => {
    const data = JSON.parse(event.data);
    showRunning(data.running);
    const stamp = JSON.stringify(data.jobsLog);
    const page = document.body.dataset.page;
    if (drawn !== "null" && stamp !== drawn && (page === "overview" || page === "history")) {
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

// The page as the server draws it now: its timeline (and, once recorded, its tasks with their
// output) replace the ones drawn when the page was loaded.
// One fetch at a time; progress refreshes coalesce, the final one always runs.
let chain = Promise.resolve();
let queued = false;
async function redraw(parts) {
  const response = await fetch(window.location.pathname, {cache: "no-store"});
  if (!response.ok) { return; }
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const id of parts) {
    const now = document.getElementById(id);
    const then = fresh.getElementById(id);
    if (now && then) { now.closest("section").replaceWith(then.closest("section")); }
  }
}
function refresh(parts, always) {
  if (queued && !always) { return chain; }
  queued = true;
  chain = chain.then(() => { queued = false; return redraw(parts); }).catch(() => {});
  return chain;
}

function followJob(section) {
  const source = new EventSource(section.dataset.events);
  const summary = document.getElementById("summary");
  let lastDone = -1;
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
    if (data.done !== lastDone || data.running) {
      lastDone = data.done;
      refresh(["timeline", "tasks"]);  // the bars, and each row in its status's colours
    }
    document.body.dataset.live = "progress";
  });
  source.addEventListener("summary", (event) => {
    const data = JSON.parse(event.data);
    source.close();
    const total = Number(document.getElementById("progress")?.getAttribute("aria-valuemax"));
    setProgress(total, total);
    text(summary, data.summary + " (" + data.status + ")");
    section.dataset.status = data.status;
    refresh(["timeline", "tasks"], true).finally(() => { document.body.dataset.live = "done"; });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const job = document.querySelector("[data-events]");
  if (job) { followJob(job); } else { followProject(); }
});
