// Small helpers the console's views share: the control-plane client, element building, formatting,
// sparklines and a message line.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// Call the control plane; the JSON answer, or an ApiError with its {"error": {code, message}}.
export async function api(method, path, body) {
  const init = {method, headers: {}};
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const type = resp.headers.get("content-type") || "";
  const data = type.includes("json") ? await resp.json() : await resp.text();
  if (!resp.ok) {
    const err = (data && data.error) || {};
    throw new ApiError(resp.status, err.code || String(resp.status), err.message || String(data));
  }
  return data;
}

// h("div", {class: "x", onclick: fn}, child, "text", [more]) builds an element.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

const SVG = "http://www.w3.org/2000/svg";
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== undefined && value !== null) el.setAttribute(key, value);
  for (const child of children) if (child) el.append(child);
  return el;
}

// Replace what `el` shows.
export function show(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

// A line of values as a small SVG polyline; null values break the line (gaps).
export function sparkline(values, {width = 90, height = 22, cls = "spark"} = {}) {
  const finite = values.filter((v) => typeof v === "number" && Number.isFinite(v));
  const box = svg("svg", {class: cls, width, height, viewBox: `0 0 ${width} ${height}`});
  if (!finite.length) return box;
  let lo = Math.min(...finite), hi = Math.max(...finite);
  if (hi === lo) { hi += 1; lo -= 1; }
  const x = (i) => (values.length < 2 ? width / 2 : (i * (width - 2)) / (values.length - 1) + 1);
  const y = (v) => height - 2 - ((v - lo) * (height - 4)) / (hi - lo);
  let run = [];
  const flush = () => {
    if (run.length === 1) box.append(svg("circle", {cx: run[0][0], cy: run[0][1], r: 1.5}));
    else if (run.length) box.append(svg("polyline", {points: run.map((p) => p.join(",")).join(" ")}));
    run = [];
  };
  values.forEach((v, i) => {
    if (typeof v === "number" && Number.isFinite(v)) run.push([x(i).toFixed(1), y(v).toFixed(1)]);
    else flush();
  });
  flush();
  return box;
}

export function fmtNumber(v, digits = 2) {
  if (v === null || v === undefined) return "–";
  if (typeof v !== "number") return String(v);
  return Number.isInteger(v) ? String(v) : v.toFixed(digits);
}

// Sim seconds as "1234.5 s" / "2 h 03 m".
export function fmtSim(t) {
  if (t === null || t === undefined) return "–";
  if (t < 600) return `${Number(t.toFixed(1))} s`;
  const hours = Math.floor(t / 3600), minutes = Math.floor((t % 3600) / 60), seconds = Math.floor(t % 60);
  if (hours) return `${hours} h ${String(minutes).padStart(2, "0")} m`;
  return seconds ? `${minutes} m ${String(seconds).padStart(2, "0")} s` : `${minutes} m`;
}

// Unix seconds as an ISO-like UTC date and time.
export function fmtUnix(t) {
  if (t === null || t === undefined) return "–";
  return new Date(t * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return `${n.toFixed(n < 10 && i ? 1 : 0)} ${units[i]}`;
}

export function fmtParams(params) {
  return Object.entries(params || {}).map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`).join(" ");
}

// A status word as a coloured badge.
export function badge(text, kind = text) {
  return h("span", {class: `badge b-${String(kind).replace(/[^a-z0-9_-]/gi, "")}`}, text);
}

let toastTimer = null;
// Tell the user something (errors stay longer).
export function toast(message, isError = false) {
  const el = document.getElementById("toast");
  if (!el) return;
  el.textContent = message;
  el.className = isError ? "show error" : "show";
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.className = ""; }, isError ? 6000 : 2500);
}

// Run an action from a button: errors become a message instead of an unhandled rejection.
export async function attempt(fn, done) {
  try {
    const result = await fn();
    if (done) toast(done);
    return result;
  } catch (err) {
    toast(err.message || String(err), true);
    return undefined;
  }
}

// A table of `head` and `rows` (cells: text or elements).
export function table(head, rows, attrs = {}) {
  return h("table", {class: "grid", ...attrs}, h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))));
}
