// World: snapshots (take with a label, list, restore, delete), and a reset of the whole world with an
// optional seed.
import {api, attempt, fmtSim, h, show, table, toast} from "./ui.js";

export const name = "snapshots";
export const title = "Snapshots";

let els = {};

export function mount(root, ctx) {
  els.list = h("div", {id: "snapshot-list"});
  els.label = h("input", {type: "text", id: "snapshot-label", maxlength: "200", placeholder: "label (optional)"});
  els.seed = h("input", {type: "number", min: "0", step: "1", class: "num", id: "reset-seed", placeholder: "same"});
  els.current = h("span", {class: "muted small"});
  show(root, h("div", {class: "cols world"},
    h("div", {class: "card"}, h("h2", {}, "Snapshots"),
      h("p", {class: "muted"}, "A snapshot keeps the clock, the random streams, every entity and the durable state; " +
        "restoring one puts the world back exactly there. The newest 32 are kept."),
      h("div", {class: "row"}, els.label, h("button", {type: "button", class: "primary", id: "snapshot-take", onclick: async () => {
        const taken = await attempt(() => api("POST", "/snapshots", {label: els.label.value.trim()}));
        if (taken) {
          toast(`snapshot ${taken.id} taken${taken.label ? ` (${taken.label})` : ""}`);
          els.label.value = "";
        }
        ctx.refreshNow();
      }}, "Take snapshot")),
      els.list),
    h("div", {class: "card"}, h("h2", {}, "Reset"),
      h("p", {class: "muted"}, "Rebuild the world from its constructor: sim time 0, durable state wiped."),
      h("div", {class: "row"}, h("label", {}, "seed ", els.seed), els.current,
        h("button", {type: "button", id: "reset-world", onclick: async () => {
          if (!confirm("Reset the world? Its state is lost unless a snapshot keeps it.")) return;
          const body = els.seed.value === "" ? {} : {seed: Number(els.seed.value)};
          await attempt(() => api("POST", "/reset", body), "world reset");
          ctx.refreshNow();
        }}, "Reset world")))));
}

export async function refresh(ctx) {
  const [{snapshots}, {seed}] = await Promise.all([api("GET", "/snapshots"), api("GET", "/seed")]);
  els.current.textContent = `current seed ${seed}`;
  show(els.list, snapshots.length ? table(["snapshot", "label", "sim time", "seed", ""], snapshots.slice().reverse().map((s) => [
    s.id, s.label || h("span", {class: "muted"}, "–"), `t=${fmtSim(s.sim_time)}`, s.seed,
    h("span", {class: "row"},
      h("button", {type: "button", dataset: {restore: s.id}, onclick: async () => {
        await attempt(() => api("POST", `/snapshots/${s.id}/restore`), `restored ${s.id}`);
        ctx.refreshNow();
      }}, "Restore"),
      h("button", {type: "button", dataset: {delete: s.id}, onclick: async () => {
        await attempt(() => api("DELETE", `/snapshots/${s.id}`), `deleted ${s.id}`);
        ctx.refreshNow();
      }}, "Delete")),
  ]), {id: "snapshot-table"}) : h("p", {class: "muted", id: "no-snapshots"}, "No snapshot yet."));
}
