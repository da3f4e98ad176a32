"""A lossless H.264 stream made here, for tests of NVIDIA's nvv4l2decoder: every macroblock is I_PCM (its samples
stored as they are), so the decoder's output planes must equal the YUV that went in, byte for byte.

Constrained Baseline profile, CAVLC, one IDR access unit (SPS, PPS, one slice) per frame, VUI with the colour
description asked for (ITU-T H.264 7.3.2.1.1, 7.3.2.2, 7.3.3, 7.3.5, E.1.1); :func:`encode_gop` follows each with
P pictures whose macroblocks are all skipped (copies of it), a camera's proportions of key and predicted frames.
Generated at test time; nothing is committed but this file."""
from __future__ import annotations

import re

import numpy as np

_EMULATION = re.compile(rb"\x00\x00(?=[\x00-\x03])")
# ITU-T H.273 code points for the VUI colour description.
PRIMARIES = {"BT.709": 1, "BT.601": 6, "BT.2020": 9}
TRANSFER = {"BT.709": 1, "BT.601": 6, "BT.2020": 14}
MATRIX = {"BT.709": 1, "BT.601": 6, "BT.2020": 9}


class BitWriter:
    def __init__(self):
        self.bits: list[int] = []

    def u(self, value: int, n: int) -> None:
        self.bits.extend((value >> (n - 1 - i)) & 1 for i in range(n))

    def ue(self, value: int) -> None:
        code = value + 1
        n = code.bit_length()
        self.u(0, n - 1)
        self.u(code, n)

    def se(self, value: int) -> None:
        self.ue(2 * value - 1 if value > 0 else -2 * value)

    def align_zero(self) -> None:
        while len(self.bits) % 8:
            self.bits.append(0)

    def trailing(self) -> None:  # rbsp_trailing_bits
        self.bits.append(1)
        self.align_zero()

    def bytes(self) -> bytes:
        assert len(self.bits) % 8 == 0
        return np.packbits(np.asarray(self.bits, np.uint8)).tobytes()


def nal(kind: int, payload: bytes) -> bytes:
    """Start code, NAL header (nal_ref_idc 3) and the payload with emulation prevention bytes."""
    # 00 00 followed by 00..03 -> 00 00 03 ..., scanning on after the two zeros (7.4.1: emulation_prevention_three_byte)
    return b"\x00\x00\x00\x01" + bytes([0x60 | kind]) + _EMULATION.sub(b"\x00\x00\x03", payload)


def sps(width: int, height: int, matrix: str, full_range: bool) -> bytes:
    w = BitWriter()
    w.u(66, 8)               # profile_idc: Baseline
    w.u(0b11000000, 8)       # constraint_set0/1 (Constrained Baseline), reserved zero bits
    w.u(51, 8)               # level_idc 5.1 (frame sizes up to 36 864 macroblocks)
    w.ue(0)                  # seq_parameter_set_id
    w.ue(0)                  # log2_max_frame_num_minus4
    w.ue(2)                  # pic_order_cnt_type 2: output order = decoding order
    w.ue(1)                  # max_num_ref_frames
    w.u(0, 1)                # gaps_in_frame_num_value_allowed_flag
    mbs_w, mbs_h = -(-width // 16), -(-height // 16)
    w.ue(mbs_w - 1)
    w.ue(mbs_h - 1)
    w.u(1, 1)                # frame_mbs_only_flag
    w.u(1, 1)                # direct_8x8_inference_flag
    crop_right, crop_bottom = (mbs_w * 16 - width) // 2, (mbs_h * 16 - height) // 2  # units of 2 for 4:2:0
    w.u(int(bool(crop_right or crop_bottom)), 1)
    if crop_right or crop_bottom:
        for v in (0, crop_right, 0, crop_bottom):
            w.ue(v)
    w.u(1, 1)                # vui_parameters_present_flag
    w.u(0, 1)                # aspect_ratio_info_present_flag
    w.u(0, 1)                # overscan_info_present_flag
    w.u(1, 1)                # video_signal_type_present_flag
    w.u(5, 3)                # video_format: unspecified
    w.u(int(full_range), 1)  # video_full_range_flag
    w.u(1, 1)                # colour_description_present_flag
    w.u(PRIMARIES[matrix], 8)
    w.u(TRANSFER[matrix], 8)
    w.u(MATRIX[matrix], 8)
    w.u(0, 1)                # chroma_loc_info_present_flag
    w.u(1, 1)                # timing_info_present_flag: 30 fps
    w.u(1, 32)
    w.u(60, 32)
    w.u(1, 1)                # fixed_frame_rate_flag
    w.u(0, 1)                # nal_hrd_parameters_present_flag
    w.u(0, 1)                # vcl_hrd_parameters_present_flag
    w.u(0, 1)                # pic_struct_present_flag
    w.u(0, 1)                # bitstream_restriction_flag
    w.trailing()
    return nal(7, w.bytes())


def pps() -> bytes:
    w = BitWriter()
    w.ue(0)                  # pic_parameter_set_id
    w.ue(0)                  # seq_parameter_set_id
    w.u(0, 1)                # entropy_coding_mode_flag: CAVLC
    w.u(0, 1)                # bottom_field_pic_order_in_frame_present_flag
    w.ue(0)                  # num_slice_groups_minus1
    w.ue(0)                  # num_ref_idx_l0_default_active_minus1
    w.ue(0)                  # num_ref_idx_l1_default_active_minus1
    w.u(0, 1)                # weighted_pred_flag
    w.u(0, 2)                # weighted_bipred_idc
    w.se(0)                  # pic_init_qp_minus26
    w.se(0)                  # pic_init_qs_minus26
    w.se(0)                  # chroma_qp_index_offset
    w.u(1, 1)                # deblocking_filter_control_present_flag
    w.u(0, 1)                # constrained_intra_pred_flag
    w.u(0, 1)                # redundant_pic_cnt_present_flag
    w.trailing()
    return nal(8, w.bytes())


def idr_slice(y: np.ndarray, u: np.ndarray, v: np.ndarray, idr_pic_id: int) -> bytes:
    """One IDR slice of I_PCM macroblocks from padded planes (Y of 16 x 16 macroblocks, U and V of 8 x 8)."""
    mbs_h, mbs_w = y.shape[0] // 16, y.shape[1] // 16
    blocks = np.concatenate([
        y.reshape(mbs_h, 16, mbs_w, 16).transpose(0, 2, 1, 3).reshape(-1, 256),
        u.reshape(mbs_h, 8, mbs_w, 8).transpose(0, 2, 1, 3).reshape(-1, 64),
        v.reshape(mbs_h, 8, mbs_w, 8).transpose(0, 2, 1, 3).reshape(-1, 64)], 1)
    w = BitWriter()
    w.ue(0)                  # first_mb_in_slice
    w.ue(7)                  # slice_type: I (all slices of the picture)
    w.ue(0)                  # pic_parameter_set_id
    w.u(0, 4)                # frame_num
    w.ue(idr_pic_id)
    w.u(0, 1)                # no_output_of_prior_pics_flag
    w.u(0, 1)                # long_term_reference_flag
    w.se(0)                  # slice_qp_delta
    w.ue(1)                  # disable_deblocking_filter_idc: off
    w.ue(25)                 # mb_type of the first macroblock: I_PCM
    w.align_zero()           # pcm_alignment_zero_bit
    # Later macroblocks start byte-aligned (PCM samples end on a byte): ue(25) = 000011010, then 7 alignment zeros.
    rest = np.concatenate([np.tile(np.array([0x0D, 0x00], np.uint8), (len(blocks) - 1, 1)), blocks[1:]], 1)
    return nal(5, w.bytes() + blocks[0].tobytes() + rest.tobytes() + b"\x80")


def skip_slice(width: int, height: int, frame_num: int) -> bytes:
    """One P picture (a reference picture, sliding-window marking) whose macroblocks are all P_Skip: with the one
    reference frame of the SPS and no neighbours' motion, the decoder outputs a copy of the previous picture
    (7.3.3, 7.3.4: a single mb_skip_run over the picture). A few bytes instead of I_PCM's 3 MB at 1080p, as the
    predicted frames of a camera's stream are small next to its key frames."""
    w = BitWriter()
    w.ue(0)                  # first_mb_in_slice
    w.ue(5)                  # slice_type: P (all slices of the picture)
    w.ue(0)                  # pic_parameter_set_id
    w.u(frame_num % 16, 4)   # frame_num (log2_max_frame_num 4): one more than the previous reference picture's
    w.u(0, 1)                # num_ref_idx_active_override_flag
    w.u(0, 1)                # ref_pic_list_modification_flag_l0
    w.u(0, 1)                # adaptive_ref_pic_marking_mode_flag: sliding window
    w.se(0)                  # slice_qp_delta
    w.ue(1)                  # disable_deblocking_filter_idc: off
    w.ue(-(-width // 16) * -(-height // 16))  # mb_skip_run: every macroblock
    w.trailing()
    return nal(1, w.bytes())


def encode_gop(frames_yuv: list[tuple[np.ndarray, np.ndarray, np.ndarray]], gop: int, matrix: str = "BT.709",
               full_range: bool = False) -> list[bytes]:
    """A camera-like stream: each frame of :func:`encode` as a key frame followed by ``gop - 1`` P_Skip pictures
    (copies of it): ``gop`` access units per frame given, most of them a few bytes."""
    h, w = frames_yuv[0][0].shape
    out = []
    for key in encode(frames_yuv, matrix, full_range):
        out.append(key)
        out.extend(skip_slice(w, h, k) for k in range(1, gop))
    return out


def encode(frames_yuv: list[tuple[np.ndarray, np.ndarray, np.ndarray]], matrix: str = "BT.709",
           full_range: bool = False) -> list[bytes]:
    """One access unit per (Y (H, W), U (H/2, W/2), V (H/2, W/2)) uint8 frame (even sizes; samples 1..255: early
    H.264 decoders refuse PCM samples of 0)."""
    h, w = frames_yuv[0][0].shape
    mbs_h, mbs_w = -(-h // 16), -(-w // 16)
    head = sps(w, h, matrix, full_range) + pps()
    out = []
    for k, (y, u, v) in enumerate(frames_yuv):
        pad = [np.pad(p, ((0, rows - p.shape[0]), (0, cols - p.shape[1])), mode="edge")
               for p, rows, cols in ((y, mbs_h * 16, mbs_w * 16), (u, mbs_h * 8, mbs_w * 8),
                                     (v, mbs_h * 8, mbs_w * 8))]
        out.append(head + idr_slice(*pad, idr_pic_id=k % 2))
    return out
