"""A picture repeated while the world stands still: an H.264 P frame whose macroblocks are all skipped.

A real camera sends frames at its frame rate whatever its scene does; a paused world sends none,
and a client that probes a stream before it plays (FFmpeg's defaults: ``ffprobe``, ``av.open``)
waits for several frames. So a session that gets no frame for a frame interval of wall time sends
:func:`skip_frame` instead: a single P slice, ``mb_skip_run`` over the whole picture, made from the
stream's own SPS/PPS and the last sent access unit. It is a *non-reference* picture
(``nal_ref_idc`` 0, ``frame_num`` one past the last reference picture's): it repeats the last
picture and leaves the decoder's references as the encoder knows them, so the encoder's next frame
decodes as if the repeats never were. About 10 bytes; nothing is rendered or encoded.

Only what the twin's encoder writes is handled (CAVLC, one slice group, frame pictures, POC types
0 and 2); for anything else :func:`skip_frame` gives ``None`` and nothing is repeated.
"""

from __future__ import annotations

from dataclasses import dataclass

NAL_SLICE, NAL_IDR, NAL_SPS, NAL_PPS = 1, 5, 7, 8


class _Bits:
    """Exp-Golomb reading of an RBSP (emulation prevention bytes removed)."""

    def __init__(self, nal: bytes) -> None:
        self.data = nal[1:].replace(b"\x00\x00\x03", b"\x00\x00")
        self.pos = 0

    def u(self, n: int) -> int:
        value = 0
        for _ in range(n):
            byte = self.data[self.pos >> 3] if self.pos >> 3 < len(self.data) else 0
            value = value << 1 | (byte >> (7 - (self.pos & 7))) & 1
            self.pos += 1
        return value

    def ue(self, limit: int = 32) -> int:
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > limit:
                raise ValueError("bad Exp-Golomb code")
        return (1 << zeros) - 1 + self.u(zeros)

    def se(self) -> int:
        k = self.ue()
        return (k + 1) // 2 if k & 1 else -(k // 2)


class _Writer:
    def __init__(self) -> None:
        self.bits: list[int] = []

    def u(self, n: int, value: int) -> None:
        self.bits += [(value >> (n - 1 - i)) & 1 for i in range(n)]

    def ue(self, value: int) -> None:
        code = value + 1
        size = code.bit_length()
        self.u(size - 1, 0)
        self.u(size, code)

    def rbsp(self) -> bytes:
        bits = [*self.bits, 1]  # rbsp_stop_one_bit, then zeros to the byte
        bits += [0] * (-len(bits) % 8)
        raw = bytes(int("".join(map(str, bits[i : i + 8])), 2) for i in range(0, len(bits), 8))
        out = bytearray()
        zeros = 0
        for byte in raw:  # emulation prevention
            if zeros >= 2 and byte <= 3:
                out.append(3)
                zeros = 0
            out.append(byte)
            zeros = zeros + 1 if byte == 0 else 0
        return bytes(out)


@dataclass(frozen=True, slots=True)
class Syntax:
    """What a slice header needs from the stream's SPS and PPS."""

    log2_max_frame_num: int
    poc_type: int
    log2_max_poc_lsb: int
    frame_mbs_only: bool
    mbs: int
    pps_id: int
    bottom_field_pic_order: bool
    redundant_pic_cnt: bool
    deblocking_control: bool


def syntax(sps: bytes, pps: bytes) -> Syntax | None:
    """The stream's parameters, or None where :func:`skip_frame` cannot follow them."""
    try:
        s = _Bits(sps)
        profile = s.u(8)
        s.u(16)  # constraint flags, level
        s.ue()  # seq_parameter_set_id
        if profile in (100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135):
            if s.ue() == 3:  # chroma_format_idc
                s.u(1)
            s.ue(), s.ue(), s.u(1)  # bit depths, qpprime_y_zero_transform_bypass_flag
            if s.u(1):  # seq_scaling_matrix_present_flag
                return None
        log2_max_frame_num = s.ue() + 4
        poc_type = s.ue()
        log2_max_poc_lsb = s.ue() + 4 if poc_type == 0 else 0
        if poc_type == 1:
            return None
        s.ue(), s.u(1)  # max_num_ref_frames, gaps_in_frame_num_value_allowed_flag
        width, height = s.ue() + 1, s.ue() + 1
        frame_mbs_only = bool(s.u(1))
        p = _Bits(pps)
        pps_id = p.ue()
        p.ue()  # seq_parameter_set_id
        if p.u(1):  # entropy_coding_mode_flag: CABAC
            return None
        bottom = bool(p.u(1))
        if p.ue():  # num_slice_groups_minus1
            return None
        p.ue(), p.ue()  # num_ref_idx_l0/l1_default_active_minus1
        if p.u(1):  # weighted_pred_flag
            return None
        p.u(2), p.se(), p.se(), p.se()
        deblocking = bool(p.u(1))
        p.u(1)  # constrained_intra_pred_flag
        redundant = bool(p.u(1))
    except (IndexError, ValueError):
        return None
    mbs = width * height * (1 if frame_mbs_only else 2)
    return Syntax(
        log2_max_frame_num, poc_type, log2_max_poc_lsb, frame_mbs_only, mbs, pps_id, bottom, redundant,
        deblocking,
    )  # fmt: skip


def reference(nal: bytes, stx: Syntax) -> tuple[int, int] | None:
    """(frame_num, pic_order_cnt_lsb) of a reference picture's slice, None for anything else."""
    kind = nal[0] & 0x1F
    if kind not in (NAL_SLICE, NAL_IDR) or not nal[0] & 0x60:
        return None
    try:
        b = _Bits(nal)
        b.ue(), b.ue(), b.ue()  # first_mb_in_slice, slice_type, pic_parameter_set_id
        frame_num = b.u(stx.log2_max_frame_num)
        if not stx.frame_mbs_only and b.u(1):  # field_pic_flag: fields are not repeated
            return None
        if kind == NAL_IDR:
            b.ue()  # idr_pic_id
        lsb = b.u(stx.log2_max_poc_lsb) if stx.poc_type == 0 else 0
    except (IndexError, ValueError):
        return None
    return frame_num, lsb


def skip_frame(stx: Syntax, last_ref: tuple[int, int]) -> bytes:
    """A skipped picture after the reference picture ``last_ref`` (before the next one), one NAL."""
    frame_num, lsb = last_ref
    w = _Writer()
    w.ue(0)  # first_mb_in_slice
    w.ue(5)  # slice_type: P, all slices of the picture
    w.ue(stx.pps_id)
    w.u(stx.log2_max_frame_num, (frame_num + 1) % (1 << stx.log2_max_frame_num))
    if not stx.frame_mbs_only:
        w.u(1, 0)  # field_pic_flag
    if stx.poc_type == 0:
        w.u(stx.log2_max_poc_lsb, (lsb + 1) % (1 << stx.log2_max_poc_lsb))
        if stx.bottom_field_pic_order:
            w.ue(0)  # delta_pic_order_cnt_bottom (se 0)
    if stx.redundant_pic_cnt:
        w.ue(0)
    w.u(1, 0)  # num_ref_idx_active_override_flag
    w.u(1, 0)  # ref_pic_list_modification_flag_l0
    # nal_ref_idc 0: no dec_ref_pic_marking
    w.ue(0)  # slice_qp_delta (se 0)
    if stx.deblocking_control:
        w.ue(1)  # disable_deblocking_filter_idc: nothing to filter
    w.ue(stx.mbs)  # mb_skip_run: every macroblock
    return bytes((NAL_SLICE,)) + w.rbsp()
