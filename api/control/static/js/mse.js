// Plays the gateway's live H.264 WebSocket framing in a <video> through Media Source Extensions.
//
// Each binary message is one access unit: an 18-byte header (magic 0xFFD8FF00, frame type 0 key /
// 1 not key, flags, PTS u32, DTS u32 at 90 kHz, 4 reserved bytes, big-endian), then AVCC NAL units.
// The first message carries SPS/PPS: it becomes the fragmented-MP4 init segment (ftyp/moov with the
// avcC), and every access unit after it a moof/mdat pair. A text message is an error from the feed.

function concat(parts) {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) { out.set(p, o); o += p.length; }
  return out;
}
const u8 = (v) => Uint8Array.of(v & 255);
const u16 = (v) => Uint8Array.of((v >>> 8) & 255, v & 255);
const u32 = (v) => Uint8Array.of((v >>> 24) & 255, (v >>> 16) & 255, (v >>> 8) & 255, v & 255);
const u64 = (v) => concat([u32(Math.floor(v / 4294967296)), u32(v >>> 0)]);
const str = (s) => Uint8Array.from(s, (c) => c.charCodeAt(0));
const zeros = (n) => new Uint8Array(n);
function box(type, ...parts) {
  const body = concat(parts);
  return concat([u32(body.length + 8), str(type), body]);
}
function full(type, version, flags, ...parts) {
  return box(type, u8(version), Uint8Array.of((flags >>> 16) & 255, (flags >>> 8) & 255, flags & 255), ...parts);
}
const MATRIX = concat([0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000].map(u32));

export const MAGIC = 0xFFD8FF00;

export function nals(avcc) {
  const out = [];
  const view = new DataView(avcc.buffer, avcc.byteOffset, avcc.byteLength);
  let i = 0;
  while (i + 4 <= avcc.length) {
    const n = view.getUint32(i);
    out.push(avcc.subarray(i + 4, i + 4 + n));
    i += 4 + n;
  }
  return out;
}

export function initSegment(sps, pps, width, height) {
  const avcC = box("avcC", u8(1), u8(sps[1]), u8(sps[2]), u8(sps[3]), u8(0xff), u8(0xe1),
                   u16(sps.length), sps, u8(1), u16(pps.length), pps);
  const avc1 = box("avc1", zeros(6), u16(1), zeros(16), u16(width), u16(height), u32(0x480000), u32(0x480000),
                   u32(0), u16(1), zeros(32), u16(0x18), u16(0xffff), avcC);
  const stbl = box("stbl", full("stsd", 0, 0, u32(1), avc1), full("stts", 0, 0, u32(0)),
                   full("stsc", 0, 0, u32(0)), full("stsz", 0, 0, u32(0), u32(0)), full("stco", 0, 0, u32(0)));
  const minf = box("minf", full("vmhd", 0, 1, zeros(8)),
                   box("dinf", full("dref", 0, 0, u32(1), full("url ", 0, 1))), stbl);
  const mdia = box("mdia", full("mdhd", 0, 0, u32(0), u32(0), u32(90000), u32(0), u16(0x55c4), u16(0)),
                   full("hdlr", 0, 0, u32(0), str("vide"), zeros(12), str("VideoHandler"), u8(0)), minf);
  const tkhd = full("tkhd", 0, 3, u32(0), u32(0), u32(1), u32(0), u32(0), zeros(8), u16(0), u16(0), u16(0),
                    u16(0), MATRIX, u32(width * 65536), u32(height * 65536));
  const mvhd = full("mvhd", 0, 0, u32(0), u32(0), u32(1000), u32(0), u32(0x10000), u16(0x100), zeros(10),
                    MATRIX, zeros(24), u32(2));
  const mvex = box("mvex", full("trex", 0, 0, u32(1), u32(1), u32(0), u32(0), u32(0)));
  return concat([box("ftyp", str("isom"), u32(0x200), str("isom"), str("iso6"), str("avc1"), str("mp41")),
                 box("moov", mvhd, box("trak", tkhd, mdia), mvex)]);
}

export function fragment(seq, decodeTime, duration, key, sample) {
  const trun = (offset) => full("trun", 0, 0x000701, u32(1), u32(offset), u32(duration), u32(sample.length),
                                u32(key ? 0x02000000 : 0x01010000));
  const build = (offset) => box("moof", full("mfhd", 0, 0, u32(seq)),
    box("traf", full("tfhd", 0, 0x020000, u32(1)), full("tfdt", 1, 0, u64(decodeTime)), trun(offset)));
  const size = build(0).length;
  return concat([build(size + 8), box("mdat", sample)]);
}

// Frames per second over the last RATE_WINDOW_MS of wall time, as they arrive.
const RATE_WINDOW_MS = 2000;
// Playback further than this behind the newest frame jumps to it (a burst of frames, such as a
// step-mode clock driven ahead, would otherwise pile up as delay).
const MAX_LAG_S = 1.0;

// Play the feed at `url` (a ws:// or wss:// address) in `video`; `info` is the stream's
// {width, height, fps}. Returns {state, close()}: state counts frames and appended segments, the
// frame rate received (`fps`, frames per wall second over the last 2 s) and keeps the last error;
// `onStatus(text)` is told how it goes, and `onEnd(event)` when the server ends the feed (a close
// this side did not ask for, such as 1012 after the world was rebuilt).
export function playH264(video, url, info, onStatus = () => {}, onEnd = () => {}) {
  const state = {frames: 0, appended: 0, error: "", closed: false, fps: 0, code: null};
  const arrivals = [];
  // The received rate now: frames in the window over the window (0 once they stop coming).
  const rate = () => {
    const now = performance.now();
    while (arrivals.length && arrivals[0] < now - RATE_WINDOW_MS) arrivals.shift();
    const span = arrivals.length > 1 ? Math.max(now - arrivals[0], 1000) : 0;
    state.fps = span > 0 ? ((arrivals.length - 1) * 1000) / span : 0;
    return state.fps;
  };
  const duration = Math.round(90000 / (info.fps || 25));
  const source = new MediaSource();
  video.src = URL.createObjectURL(source);
  let ws = null;
  const close = () => {
    state.closed = true;
    if (ws) ws.close();
    if (video.src) { URL.revokeObjectURL(video.src); video.removeAttribute("src"); video.load(); }
  };
  source.addEventListener("sourceopen", () => {
    if (state.closed) return;
    const queue = [];
    let buffer = null, seq = 0, started = false;
    const catchUp = () => {
      const ranges = video.buffered;
      if (!ranges.length) return;
      const end = ranges.end(ranges.length - 1);
      if (end - video.currentTime > MAX_LAG_S) video.currentTime = Math.max(ranges.start(ranges.length - 1), end - 0.1);
    };
    const pump = () => {
      if (!buffer || buffer.updating || source.readyState !== "open") return;
      if (queue.length) {
        buffer.appendBuffer(queue.shift());
        state.appended++;
      } else {
        catchUp();
      }
    };
    ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    ws.onmessage = (event) => {
      if (typeof event.data === "string") { state.error = event.data; onStatus(event.data); return; }
      const msg = new Uint8Array(event.data);
      const head = new DataView(event.data);
      if (msg.length < 18 || head.getUint32(0) !== MAGIC) return;
      const key = msg[4] === 0, payload = msg.subarray(18);
      if (!buffer) {
        const units = nals(payload);
        const sps = units.find((n) => (n[0] & 31) === 7), pps = units.find((n) => (n[0] & 31) === 8);
        if (!sps || !pps) return;
        const codec = "avc1." + [sps[1], sps[2], sps[3]].map((b) => b.toString(16).padStart(2, "0")).join("");
        buffer = source.addSourceBuffer(`video/mp4; codecs="${codec}"`);
        buffer.mode = "segments";
        buffer.addEventListener("updateend", pump);
        queue.push(initSegment(sps, pps, info.width, info.height));
        pump();
        return;
      }
      if (!started) { if (!key) return; started = true; }
      state.frames++;
      arrivals.push(performance.now());
      rate();
      // Frames go on the timeline one after the other at the stream's nominal rate, not at their
      // world-time stamps: a world that jumps (an advance, a driven scenario run) would leave gaps
      // in the buffer, where playback stops.
      seq++;
      queue.push(fragment(seq, (seq - 1) * duration, duration, key, payload));
      pump();
      if (video.paused) video.play().catch(() => {});
      onStatus(`${state.fps.toFixed(1)} fps received · ${state.frames} frames · ${video.currentTime.toFixed(1)} s played`);
    };
    ws.onerror = () => { state.error = state.error || "stream error"; };
    ws.onclose = (event) => {
      state.code = event.code;
      if (state.closed) return;
      onStatus(`stream closed${event.reason ? ": " + event.reason : ""}`);
      onEnd(event);
    };
  }, {once: true});
  return {state, close, rate};
}
