"""H.264 encoding with PyAV's libx264 (``ultrafast``, ``zerolatency``), output as AVCC.

libx264 writes Annex-B (start codes); :func:`annexb_to_avcc` rewrites each access unit as
4-byte big-endian length + NAL. Frames go in as I420 converted by OpenCV (which releases the GIL,
so streams encode in parallel in their worker threads). The encoder caches the latest SPS and PPS,
marks IDR access units as keys and forces an IDR on request. ``zerolatency`` means no B-frames and
no lookahead: one frame in, one access unit out, so DTS equals PTS.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import av
import cv2
import numpy as np

NAL_IDR = 5
NAL_SPS = 7
NAL_PPS = 8


def split_annexb(data: bytes) -> list[bytes]:
    """The NAL units of an Annex-B buffer (3- or 4-byte start codes), without start codes."""
    nals: list[bytes] = []
    i, n = 0, len(data)
    start = -1
    while i + 2 < n:
        if data[i] == 0 and data[i + 1] == 0 and data[i + 2] == 1:
            if start >= 0:
                end = i - 1 if i > 0 and data[i - 1] == 0 else i
                nals.append(data[start:end])
            i += 3
            start = i
            continue
        i += 1
    if start >= 0 and start < n:
        nals.append(data[start:])
    return [nal for nal in nals if nal]


def to_avcc(nals: list[bytes]) -> bytes:
    return b"".join(len(nal).to_bytes(4, "big") + nal for nal in nals)


def annexb_to_avcc(data: bytes) -> bytes:
    return to_avcc(split_annexb(data))


def avcc_to_annexb(data: bytes) -> bytes:
    """Back to start codes (what a decoder without ``extradata`` wants)."""
    out, i = bytearray(), 0
    while i + 4 <= len(data):
        size = int.from_bytes(data[i : i + 4], "big")
        out += b"\x00\x00\x00\x01" + data[i + 4 : i + 4 + size]
        i += 4 + size
    return bytes(out)


@dataclass(frozen=True, slots=True)
class EncodedUnit:
    key: bool
    avcc: bytes
    index: int


class H264Encoder:
    """One libx264 session at a fixed size, rate, bitrate and GOP."""

    def __init__(
        self, width: int, height: int, fps: int, bitrate_bps: int, gop: int, profile: str = "baseline"
    ) -> None:
        self.width, self.height, self.fps = width, height, fps
        ctx = av.CodecContext.create("libx264", "w")
        ctx.width = width
        ctx.height = height
        ctx.pix_fmt = "yuv420p"
        ctx.time_base = Fraction(1, fps)
        ctx.framerate = Fraction(fps, 1)
        ctx.bit_rate = bitrate_bps
        ctx.gop_size = gop
        ctx.max_b_frames = 0
        ctx.options = {
            "preset": "ultrafast",
            "tune": "zerolatency",
            "profile": profile,
            "forced-idr": "1",
            "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:repeat-headers=1",
        }
        ctx.open()
        self._ctx = ctx
        self._index = 0
        self._force_key = False
        self.sps: bytes | None = None
        self.pps: bytes | None = None

    def request_keyframe(self) -> None:
        self._force_key = True

    def parameter_sets(self) -> bytes:
        """SPS then PPS as AVCC; empty until the first frame was encoded."""
        return to_avcc([nal for nal in (self.sps, self.pps) if nal])

    def encode(self, image: np.ndarray) -> list[EncodedUnit]:
        """Encode one BGR frame; returns the access unit(s) it produced (one with ``zerolatency``)."""
        # OpenCV converts to I420 (BT.601, video range) without holding the GIL; PyAV's own
        # bgr24 -> yuv420p conversion holds it and costs twice as much.
        i420 = cv2.cvtColor(image, cv2.COLOR_BGR2YUV_I420)
        # cv2 types its result as any numeric array; the I420 of a uint8 frame is uint8, as av requires
        frame = av.VideoFrame.from_ndarray(i420, format="yuv420p")  # type: ignore[arg-type]
        frame.pts = self._index
        if self._force_key:
            frame.pict_type = av.video.frame.PictureType.I
            self._force_key = False
        self._index += 1
        return [self._unit(p) for p in self._ctx.encode(frame)]

    def flush(self) -> list[EncodedUnit]:
        return [self._unit(p) for p in self._ctx.encode(None)]

    def _unit(self, packet: av.Packet) -> EncodedUnit:
        nals = split_annexb(bytes(packet))
        key = bool(packet.is_keyframe)
        for nal in nals:
            kind = nal[0] & 0x1F
            if kind == NAL_SPS:
                self.sps = nal
            elif kind == NAL_PPS:
                self.pps = nal
            elif kind == NAL_IDR:
                key = True
        return EncodedUnit(key, to_avcc(nals), int(packet.pts if packet.pts is not None else self._index - 1))
