"""Reference pixels for the format tests, written from the ITU tables and GStreamer's / DeepStream's format
descriptions, independently of obbmeta.frames.pixels: random frames of any format (in the tensor form obbmeta documents)
with the RGB they must become."""
from __future__ import annotations

import numpy as np
import torch

# (Kr, Kb) from ITU-R BT.601, BT.709 and BT.2020.
KR_KB = {"601": (0.299, 0.114), "709": (0.2126, 0.0722), "2020": (0.2627, 0.0593)}
# DeepStream base names of YUV formats: how their samples lie (GStreamer's format descriptions).
PLANAR = {"YUV420": (2, 2, "UV"), "YVU420": (2, 2, "VU"), "YUV422": (2, 1, "UV"), "YUV444": (1, 1, "UV")}
SEMI = {"NV12": (2, 2, "UV"), "NV21": (2, 2, "VU"), "NV16": (2, 1, "UV"), "NV24": (1, 1, "UV"),
        "NV12_10LE": (2, 2, "UV")}
PACKED_422 = ("UYVY", "VYUY", "YUYV", "YVYU")


def describe(name):
    """(base, matrix, full range) read off a DeepStream-style name."""
    full = name.endswith("_ER")
    stem = name[:-3] if full else name
    for m in ("709", "2020"):
        if stem.endswith("_" + m) and not stem.startswith(("RGBA_10", "BGRA_10")):
            return stem[: -len(m) - 1], m, full
    return stem, "601", full


def ycbcr_to_rgb(y, cb, cr, matrix, full, bits):
    """Code values (float64, full resolution) -> RGB in [0, 1], (3, H, W): H.273's quantisation inverted, then
    R and B from their colour differences and G from the luma definition Y' = Kr R + Kg G + Kb B."""
    kr, kb = KR_KB[matrix]
    n = 2.0 ** bits
    if full:
        ey, ecb, ecr = y / (n - 1), (cb - n / 2) / (n - 1), (cr - n / 2) / (n - 1)
    else:
        k = 2.0 ** (bits - 8)
        ey, ecb, ecr = (y - 16 * k) / (219 * k), (cb - 128 * k) / (224 * k), (cr - 128 * k) / (224 * k)
    r = ey + (2 - 2 * kr) * ecr
    b = ey + (2 - 2 * kb) * ecb
    g = (ey - kr * r - kb * b) / (1 - kr - kb)
    return np.clip(np.stack([r, g, b]), 0, 1)


def up(c, sy, sx, h, w):
    return np.repeat(np.repeat(c, sy, 0), sx, 1)[:h, :w]


# ---------------------------------------------------------------- random frames with their reference RGB

RGB8 = ("RGBA", "BGRA", "ARGB", "ABGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGB", "BGR")


def plane_shapes(name, h, w):
    """[(rows, cols, comps, numpy dtype)] of each plane of a ``name`` frame, in memory order."""
    base = describe(name)[0]
    if name in RGB8:
        return [(h, w, len(name), np.uint8)]
    if name in ("R8_G8_B8", "B8_G8_R8"):
        return [(h, w, 1, np.uint8)] * 3
    if name.startswith(("RGBA_10", "BGRA_10")):
        return [(h, w, 4, np.uint8)]  # the bytes of little-endian 32-bit words
    if name == "BGRA64_LE":
        return [(h, w, 4, np.uint16)]
    if name.startswith("GRAY"):
        return [(h, w, 1, np.uint16 if name == "GRAY16_LE" else np.uint8)]
    if base in PLANAR:
        sx, sy, _ = PLANAR[base]
        return [(h, w, 1, np.uint8)] + [(-(-h // sy), -(-w // sx), 1, np.uint8)] * 2
    if base in SEMI:
        sx, sy, _ = SEMI[base]
        dtype = np.uint16 if base == "NV12_10LE" else np.uint8
        return [(h, w, 1, dtype), (-(-h // sy), -(-w // sx), 2, dtype)]
    if base in PACKED_422:
        return [(h, w, 2, np.uint8)]
    if base == "UYVP":
        return [(h, w // 2, 5, np.uint8)]  # five bytes per pixel pair
    raise AssertionError(f"no layout for {name}")


def random_planes(name, h, w, rng):
    """A random ``name`` frame in the form obbmeta.frames.pixels documents (one array for packed formats, else a
    tuple)."""
    planes = []
    for rows, cols, comps, dtype in plane_shapes(name, h, w):
        if name.startswith("NV12_10LE"):  # 10-bit codes in the high bits of 16 (P010)
            planes.append(rng.integers(0, 1024, (rows, cols, comps), dtype=np.uint16) << 6)
        else:
            planes.append(rng.integers(0, np.iinfo(dtype).max + 1, (rows, cols, comps), dtype=dtype))
    packed = name in RGB8 or name.startswith(("RGBA_10", "BGRA_10", "BGRA64")) or describe(name)[0] in (
        PACKED_422 + ("UYVP",))
    return planes[0] if packed else tuple(planes)


def reference_rgb(name, frame):
    """The RGB (3, H, W) in [0, 1] that a ``name`` frame (numpy planes) is."""
    base, matrix, full = describe(name)
    planes = [frame] if isinstance(frame, np.ndarray) else list(frame)
    planes = [p if p.ndim == 3 else p[..., None] for p in planes]
    h, w = planes[0].shape[:2]
    if name in RGB8:
        return np.stack([planes[0][..., name.index(c)] for c in "RGB"]) / 255
    if name in ("R8_G8_B8", "B8_G8_R8"):
        order = name[0] + name[3] + name[6]
        return np.stack([planes[order.index(c)][..., 0] for c in "RGB"]) / 255
    if name.startswith(("RGBA_10", "BGRA_10")):
        words = np.ascontiguousarray(planes[0]).view("<u4")[..., 0].astype(np.int64)
        low, mid, high = words & 1023, (words >> 10) & 1023, (words >> 20) & 1023
        return np.stack((low, mid, high) if name.startswith("RGBA") else (high, mid, low)) / 1023
    if name == "BGRA64_LE":
        return np.stack([planes[0][..., 2], planes[0][..., 1], planes[0][..., 0]]) / 65535
    if name.startswith("GRAY"):
        y = planes[0][..., 0] * 1.0
        v = y / 65535 if name == "GRAY16_LE" else y / 255 if full else np.clip((y - 16) / 219, 0, 1)
        return np.repeat(v[None], 3, 0)
    if base in PLANAR:
        sx, sy, order = PLANAR[base]
        cb, cr = (planes[1], planes[2]) if order == "UV" else (planes[2], planes[1])
        return ycbcr_to_rgb(planes[0][..., 0] * 1.0, up(cb[..., 0], sy, sx, h, w) * 1.0,
                            up(cr[..., 0], sy, sx, h, w) * 1.0, matrix, full, 8)
    if base in SEMI:
        sx, sy, order = SEMI[base]
        y, uv, bits = planes[0][..., 0], planes[1], 8
        if base == "NV12_10LE":
            y, uv, bits = y >> 6, uv >> 6, 10
        cb, cr = (uv[..., 0], uv[..., 1]) if order == "UV" else (uv[..., 1], uv[..., 0])
        return ycbcr_to_rgb(y * 1.0, up(cb, sy, sx, h, w) * 1.0, up(cr, sy, sx, h, w) * 1.0, matrix, full, bits)
    if base in PACKED_422:
        group = planes[0].reshape(h, w // 2, 4)
        pick = {c: group[..., base.index(c)] for c in "UV"}
        ys = group[..., [i for i, c in enumerate(base) if c == "Y"]].reshape(h, w)
        return ycbcr_to_rgb(ys * 1.0, np.repeat(pick["U"], 2, 1) * 1.0, np.repeat(pick["V"], 2, 1) * 1.0, matrix,
                            full, 8)
    if base == "UYVP":  # U0 Y0 V0 Y1, 10 bits each, packed most significant bit first into five bytes
        pairs = planes[0].shape[1]
        bits = np.unpackbits(planes[0], axis=-1).reshape(h, pairs, 4, 10)
        codes = (bits * (1 << np.arange(9, -1, -1))).sum(-1)
        u, y0, v, y1 = (codes[..., k] * 1.0 for k in range(4))
        ys = np.stack([y0, y1], -1).reshape(h, 2 * pairs)
        return ycbcr_to_rgb(ys, np.repeat(u, 2, 1), np.repeat(v, 2, 1), matrix, full, 10)
    raise AssertionError(f"no reference for {name}")


def planes_from_bytes(raw, name, width, height, offsets, strides):
    """The planes of a ``name`` frame held in ``raw`` (uint8 numpy) at the given plane offsets and strides (bytes),
    as copies in the form obbmeta.frames.pixels documents."""
    out = []
    for k, (rows, cols, comps, dtype) in enumerate(plane_shapes(name, height, width)):
        row_bytes = cols * comps * np.dtype(dtype).itemsize
        lines = [raw[offsets[k] + r * strides[k]: offsets[k] + r * strides[k] + row_bytes] for r in range(rows)]
        out.append(np.stack(lines).view(dtype).reshape(rows, cols, comps))
    packed = len(out) == 1 and not name.startswith(("GRAY", "R8", "B8"))
    return out[0] if packed else tuple(out)


def frame_and_reference(name, h, w, rng):
    """The planes of a random ``name`` frame (numpy, as obbmeta.frames.pixels documents them) and its RGB (3, H, W)."""
    frame = random_planes(name, h, w, rng)
    return frame, reference_rgb(name, frame)


def pitched(array, device, pad=5):
    """A tensor view of ``array`` whose rows are ``pad`` elements longer than its width (a pitched plane)."""
    a = array if array.ndim == 3 else array[..., None]
    store = np.zeros((a.shape[0], a.shape[1] + pad, a.shape[2]), a.dtype)
    store[:, : a.shape[1]] = a
    t = torch.from_numpy(store).to(device)[:, : a.shape[1]]
    return t if array.ndim == 3 else t[..., 0]


def as_frame(planes, device):
    return pitched(planes, device) if isinstance(planes, np.ndarray) else tuple(pitched(p, device) for p in planes)


def levels(got, ref):
    return float(np.abs(got.cpu().numpy().astype(np.float64) * 255 - ref * 255).max())

