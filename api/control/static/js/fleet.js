// Fleet: every device with its status and sparklines of its metrics, every camera with its power,
// services and figures; a camera's detail (live video, lens, peripherals, partitions, apps, streams).
import {api, attempt, badge, fmtBytes, fmtNumber, fmtSim, fmtUnix, h, show, sparkline, table} from "./ui.js";
import {playH264} from "./mse.js";

export const name = "fleet";
export const title = "Fleet";

const PAGE = 100, POINTS = 60, CAMERA_POINTS = 60;
let els = {}, page = 1, openCamera = null, player = null, wanted = false, retry = null;
const RETRY_MS = 1000;  // a feed the server ended is opened again after this
const cameraSeries = {};  // camera id -> figure -> [[sim, value]...], kept as the clock moves

export function mount(root, ctx) {
  els.sensors = h("tbody");
  els.head = h("thead");
  els.paging = h("span", {class: "muted"});
  els.cameras = h("div", {class: "cards"});
  els.drawer = h("aside", {class: "drawer", id: "camera-drawer", hidden: true});
  const prev = h("button", {type: "button", onclick: () => { page = Math.max(1, page - 1); ctx.refreshNow(); }}, "‹");
  const next = h("button", {type: "button", onclick: () => { page += 1; ctx.refreshNow(); }}, "›");
  show(root,
    h("div", {class: "cols fleet"},
      h("div", {class: "card"},
        h("h2", {}, "Sensors and devices ", els.paging, " ", prev, next,
          h("span", {class: "muted small"}, `sparklines: the last ${POINTS} reports`)),
        h("div", {class: "scroll"},
          h("table", {class: "grid", id: "sensor-table"}, els.head, els.sensors))),
      h("div", {class: "card"}, h("h2", {}, "Cameras"), h("div", {class: "scroll"}, els.cameras))),
    els.drawer);
  els.prev = prev;
  els.next = next;
}

export async function refresh(ctx) {
  const data = await api("GET", `/fleet?page=${page}&limit=${PAGE}&points=${POINTS}`);
  ctx.fleet = data;
  const s = data.sensors;
  const last = Math.min(s.total, s.page * s.limit);
  els.paging.textContent = s.total ? `${(s.page - 1) * s.limit + 1}–${last} of ${s.total}` : "none";
  els.prev.disabled = s.page <= 1;
  els.next.disabled = last >= s.total;
  const metrics = [...new Set(s.devices.flatMap((d) => Object.keys(d.metrics)))];
  const units = Object.assign({}, ...s.devices.map((d) => d.units || {}));
  show(els.head, h("tr", {}, h("th", {}, "Device"), h("th", {}, "Status"), h("th", {}, "Last report"),
    metrics.map((m) => h("th", {}, m, units[m] ? h("span", {class: "muted small"}, ` (${units[m]})`) : null))));
  show(els.sensors, s.devices.map((d) => sensorRow(d, metrics)));
  for (const camera of data.cameras) remember(camera, data.clock.sim_time);
  show(els.cameras, data.cameras.map(cameraCard));
  if (openCamera) await refreshDetail();
}

function sensorRow(d, metrics) {
  return h("tr", {dataset: {device: d.id}},
    h("td", {}, h("div", {}, d.id), h("div", {class: "muted small"}, d.type, d.simulated ? " · simulated" : "")),
    h("td", {}, badge(d.status)),
    h("td", {class: "small"}, d.last_seen ? fmtUnix(d.last_seen).slice(11, 19) : "never"),
    metrics.map((metric) => {
      const values = d.metrics[metric];
      if (!values) return h("td", {});
      const latest = [...values].reverse().find((v) => v !== null && v !== undefined);
      const unit = (d.units || {})[metric] || "";
      return h("td", {class: "metric-cell", title: values.map((v) => fmtNumber(v)).join(", ") + (unit ? ` ${unit}` : "")},
        sparkline(values.map((v) => (typeof v === "number" ? v : null))), h("b", {}, withUnit(fmtNumber(latest), unit)));
    }));
}

function remember(camera, sim) {
  const series = (cameraSeries[camera.id] ||= {});
  for (const [figure, value] of Object.entries(camera.metrics)) {
    const points = (series[figure] ||= []);
    if (points.length && points[points.length - 1][0] === sim) points[points.length - 1][1] = value;
    else points.push([sim, value]);
    while (points.length && points[0][0] > sim) points.shift();  // the world was reset
    if (points.length > CAMERA_POINTS) points.splice(0, points.length - CAMERA_POINTS);
  }
}

// "27.13 °C", "45 %" ("–" stays bare).
const withUnit = (text, unit) => (unit && text !== "–" ? `${text} ${unit}` : text);

const FIGURES = {soc_temp_c: ["SoC", "°C"], npu_percent: ["NPU", "%"], root_percent: ["root", "%"],
                 data_percent: ["data", "%"]};

function cameraStatus(c) {
  if (!c.powered) return badge(c.down_until !== null ? `booting until t=${fmtSim(c.down_until)}` : "down", "down");
  return badge("up", "online");
}

function cameraCard(c) {
  const series = cameraSeries[c.id] || {};
  const services = Object.entries(c.services).filter(([, up]) => !up).map(([svc]) => badge(`${svc} service stopped`, "failed"));
  return h("div", {class: `camera${openCamera === c.id ? " selected" : ""}`, dataset: {camera: c.id}},
    h("div", {class: "row"}, h("b", {}, c.id), cameraStatus(c), services,
      h("span", {class: "muted small"}, c.powered ? `up ${fmtSim(c.uptime)} · boot #${c.boot_count}` : ""),
      h("span", {class: "grow"}),
      c.viewers ? h("span", {class: "muted small"}, `${c.viewers} watching`) : null,
      h("button", {type: "button", class: "primary", onclick: () => openDetail(c.id)}, "Open")),
    h("div", {class: "row figures"}, Object.entries(FIGURES).map(([key, [label, unit]]) => {
      const points = series[key] || [];
      const value = c.metrics[key];
      return h("span", {class: "metric"}, h("span", {class: "mname"}, label),
        sparkline(points.map((p) => p[1])), h("b", {}, value === undefined ? "–" : `${fmtNumber(value, 1)} ${unit}`));
    })));
}

// The camera drawer ----------------------------------------------------------------------------------
function openDetail(cameraId) {
  closeVideo();
  openCamera = cameraId;
  els.drawer.hidden = false;
  els.video = h("video", {id: "camera-video", muted: true, autoplay: true, playsinline: true});
  els.videoStatus = h("span", {class: "muted small", id: "camera-video-status"}, "not playing");
  els.stream = h("select", {id: "camera-stream"});
  els.detail = h("div", {class: "detail"});
  show(els.drawer,
    h("div", {class: "row"}, h("h2", {}, `Camera ${cameraId}`), h("span", {class: "grow"}),
      h("button", {type: "button", onclick: closeDetail, title: "close"}, "✕")),
    h("div", {class: "videobox"}, els.video),
    h("div", {class: "row"}, h("label", {}, "stream ", els.stream),
      h("button", {type: "button", id: "camera-play", class: "primary", onclick: () => { wanted = true; playVideo(); }}, "Play"),
      h("button", {type: "button", id: "camera-stop", onclick: stopVideo}, "Stop"), els.videoStatus),
    els.detail);
  els.stream.addEventListener("change", () => { if (wanted) playVideo(); });
  wanted = true;  // the video plays as soon as the camera's streams are known
  attempt(refreshDetail);
}

function closeDetail() {
  stopVideo();
  openCamera = null;
  els.drawer.hidden = true;
}

function stopVideo() {
  wanted = false;
  closeVideo();
}

function closeVideo() {
  clearTimeout(retry);
  if (player) player.close();
  player = null;
  if (els.videoStatus) els.videoStatus.textContent = "not playing";
}

// Watch the chosen stream. When the server ends the feed (the world was rebuilt by a reset, a
// restore or a scenario run; the camera went down) it is opened again, on the new world's encoder,
// until the user stops it or closes the drawer.
function playVideo() {
  closeVideo();
  const stream = (els.streams || []).find((s) => s.config.stream_id === els.stream.value);
  if (!stream) return;
  const camera = openCamera, proto = location.protocol === "https:" ? "wss:" : "ws:";
  const url = `${proto}//${location.host}/cameras/${camera}/video/${stream.config.stream_id}`;
  const status = (text) => { els.videoStatus.textContent = text; };
  const ended = (event) => {
    if (!wanted || openCamera !== camera) return;
    const fleet = window.twinConsole.fleet;
    if (fleet && !fleet.cameras.some((c) => c.id === camera)) { status(`${camera} is gone`); return; }
    status(event.code === 1012 ? "the world was rebuilt: opening its stream…" : "stream ended: opening it again…");
    window.twinConsole.reattached = (window.twinConsole.reattached || 0) + 1;
    retry = setTimeout(() => { if (wanted && openCamera === camera) playVideo(); }, RETRY_MS);
  };
  player = playH264(els.video, url, stream.config, status, ended);
  window.twinConsole.video = player.state;
}

async function refreshDetail() {
  if (!openCamera) return;
  const d = await api("GET", `/cameras/${openCamera}`);
  if (Array.isArray(d.streams)) {
    els.streams = d.streams;
    const ids = d.streams.map((s) => s.config.stream_id);
    if ([...els.stream.options].map((o) => o.value).join() !== ids.join()) {
      const keep = els.stream.value;
      show(els.stream, ids.map((id) => h("option", {value: id}, id)));
      els.stream.value = ids.includes(keep) ? keep : (ids.includes("sub") ? "sub" : ids[0]);
    }
    if (wanted && !player) playVideo();
  }
  if (player) player.rate();
  show(els.detail,
    section("Power and services", kv({
      status: d.state.powered ? "up" : "down", uptime: fmtSim(d.state.uptime), boots: d.state.boot_count,
      "camera service": d.state.services.camera ? "running" : "stopped",
      "event bus": d.state.services.event_bus ? "running" : "stopped",
      firmware: d.info.version, "device time": d.device_time.unix ? fmtUnix(d.device_time.unix) : "–",
    })),
    section("Lens", failed(d.lens) || kv({
      zoom: `${d.lens.zoom_pos} steps (${d.lens.zoom_limit.min_pos}…${d.lens.zoom_limit.max_pos})`,
      focus: `${d.lens.focus_pos} steps (${d.lens.focus_limit.min_pos}…${d.lens.focus_limit.max_pos})`,
      iris: `${d.lens.iris_adc} (ADC, 0…1023)`, autofocus: d.lens.autofocus_enabled ? "on" : "off",
      "AF job": failed(d.autofocus) ? "–" : `${d.autofocus.operation} ${d.autofocus.state}`,
    })),
    section("Peripherals", failed(d.peripherals) || kv({
      "SoC temperature": `${fmtNumber(d.peripherals.soc_temp_c, 1)} °C`,
      "MCU temperature": `${fmtNumber(d.peripherals.mcu_temp_c, 1)} °C`,
      "light sensor": `${d.peripherals.light_sensor} (ADC, 0…1023)`, "IR cut": ["auto", "day", "night"][d.peripherals.ircut_mode],
      "white light": `${d.peripherals.white_light_level} %`, "IR LED": `${d.peripherals.ir_led_level} %`,
      PTZ: `pan ${fmtNumber(d.peripherals.ptz_pan_pos, 1)}° tilt ${fmtNumber(d.peripherals.ptz_tilt_pos, 1)}°`,
    })),
    section("Partitions", failed(d.partitions) || h("div", {}, d.partitions.map((p) =>
      h("div", {class: "partition"}, h("span", {class: "pname"}, p.name),
        h("span", {class: "meter"}, h("span", {class: p.usage_percent > 90 ? "full" : "", style: `width:${Math.min(100, p.usage_percent)}%`})),
        h("span", {class: "small"}, `${fmtBytes(p.used)} / ${fmtBytes(p.total)} (${fmtNumber(p.usage_percent, 1)} %)`))))),
    section("Apps", failed(d.apps) || (d.apps.length ? table(["app", "version", "state", "restarts"],
      d.apps.map((a) => [a.name || a.id, a.version, badge(a.state), a.restart_count])) : h("span", {class: "muted"}, "none installed"))),
    section("Streams", failed(d.streams) || table(["stream", "size", "set", "measured", "state", "viewers", "dropped"],
      d.streams.map((s) => [s.config.stream_id, `${s.config.width}×${s.config.height} px`, `${s.config.fps} fps`,
                            measured(s), s.status, s.viewers, `${s.dropped_frames} frames`]), {id: "camera-streams"})),
    section("Upgrades", kv({
      OTA: failed(d.ota) ? "–" : `${d.ota.status}${d.ota.current_step ? " · " + d.ota.current_step : ""}${d.ota.error ? " · " + d.ota.error : ""}`,
      "OS upgrade": d.os_upgrade && !d.os_upgrade.error ? (d.os_upgrade.status || JSON.stringify(d.os_upgrade)) : "none",
    })));
}

// A stream's measured rate. The camera counts frames per second of world time, so with the clock
// standing still (paused, or step mode between advances) it reads 0 for a stream that is watched:
// the rate this console receives (per wall second) is shown beside it.
function measured(s) {
  const here = player && !player.state.closed && els.stream.value === s.config.stream_id;
  const clock = window.twinConsole.clock || {};
  const still = clock.paused ? "– (clock paused)" : clock.mode === "step" ? "– (step clock)" : null;
  const world = !s.viewers ? "not watched" : still && !s.measured_fps ? still : `${fmtNumber(s.measured_fps, 1)} fps (world time)`;
  const received = here ? `${fmtNumber(player.state.fps, 1)} fps received here` : null;
  return h("span", {class: "small", dataset: {stream: s.config.stream_id}}, world, received ? h("br") : null, received);
}

const failed = (area) => (area && area.error !== undefined && !Array.isArray(area) ? h("span", {class: "bad"}, area.error) : null);
const section = (label, body) => h("div", {class: "section"}, h("h3", {}, label), body);
const kv = (pairs) => h("dl", {class: "kv"}, Object.entries(pairs).map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
