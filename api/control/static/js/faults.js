// Faults: every scenario action as a form generated from its parameters' JSON Schema (run now,
// optionally undone after N world seconds), the active ones with when they end and an Undo, and the
// fault state each server holds.
import {api, attempt, badge, fmtParams, fmtSim, h, show, table} from "./ui.js";
import {schemaForm} from "./schemaform.js";

export const name = "faults";
export const title = "Faults";

const GROUPS = [["server", "Servers: network and API"], ["device", "Devices"], ["camera", "Cameras"], ["", "World"]];
let els = {}, actions = null, chosen = null, form = null, known = null, knownAt = -Infinity;

export function mount(root) {
  els.list = h("div", {class: "actions", id: "action-list"});
  els.form = h("div", {id: "action-form"}, h("p", {class: "muted"}, "Choose an action."));
  els.active = h("div", {id: "active-faults"});
  els.servers = h("div", {id: "server-faults"});
  els.recent = h("div", {id: "recent-actions"});
  show(root, h("div", {class: "cols faults"},
    h("div", {class: "card"}, h("h2", {}, "Actions"), h("div", {class: "scroll"}, els.list)),
    h("div", {class: "card"}, h("h2", {}, "Run"), els.form),
    h("div", {class: "card"}, h("h2", {}, "Active"), h("div", {class: "scroll"}, els.active,
      h("h3", {}, "Fault state per server"), els.servers, h("h3", {}, "Recent actions"), els.recent))));
}

// What the forms offer (refreshed every 10 s of wall time): the servers the control plane holds
// faults for and the cameras, as selects; the devices and metrics as suggestions (any id is taken:
// an action may name a device that is gone).
async function suggestions() {
  if (known && performance.now() - knownAt < 10000) return known;
  const [fleet, faults] = await Promise.all([api("GET", "/fleet?limit=1000&points=1"), api("GET", "/faults")]);
  const metrics = new Set(fleet.sensors.devices.flatMap((d) => Object.keys(d.metrics)));
  known = {
    choices: {server: Object.keys(faults), camera: fleet.cameras.map((c) => c.id)},
    suggest: {device: fleet.sensors.devices.map((d) => d.id), metric: [...metrics]},
  };
  knownAt = performance.now();
  return known;
}

function groupOf(action) {
  const props = action.params.properties || {};
  return (GROUPS.find(([key]) => key && key in props) || GROUPS[GROUPS.length - 1])[0];
}

function renderList() {
  show(els.list, GROUPS.map(([key, label]) => [
    h("h3", {}, label),
    actions.filter((a) => groupOf(a) === key).map((a) =>
      h("button", {type: "button", class: `action${chosen && chosen.name === a.name ? " selected" : ""}`,
                   dataset: {action: a.name}, title: a.doc, onclick: () => choose(a)},
        h("b", {}, a.name), h("span", {class: "muted small"}, a.doc))),
  ]));
}

async function choose(action) {
  chosen = action;
  renderList();
  const {suggest, choices} = await suggestions();
  form = schemaForm(action.params, suggest, choices);
  const duration = h("input", {id: "action-for", type: "number", min: "0", step: "any", class: "num",
                              placeholder: "until undone"});
  show(els.form,
    h("h3", {}, action.name), h("p", {class: "muted"}, action.doc),
    form.el,
    h("div", {class: "field"}, h("label", {for: "action-for"}, "for"),
      h("span", {}, duration, h("small", {class: "muted"}, " world seconds, then undone (blank: until undone)"))),
    h("div", {class: "row"}, h("button", {type: "button", class: "primary", id: "action-run", onclick: async () => {
      const body = {params: form.value()};
      if (duration.value !== "") body.for = Number(duration.value);
      const run = await attempt(() => api("POST", `/actions/${action.name}`, body));
      if (run) {
        const until = run.undo_at !== null ? `, undone at t=${fmtSim(run.undo_at)}` : "";
        els.lastRun.textContent = `#${run.id} ${run.action} ${fmtParams(run.params)}${until}`;
        await refresh();
      }
    }}, "Run"), els.lastRun = h("span", {class: "muted small"})));
}

export async function refresh() {
  const [listing, faults] = await Promise.all([api("GET", "/actions"), api("GET", "/faults")]);
  if (!actions) {
    actions = listing.actions;
    renderList();
  }
  const log = listing.log.slice().reverse();
  const active = log.filter((a) => a.active);
  show(els.active, active.length ? table(["#", "action", "parameters", "since", "ends", ""], active.map((a) => [
    a.id, h("b", {}, a.action), fmtParams(a.params), `t=${fmtSim(a.at)}`,
    a.undo_at !== null ? `t=${fmtSim(a.undo_at)}` : h("span", {class: "muted"}, "when undone"),
    h("button", {type: "button", dataset: {undo: a.id}, onclick: () =>
      attempt(async () => { await api("DELETE", `/actions/${a.id}`); await refresh(); }, `undid #${a.id}`)}, "Undo"),
  ])) : h("p", {class: "muted", id: "no-active"}, "No active faults."));
  show(els.servers, Object.entries(faults).map(([server, f]) => serverRow(server, f)));
  const ended = log.filter((a) => !a.active).slice(0, 12);
  show(els.recent, ended.length ? table(["#", "action", "parameters", "at", "ended"], ended.map((a) => [
    a.id, a.action, fmtParams(a.params), `t=${fmtSim(a.at)}`, a.ended_at !== null ? `t=${fmtSim(a.ended_at)}` : "–",
  ])) : h("p", {class: "muted"}, "None yet."));
}

function serverRow(server, f) {
  const parts = [];
  for (const l of f.latency) parts.push(badge(`latency ${l.seconds}s±${l.jitter} ${l.path_prefix}`, "warn"));
  for (const e of f.errors) parts.push(badge(`${e.status} ×${e.remaining ?? "∞"} ${e.path_prefix}`, "failed"));
  if (f.loss) parts.push(badge(`loss ${Math.round(f.loss * 100)} %`, "warn"));
  if (f.reset_next) parts.push(badge(`reset next ${f.reset_next}`, "warn"));
  if (f.truncate_next) parts.push(badge(`truncate next ${f.truncate_next}`, "warn"));
  if (f.hang) parts.push(badge("hang", "failed"));
  if (f.bandwidth) parts.push(badge(`${f.bandwidth} B/s`, "warn"));
  return h("div", {class: "row server", dataset: {server}}, h("b", {}, server),
    parts.length ? parts : h("span", {class: "muted small"}, "clean"),
    h("span", {class: "muted small"}, `${f.open_streams} open streams`), h("span", {class: "grow"}),
    parts.length ? h("button", {type: "button", onclick: () =>
      attempt(async () => { await api("DELETE", `/faults/${server}`); await refresh(); }, `cleared ${server}`)}, "Clear") : null);
}
