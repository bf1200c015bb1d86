// Scenarios: the library and uploads, running one on the live world, its timeline (the steps, the
// actions run as bars from start to end, the clock as a cursor) and its expectations turning
// passed / failed / inconclusive as the run goes, then the HTML report.
import {api, attempt, badge, fmtParams, fmtSim, h, show, svg, table} from "./ui.js";

export const name = "scenarios";
export const title = "Scenarios";

let els = {}, library = null;

export function mount(root, ctx) {
  els.library = h("div", {id: "scenario-library"});
  els.upload = h("input", {type: "file", accept: ".yaml,.yml", id: "scenario-upload", onchange: () => upload(ctx)});
  els.loaded = h("div", {id: "scenario-loaded"}, h("p", {class: "muted"}, "Load a scenario from the library or a file."));
  els.run = h("div", {id: "scenario-run"});
  show(root, h("div", {class: "cols scenarios"},
    h("div", {class: "card"}, h("h2", {}, "Library"),
      h("div", {class: "row"}, h("label", {}, "Upload YAML ", els.upload)),
      h("div", {class: "scroll"}, els.library)),
    h("div", {class: "card"}, h("div", {class: "scroll"}, els.loaded, els.run))));
}

async function upload(ctx) {
  const file = els.upload.files[0];
  if (!file) return;
  const text = await file.text();
  await attempt(() => api("POST", "/scenario/load", {yaml: text, filename: file.name}), `loaded ${file.name}`);
  els.upload.value = "";
  ctx.refreshNow();
}

function renderLibrary(ctx) {
  show(els.library, library.map((s) => h("div", {class: "libitem", dataset: {scenario: s.name}},
    h("div", {class: "row"}, h("b", {}, s.name), h("span", {class: "grow"}),
      s.error ? badge("invalid", "failed") : h("span", {class: "muted small"},
        `${s.sensors} sensors · ${s.cameras} cam · ${fmtSim(s.stop_at)}`),
      h("button", {type: "button", disabled: Boolean(s.error), onclick: async () => {
        await attempt(() => api("POST", "/scenario/load", {name: s.name}), `loaded ${s.name}`);
        ctx.refreshNow();
      }}, "Load")),
    h("div", {class: "muted small clamp", title: s.error || s.description}, s.error || s.description))));
}

export async function refresh(ctx) {
  if (!library) {
    try {
      library = (await api("GET", "/scenarios")).scenarios;
    } catch (err) {
      if (err.status !== 404) throw err;
      show(els.loaded, h("p", {class: "bad"}, err.message));  // a twin started without them
      return;
    }
    renderLibrary(ctx);
  }
  const status = await api("GET", "/scenario");
  renderLoaded(status, ctx);
  renderRun(status, ctx);
}

let shownLoaded = null;
function renderLoaded(status, ctx) {
  const s = status.loaded;
  const key = s ? JSON.stringify(s) : null;
  const running = status.run && status.run.state === "running";
  if (key === shownLoaded) {
    if (els.runButton) els.runButton.disabled = running;
    return;
  }
  shownLoaded = key;
  if (!s) return;
  const mode = h("select", {id: "run-mode"}, ["step", "realtime"].map((m) => h("option", {value: m}, m)));
  mode.value = s.clock.mode;
  const speed = h("input", {id: "run-speed", type: "number", min: "0.001", step: "any", class: "num", value: s.clock.speed});
  const drive = h("input", {id: "run-drive", type: "checkbox", checked: true});
  els.runButton = h("button", {type: "button", class: "primary", id: "scenario-start", disabled: running, onclick: async () => {
    const body = {mode: mode.value, speed: Number(speed.value), drive: drive.checked};
    await attempt(() => api("POST", "/scenario/run", body), `running ${s.name}`);
    ctx.refreshNow();
  }}, "Run");
  show(els.loaded,
    h("h2", {}, s.name, " ", h("span", {class: "muted small"}, s.source)),
    h("p", {class: "muted"}, s.description),
    h("div", {class: "row"}, h("span", {class: "small"}, `seed ${s.seed} · stop at t=${fmtSim(s.stop_at)} · `,
      `${s.timeline.length} timeline steps · ${s.expectations.length} expectations`)),
    h("div", {class: "row"},
      h("label", {}, "mode ", mode), h("label", {}, "speed × ", speed),
      h("label", {title: "step mode: the run moves the clock itself; unticked, time moves as clients and the clock controls move it"},
        drive, " drive the clock"),
      els.runButton,
      h("span", {class: "muted small"}, "Running rebuilds the world from the scenario and clears every fault.")));
}

function renderRun(status, ctx) {
  const run = status.run;
  if (!run) { show(els.run); return; }
  const s = run.scenario;
  const done = run.state !== "running";
  const progress = Math.min(1, run.sim_time / run.stop_at);
  show(els.run,
    h("h3", {}, "Run of ", s.name, " ", badge(run.state, run.state === "running" ? "running" : "idle"),
      done ? badge(run.outcome, run.outcome) : null),
    h("div", {class: "row"},
      h("span", {id: "scenario-state", dataset: {state: run.state, outcome: run.outcome}},
        `t=${fmtSim(run.sim_time)} of ${fmtSim(run.stop_at)} · ${run.mode}${run.mode === "step" && !run.drive ? " (not driven)" : ""} · `,
        `${run.requests} requests · ${run.events} world events`),
      h("span", {class: "grow"}),
      done ? null : h("button", {type: "button", id: "scenario-stop", onclick: async () => {
        await attempt(() => api("DELETE", "/scenario/run"), "stopped");
        ctx.refreshNow();
      }}, "Stop"),
      h("a", {href: "/scenario/report", target: "_blank", id: "scenario-report", class: "button"},
        done ? "Open report" : "Report so far")),
    h("div", {class: "progress"}, h("span", {style: `width:${(progress * 100).toFixed(1)}%`})),
    timeline(s, run),
    h("h3", {}, "Expectations"),
    table(["expectation", "outcome", "why"], run.verdicts.map((v) => [
      h("span", {}, v.name, v.optional ? h("span", {class: "muted small"}, " (optional)") : null),
      badge(done || v.outcome !== "inconclusive" ? v.outcome : "so far: " + v.outcome, v.outcome),
      h("span", {class: "small"}, v.message),
    ]), {id: "verdicts"}),
    run.errors.length ? [h("h3", {}, "Errors"), h("ul", {class: "bad"}, run.errors.map((e) => h("li", {}, e)))] : null);
}

// Steps at their times above the axis, actions as bars below it (start to end, or to now while
// active), the clock as a cursor; steps triggered by events listed under it.
function timeline(s, run) {
  const W = 860, left = 10, right = 10, top = 18;
  const x = (t) => left + ((W - left - right) * Math.min(t, run.stop_at)) / run.stop_at;
  const rows = Math.max(1, run.actions.length);
  const height = top + 26 + rows * 14 + 16;
  const box = svg("svg", {class: "timeline", viewBox: `0 0 ${W} ${height}`, width: "100%"});
  const axis = top + 18;
  box.append(svg("line", {x1: x(0), y1: axis, x2: x(run.stop_at), y2: axis, class: "axis"}));
  s.timeline.filter((st) => st.at !== null).forEach((st, i) => {
    const tx = x(st.at);
    box.append(svg("line", {x1: tx, y1: axis - 8, x2: tx, y2: axis + 2, class: "step"}));
    const label = svg("text", {x: tx + 2, y: axis - 10 - (i % 2) * 9, class: "steplabel"});
    label.textContent = `${st.do}${st.for ? ` (${fmtSim(st.for)})` : ""}`;
    box.append(label);
  });
  run.actions.forEach((a, i) => {
    const end = a.ended_at ?? (a.active ? run.sim_time : a.at);
    const y = axis + 8 + i * 14;
    const bar = svg("rect", {x: x(a.at), y, width: Math.max(2, x(end) - x(a.at)), height: 10,
                              class: a.active ? "bar active" : "bar"});
    const tip = svg("title");
    tip.textContent = `#${a.id} ${a.action} ${fmtParams(a.params)} t=${fmtSim(a.at)}–${a.ended_at !== null ? fmtSim(a.ended_at) : "…"}`;
    bar.append(tip);
    box.append(bar);
    const label = svg("text", {x: x(a.at) + 3, y: y + 9, class: "barlabel"});
    label.textContent = a.action;
    box.append(label);
  });
  box.append(svg("line", {x1: x(run.sim_time), y1: 4, x2: x(run.sim_time), y2: height - 4, class: "cursor"}));
  for (const [t, anchor] of [[0, "start"], [run.stop_at, "end"]]) {
    const label = svg("text", {x: x(t), y: height - 2, class: "ticklabel", "text-anchor": anchor});
    label.textContent = fmtSim(t);
    box.append(label);
  }
  const triggered = s.timeline.filter((st) => st.after !== null);
  return h("div", {class: "timelinebox"}, box, triggered.length ? h("div", {class: "muted small"}, "On events: ",
    triggered.map((st) => `${st.do} after ${st.after.event}${st.after.source ? " from " + st.after.source : ""}` +
      (st.after.delay ? ` + ${fmtSim(st.after.delay)}` : "")).join("; ")) : null);
}
