// Journal: the requests clients made to the vendor APIs, filtered by server, route, status and
// client, newest first, each with the faults that applied (the transport fault that shaped its
// answer, and the actions active on its server then).
import {api, badge, fmtNumber, fmtSim, h, show, table} from "./ui.js";

export const name = "journal";
export const title = "Journal";

const KEEP = 1000, WINDOW = 5000, PAGE = 1000;
let els = {}, entries = [], since = null, filterKey = "", windows = [];

export function mount(root, ctx) {
  const select = (id) => h("select", {id, onchange: () => { since = null; ctx.refreshNow(); }}, h("option", {value: ""}, "all"));
  els.server = select("journal-server");
  els.route = select("journal-route");
  els.status = select("journal-status");
  els.client = select("journal-client");
  els.faulted = h("input", {type: "checkbox", id: "journal-faulted", onchange: () => render()});
  els.follow = h("input", {type: "checkbox", id: "journal-follow", checked: true});
  els.count = h("span", {class: "muted small"});
  els.table = h("div", {class: "scroll"});
  show(root, h("div", {class: "card full"},
    h("div", {class: "row"}, h("h2", {}, "Request journal"),
      h("label", {}, "server ", els.server), h("label", {}, "route ", els.route),
      h("label", {}, "status ", els.status), h("label", {}, "client ", els.client),
      h("label", {}, els.faulted, " only with faults"), h("label", {}, els.follow, " follow"),
      h("span", {class: "grow"}), els.count),
    els.table));
}

function fill(el, values) {
  const keep = el.value;
  const have = [...el.options].slice(1).map((o) => o.value).join("\n");
  const want = values.map(String);
  if (have === want.join("\n")) return;
  show(el, h("option", {value: ""}, "all"), want.map((v) => h("option", {value: v}, v)));
  el.value = want.includes(keep) ? keep : "";
}

export async function refresh() {
  const [filters, actions] = await Promise.all([api("GET", "/journal/filters"), api("GET", "/actions")]);
  fill(els.server, filters.servers);
  fill(els.route, filters.routes);
  fill(els.status, filters.statuses);
  fill(els.client, filters.clients);
  windows = actions.log;
  const query = new URLSearchParams();
  for (const [key, el] of [["server", els.server], ["route", els.route], ["status", els.status], ["client", els.client]]) {
    if (el.value) query.set(key, el.value);
  }
  const key = query.toString();
  if (key !== filterKey || since === null || filters.last_seq < since) {
    filterKey = key;
    entries = [];
    since = Math.max(0, filters.last_seq - WINDOW);
  }
  if (!els.follow.checked && entries.length) { render(); return; }
  for (let pages = 0; pages < WINDOW / PAGE; pages++) {
    query.set("since", since);
    query.set("limit", PAGE);
    const page = await api("GET", `/journal?${query}`);
    entries.push(...page.entries);
    since = page.next_since;
    els.count.textContent = `${page.total} requests kept${page.dropped ? `, ${page.dropped} dropped` : ""}`;
    if (page.entries.length < PAGE) break;
  }
  if (entries.length > KEEP) entries.splice(0, entries.length - KEEP);
  render();
}

// The actions active on the entry's server when it arrived.
function appliedActions(e) {
  return windows.filter((a) => {
    const target = a.params.server ?? a.params.camera;
    return target === e.server && a.at <= e.at && (a.ended_at === null ? a.active : e.at < a.ended_at);
  });
}

function render() {
  const rows = [];
  for (let i = entries.length - 1; i >= 0 && rows.length < KEEP; i--) {
    const e = entries[i];
    const applied = appliedActions(e);
    if (els.faulted.checked && !e.fault && !applied.length) continue;
    const kind = e.status === 0 ? "failed" : e.status >= 500 ? "failed" : e.status === 429 ? "warn" : e.status >= 400 ? "offline" : "online";
    rows.push([
      e.seq, `t=${fmtSim(e.at)}`, e.end > e.at ? `${fmtNumber(e.end - e.at, 3)} s` : "", e.server, e.method,
      h("span", {class: "path", title: e.route}, e.path + (e.query ? `?${e.query}` : "")),
      badge(e.status === 0 ? "closed" : String(e.status), kind), e.client,
      [e.fault ? badge(e.fault, "failed") : null, e.state ? badge(e.state, "idle") : null,
       applied.map((a) => badge(`#${a.id} ${a.action}`, "warn")),
       e.retry_after ? h("span", {class: "muted small"}, ` Retry-After ${e.retry_after}`) : null],
    ]);
  }
  show(els.table, rows.length ? table(["#", "at", "took", "server", "method", "path", "status", "client", "faults"], rows,
    {id: "journal-table"}) : h("p", {class: "muted"}, "No requests match."));
}
