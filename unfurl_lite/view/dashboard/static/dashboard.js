// unfurl dashboard: live updates over server-sent events (EventSource), nothing else.
// The pages are complete without it; this moves a running job's progress, and draws the
// parts of a page again (from the server, which knows how) when what they show changed.
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

// The page as the server draws it now: the sections holding these ids replace the ones
// drawn before. One fetch at a time; refreshes asked for meanwhile coalesce into one,
// and one asked with `always` is never dropped.
let chain = Promise.resolve();
let queued = false;
async function redraw(parts) {
  const response = await fetch(window.location.pathname + window.location.search,
                               {cache: "no-store"});
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

function followProject() {
  const source = new EventSource("/events");
  // jobs.tsv as it was when the server drew this page: another stamp means a new record
  const drawn = JSON.stringify(JSON.parse(document.body.dataset.jobsLog || "null"));
  let seen = null;
  source.addEventListener("jobs", (event) => {
    const data = JSON.parse(event.data);
    showRunning(data.running);
    const page = document.body.dataset.page;
    const stamp = JSON.stringify(data.jobsLog);
    const recorded = drawn !== "null" && stamp !== drawn;
    const moved = JSON.stringify(data.running);
    if (page === "overview") {
      // a running job's tasks finish: the instances and the picture follow them; a job
      // recorded: the page shows it as recorded (its last job, its instances' status)
      const first = seen === null && data.running.length > 0;  // it started before we looked
      if (first || recorded || (seen !== null && moved !== seen)) {
        refresh(["last-job", "topology", "instances"], recorded)
          .finally(() => { document.body.dataset.live = "drawn"; });
      }
    } else if (page === "history" && recorded) {
      source.close();
      window.location.reload(); // a job was recorded: show it
    }
    seen = moved;
  });
}

function setProgress(finished, total) {
  const bar = document.getElementById("progress");
  if (!bar) { return; }
  bar.setAttribute("aria-valuemax", String(total));
  bar.setAttribute("aria-valuenow", String(finished));
  let fill = bar.querySelector(".fill.live");
  if (!fill) {
    bar.replaceChildren();
    fill = document.createElement("div");
    fill.className = "fill live";
    bar.append(fill);
  }
  fill.style.width = (total ? (100 * finished / total) : 0).toFixed(1) + "%";
}

function followJob(section) {
  const source = new EventSource(section.dataset.events);
  let lastDone = -1;
  source.addEventListener("progress", (event) => {
    const data = JSON.parse(event.data);
    setProgress(data.finished, data.total);
    if (data.execution) { text(document.getElementById("execution"), data.execution); }
    text(document.getElementById("partition"),
         data.done + " of " + data.total + " tasks done" +
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
      text(row.querySelector(".outcome .badge"), task.state || "pending");
    }
    if (data.done !== lastDone || data.running) {
      lastDone = data.done;
      refresh(["timeline", "tasks"]);  // the bars, and each row in its outcome's colours
    }
    document.body.dataset.live = "progress";
  });
  source.addEventListener("summary", (event) => {
    source.close();
    const data = JSON.parse(event.data);
    document.getElementById("job").dataset.status = data.status;
    // the job has ended: the page becomes the recorded job's page (status, commit, every
    // task's reason, duration and output), drawn by the server
    refresh(["job", "timeline", "tasks"], true)
      .finally(() => { document.body.dataset.live = "done"; });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const job = document.querySelector("[data-events]");
  if (job) { followJob(job); } else { followProject(); }
});
