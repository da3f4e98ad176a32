"""Reference pixels for the format tests, written from the ITU tables and GStreamer's / DeepStream's format
descriptions, independently of obbmeta.pixels: random frames of any format (in the tensor form obbmeta documents)
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

def frame_and_reference(name, h, w, rng):
    """The planes of a random ``name`` frame (numpy, as obbmeta.pixels documents them) and its RGB (3, H, W)."""
    base, matrix, full = describe(name)
    u8 = lambda *shape: rng.integers(0, 256, shape, dtype=np.uint8)  # noqa: E731
    if name in ("RGBA", "BGRA", "ARGB", "ABGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGB", "BGR"):
        img = u8(h, w, len(name))
        return img, np.stack([img[..., name.index(c)] for c in "RGB"]) / 255
    if name in ("R8_G8_B8", "B8_G8_R8"):
        planes = tuple(u8(h, w, 1) for _ in range(3))
        order = name[0] + name[3] + name[6]
        return planes, np.stack([planes[order.index(c)][..., 0] for c in "RGB"]) / 255
    if name.startswith(("RGBA_10", "BGRA_10")):
        words = rng.integers(0, 2 ** 32, (h, w), dtype=np.uint64).astype(np.uint32)
        low, mid, high = words & 1023, (words >> 10) & 1023, (words >> 20) & 1023
        rgb = (low, mid, high) if name.startswith("RGBA") else (high, mid, low)
        return words.view(np.uint8).reshape(h, w, 4), np.stack(rgb) / 1023
    if name == "BGRA64_LE":
        img = rng.integers(0, 2 ** 16, (h, w, 4), dtype=np.uint16)
        return img, np.stack([img[..., 2], img[..., 1], img[..., 0]]) / 65535
    if name.startswith("GRAY"):
        if name == "GRAY16_LE":
            y = rng.integers(0, 2 ** 16, (h, w, 1), dtype=np.uint16)
            return (y,), np.repeat(y[None, ..., 0] / 65535, 3, 0)
        y = u8(h, w, 1)
        v = y[..., 0] / 255 if full else np.clip((y[..., 0] - 16.0) / 219, 0, 1)
        return (y,), np.repeat(v[None], 3, 0)
    if base in PLANAR:
        sx, sy, order = PLANAR[base]
        ch, cw = -(-h // sy), -(-w // sx)
        y, c1, c2 = u8(h, w, 1), u8(ch, cw, 1), u8(ch, cw, 1)
        cb, cr = (c1, c2) if order == "UV" else (c2, c1)
        ref = ycbcr_to_rgb(y[..., 0] * 1.0, up(cb[..., 0], sy, sx, h, w) * 1.0, up(cr[..., 0], sy, sx, h, w) * 1.0,
                           matrix, full, 8)
        return (y, c1, c2), ref
    if base in SEMI:
        sx, sy, order = SEMI[base]
        ch, cw = -(-h // sy), -(-w // sx)
        if base == "NV12_10LE":  # 10-bit codes in the high bits of 16 (P010)
            codes = [rng.integers(0, 1024, s, dtype=np.uint16) for s in ((h, w, 1), (ch, cw, 2))]
            y, uv = (c << 6 for c in codes)
            yc, uvc, bits = codes[0], codes[1], 10
        else:
            y, uv = u8(h, w, 1), u8(ch, cw, 2)
            yc, uvc, bits = y, uv, 8
        cb, cr = (uvc[..., 0], uvc[..., 1]) if order == "UV" else (uvc[..., 1], uvc[..., 0])
        ref = ycbcr_to_rgb(yc[..., 0] * 1.0, up(cb, sy, sx, h, w) * 1.0, up(cr, sy, sx, h, w) * 1.0, matrix, full,
                           bits)
        return (y, uv), ref
    if base in PACKED_422:
        img = u8(h, w, 2)
        group = img.reshape(h, w // 2, 4)
        pick = {c: group[..., base.index(c)] for c in "UV"}
        ys = group[..., [i for i, c in enumerate(base) if c == "Y"]].reshape(h, w)
        ref = ycbcr_to_rgb(ys * 1.0, np.repeat(pick["U"], 2, 1) * 1.0, np.repeat(pick["V"], 2, 1) * 1.0, matrix,
                           full, 8)
        return img, ref
    if base == "UYVP":  # U0 Y0 V0 Y1, 10 bits each, packed most significant bit first into five bytes
        img = u8(h, w // 2, 5)
        bits = np.unpackbits(img, axis=-1).reshape(h, w // 2, 4, 10)
        codes = (bits * (1 << np.arange(9, -1, -1))).sum(-1)
        u, y0, v, y1 = (codes[..., k] * 1.0 for k in range(4))
        ys = np.stack([y0, y1], -1).reshape(h, w)
        return img, ycbcr_to_rgb(ys, np.repeat(u, 2, 1), np.repeat(v, 2, 1), matrix, full, 10)
    raise AssertionError(f"no reference for {name}")


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

