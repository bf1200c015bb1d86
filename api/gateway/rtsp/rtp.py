"""RTP for H.264 (RFC 6184) and the SDP, as the camera daemon's RTSP server sends them.

Each access unit's NAL units go out in order with the access unit's timestamp: a NAL unit of at most
:data:`RTP_MTU` bytes is one packet (single NAL unit mode), a longer one is cut into FU-A fragments
(type 28) carrying at most :data:`RTP_MTU` bytes each; the marker bit is set on the access unit's last
packet. Payload type 96, a 90 kHz clock. A session's sequence numbers start at 0 and its timestamps
at 0 on its first frame (as the device does); they then follow the frames' world-time PTS, so a
skipped tick leaves its gap in RTP time. A picture repeated while the world stands still
(:mod:`api.gateway.rtsp.repeat`) is one frame interval on from the last one, and the frames after
it keep that shift, so RTP time never goes back. Over TCP each packet is framed ``$``, channel, u16 length.

Each access unit is followed at once by the access unit delimiter (NAL type 9) that opens the next
one, stamped with the time the next frame is due (one frame interval on, as the last two frames were
apart; 30 fps before there are two): a depacketiser that splits the stream into frames at the
start of the next one (FFmpeg's, in ffplay, OpenCV, PyAV) then hands a frame on as soon as it has
arrived, not when the next frame comes, which with the world paused is never.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

from hardware.ports.media import MediaFrame

RTP_MTU = 1400
PAYLOAD_TYPE = 96
CLOCK_RATE = 90_000
FU_A = 28
NAL_SPS, NAL_PPS = 7, 8
AUD = bytes((0x09, 0xF0))
"""An access unit delimiter: NAL type 9, primary_pic_type 7 (any slice), stop bit."""
_HEADER = struct.Struct(">BBHII")


def nal_units(avcc: bytes) -> list[bytes]:
    """The NAL units of an AVCC payload (4-byte big-endian length + NAL)."""
    out, i = [], 0
    while i + 4 <= len(avcc):
        size = int.from_bytes(avcc[i : i + 4], "big")
        if size:
            out.append(avcc[i + 4 : i + 4 + size])
        i += 4 + size
    return out


def fragments(nal: bytes) -> list[bytes]:
    """One NAL unit as RTP payloads: itself, or FU-A fragments (indicator, header, data)."""
    if len(nal) <= RTP_MTU:
        return [nal]
    indicator = (nal[0] & 0xE0) | FU_A
    kind = nal[0] & 0x1F
    body = nal[1:]
    step = RTP_MTU - 2
    out = []
    for start in range(0, len(body), step):
        header = kind | (0x80 if start == 0 else 0) | (0x40 if start + step >= len(body) else 0)
        out.append(bytes((indicator, header)) + body[start : start + step])
    return out


@dataclass(slots=True)
class RtpStream:
    """One session's RTP state: its SSRC, next sequence number and the PTS its time starts at."""

    ssrc: int
    seq: int = 0
    base: int | None = None
    last: int | None = None
    interval: int = CLOCK_RATE // 30
    shift: int = 0
    """RTP time added by repeated pictures (:meth:`repeat`) while the world stood still."""

    def packets(self, frame: MediaFrame) -> list[bytes]:
        """The access unit's packets, then the next one's delimiter."""
        if self.base is None:
            self.base = frame.pts
        if self.last is not None and 0 < (frame.pts - self.last) & 0xFFFFFFFF < CLOCK_RATE:
            self.interval = (frame.pts - self.last) & 0xFFFFFFFF
        self.last = frame.pts
        return self._unit((frame.pts - self.base + self.shift) & 0xFFFFFFFF, frame.payload)

    def repeat(self, payload: bytes) -> list[bytes]:
        """A picture sent one frame interval after the last one, its world time standing still."""
        if self.last is None or self.base is None:
            return []
        self.shift += self.interval
        return self._unit((self.last - self.base + self.shift) & 0xFFFFFFFF, payload)

    def _unit(self, ts: int, payload: bytes) -> list[bytes]:
        payloads = [part for nal in nal_units(payload) for part in fragments(nal)]
        out = []
        for n, payload in enumerate(payloads):
            marker = 0x80 if n == len(payloads) - 1 else 0
            out.append(self._packet(marker, ts, payload))
        out.append(self._packet(0, (ts + self.interval) & 0xFFFFFFFF, AUD))
        return out

    def _packet(self, marker: int, ts: int, payload: bytes) -> bytes:
        packet = _HEADER.pack(0x80, marker | PAYLOAD_TYPE, self.seq, ts, self.ssrc) + payload
        self.seq = (self.seq + 1) & 0xFFFF
        return packet


def interleaved(channel: int, packet: bytes) -> bytes:
    """An RTP packet on the RTSP connection (RFC 2326 §10.12)."""
    return b"$" + bytes((channel,)) + len(packet).to_bytes(2, "big") + packet


def sdp(parameter_sets: bytes) -> str:
    """The device's session description of a video stream, from its cached SPS/PPS (AVCC)."""
    nals = nal_units(parameter_sets)
    sps = next((n for n in nals if n[0] & 0x1F == NAL_SPS), b"")
    pps = next((n for n in nals if n[0] & 0x1F == NAL_PPS), b"")
    fmtp = "packetization-mode=1"
    if sps:
        if len(sps) >= 4:
            fmtp += f";profile-level-id={sps[1:4].hex().upper()}"
        fmtp += ";sprop-parameter-sets=" + base64.b64encode(sps).decode()
        if pps:
            fmtp += "," + base64.b64encode(pps).decode()
    lines = [
        "v=0",
        "o=- 0 0 IN IP4 0.0.0.0",
        "s=AIPC Camera",
        "t=0 0",
        "a=control:*",
        f"m=video 0 RTP/AVP {PAYLOAD_TYPE}",
        f"a=rtpmap:{PAYLOAD_TYPE} H264/{CLOCK_RATE}",
        f"a=fmtp:{PAYLOAD_TYPE} {fmtp}",
        "a=control:trackID=0",
    ]
    return "\r\n".join(lines) + "\r\n"
