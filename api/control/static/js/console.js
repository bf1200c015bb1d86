// The console's frame: the tabs, the clock bar and one poll loop that refreshes the clock and the
// view on show. Every view is a module with {name, title, mount(root, ctx), refresh(ctx)}.
import {api, attempt, badge, fmtSim, fmtUnix, show, toast} from "./ui.js";
import * as fleet from "./fleet.js";
import * as faults from "./faults.js";
import * as scenarios from "./scenarios.js";
import * as journal from "./journal.js";
import * as snapshots from "./snapshots.js";

const POLL_MS = 1000;
const views = [fleet, faults, scenarios, journal, snapshots];
const ctx = {clock: null, refreshNow: () => poll()};
window.twinConsole = ctx;

const $ = (id) => document.getElementById(id);
const roots = {};
let active = null;

for (const view of views) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = view.title;
  button.id = `tab-${view.name}`;
  button.addEventListener("click", () => { location.hash = view.name; });
  $("tabs").append(button);
  const root = document.createElement("section");
  root.className = "view";
  root.id = `view-${view.name}`;
  $("views").append(root);
  roots[view.name] = root;
  view.mount(root, ctx);
}

function select() {
  const name = location.hash.slice(1) || views[0].name;
  active = views.find((v) => v.name === name) || views[0];
  for (const view of views) {
    roots[view.name].hidden = view !== active;
    $(`tab-${view.name}`).classList.toggle("active", view === active);
  }
  poll();
}
window.addEventListener("hashchange", select);

// The clock bar -----------------------------------------------------------------------------------
function renderClock(clock) {
  ctx.clock = clock;
  $("clock-date").textContent = fmtUnix(clock.unix_time);
  $("clock-sim").textContent = `t = ${fmtSim(clock.sim_time)}`;
  $("clock-sim").dataset.sim = clock.sim_time;
  const running = clock.mode === "realtime" && !clock.paused;
  show($("clock-state"), clock.paused ? badge("paused") : badge(running ? "running" : "stepping", running ? "running" : "idle"));
  $("clock-toggle").textContent = clock.paused ? "Resume" : "Pause";
  if (document.activeElement !== $("clock-mode")) $("clock-mode").value = clock.mode;
  if (document.activeElement !== $("clock-speed")) $("clock-speed").value = clock.speed;
}

const clockCall = (method, path, body) => attempt(async () => renderClock(await api(method, path, body)));
$("clock-toggle").addEventListener("click", () =>
  clockCall("POST", ctx.clock && ctx.clock.paused ? "/clock/resume" : "/clock/pause"));
$("clock-mode").addEventListener("change", (e) => clockCall("PUT", "/clock/mode", {mode: e.target.value}));
$("clock-speed-set").addEventListener("click", () =>
  clockCall("PUT", "/clock/speed", {speed: Number($("clock-speed").value)}));
// A number field's value, or null after telling the user what is wrong with it.
function seconds(id, what) {
  const field = $(id);
  if (field.value.trim() === "") {
    toast(field.validity.badInput ? `${what}: not a number` : `${what}: the field is empty; enter a number of seconds`, true);
    field.focus();
    return null;
  }
  const value = Number(field.value);
  if (!Number.isFinite(value) || value < 0) {
    toast(`${what}: enter a number of seconds ≥ 0`, true);
    field.focus();
    return null;
  }
  return value;
}

$("clock-advance").addEventListener("click", async () => {
  const value = seconds("clock-seconds", "advance");
  if (value === null) return;
  await clockCall("POST", "/clock/advance", {seconds: value});
  poll();
});
$("clock-run-to").addEventListener("click", async () => {
  const value = seconds("clock-target", "run to");
  if (value === null) return;
  await clockCall("POST", "/clock/run-to", {sim_time: value});
  poll();
});

// The poll loop: one refresh at a time, another right after when asked meanwhile ---------------------
let busy = false, again = false, timer = null;
async function poll() {
  if (busy) { again = true; return; }
  busy = true;
  clearTimeout(timer);
  try {
    renderClock(await api("GET", "/clock"));
    $("link").textContent = "connected";
    $("link").className = "link ok";
    if (active) await active.refresh(ctx);
  } catch (err) {
    $("link").textContent = err.status ? `error: ${err.message}` : "control plane unreachable";
    $("link").className = "link bad";
  } finally {
    busy = false;
    timer = setTimeout(poll, POLL_MS);
    if (again) { again = false; poll(); }
  }
}

select();
