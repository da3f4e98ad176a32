"""The pixel formats obbmeta reads, in one table, and :func:`to_rgb`, which turns a frame of any of them into the
model's RGB.

Every reader of pixels uses this table: :mod:`obbmeta.frames` (an ``NvBufSurface``'s ``colorFormat`` id -> its
planes), the GStreamer elements (the caps they accept, the plane views of system-memory buffers, the channel order
``obboverlay`` paints in) and :class:`obbmeta.infer.Detector` (through :func:`to_rgb`). A format is named as
DeepStream names it (``NVBUF_COLOR_FORMAT_<name>``, e.g. ``NV12_709``); GStreamer's name for the same bytes is its
``caps`` (``NV12``: one caps name covers several matrix / range variants, told apart by the caps' colorimetry in
system memory and by the surface's id in NVMM). The matrix / range combinations DeepStream has no id for (``YUYV_709``,
``NV12_2020_ER``) are in the table too, named the same way, for system-memory frames whose caps say so.

Importing this module does not import torch (the GStreamer elements read the table when the plugin is scanned).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Sequence

from .._validators import is_int

# ---------------------------------------------------------------- NVIDIA's enum

# NvBufSurfaceColorFormat in enum order (the value is the index; NVBUF_COLOR_FORMAT_ prefix dropped), as
# includes/nvbufsurface.h of NVIDIA/DeepStream declares it at tags v9.0.0 and v9.1.0 (the two are identical).
NVBUF_COLOR_FORMATS = (
    "INVALID", "GRAY8", "YUV420", "YVU420", "YUV420_ER", "YVU420_ER", "NV12", "NV12_ER", "NV21", "NV21_ER",
    "UYVY", "UYVY_ER", "VYUY", "VYUY_ER", "YUYV", "YUYV_ER", "YVYU", "YVYU_ER", "YUV444", "RGBA", "BGRA", "ARGB",
    "ABGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGB", "BGR", "NV12_10LE", "NV12_12LE", "YUV420_709",
    "YUV420_709_ER", "NV12_709", "NV12_709_ER", "YUV420_2020", "NV12_2020", "NV12_10LE_ER", "NV12_10LE_709",
    "NV12_10LE_709_ER", "NV12_10LE_2020", "SIGNED_R16G16", "R8_G8_B8", "B8_G8_R8", "R32F_G32F_B32F",
    "B32F_G32F_R32F", "YUV422", "NV21_10LE", "NV21_12LE", "NV12_12LE_2020", "NV16", "NV16_10LE", "NV24",
    "NV24_10LE", "NV16_ER", "NV24_ER", "NV16_709", "NV24_709", "NV16_709_ER", "NV24_709_ER", "NV24_10LE_709",
    "NV24_10LE_709_ER", "NV24_10LE_2020", "NV24_12LE_2020", "RGBA_10_10_10_2_709", "RGBA_10_10_10_2_2020",
    "BGRA_10_10_10_2_709", "BGRA_10_10_10_2_2020", "A32", "UYVP", "UYVP_ER", "YUV444_ER", "YUV444_709",
    "YUV444_709_ER", "YUV444_2020", "YUV444_10LE", "YUV444_10LE_ER", "YUV444_10LE_709", "YUV444_10LE_709_ER",
    "YUV444_10LE_2020", "YUV444_12LE", "YUV444_12LE_ER", "YUV444_12LE_709", "YUV444_12LE_709_ER",
    "YUV444_12LE_2020", "NV12_12LE_ER", "NV12_12LE_709", "NV12_12LE_709_ER", "GRAY8_ER", "UYVY_709",
    "UYVY_709_ER", "UYVY_2020", "GRAY16_LE", "BGRA64_LE", "NV16_2020", "NV16_10LE_ER", "NV16_10LE_709",
    "NV16_10LE_709_ER", "NV16_10LE_2020", "NV16_12LE", "NV16_12LE_ER", "NV16_12LE_709", "NV16_12LE_709_ER",
    "NV16_12LE_2020", "NV24_2020", "NV24_10LE_ER", "NV24_12LE", "NV24_12LE_ER", "NV24_12LE_709",
    "NV24_12LE_709_ER", "UYVP_709", "UYVP_709_ER", "UYVP_2020",
)
# The enum only ever grew at its end: every header read declares a prefix of the list above, so a value means the
# same format in every release that has it. The last value of each release read: 5.0, 6.0, 6.1, 6.2, 6.3 from the
# headers in hiennguyen9874/deepstream-sources (tags 5.0 ... 6.3), 8.0 from levipereira/deepstream_8.0_plugins,
# 9.0 and 9.1 from NVIDIA/DeepStream (v9.0.0, v9.1.0). No DeepStream 7.0 / 7.1 header was found in a public
# repository; lying between 6.3 and 8.0, it has at least values 0-87, with the same meaning.
HEADER_LAST = {"5.0": 41, "6.0": 46, "6.1": 70, "6.2": 70, "6.3": 87, "8.0": 103, "9.0": 112, "9.1": 112}


def first_release(color_format: int) -> str:
    """The first DeepStream release (of those whose header was read) that defines ``color_format``."""
    for release, last in HEADER_LAST.items():
        if color_format <= last:
            return release
    raise ValueError(f"colour format {color_format} is in no DeepStream header read (the last is "
                     f"{len(NVBUF_COLOR_FORMATS) - 1})")


# DeepStream formats obbmeta does not read, and why (everything else of the enum is in FORMATS).
_TWELVE_BIT = "12-bit video (obbmeta reads 8- and 10-bit formats)"
_TEN_BIT_444 = ("where NVIDIA puts the 10 bits in the 16-bit samples of 10-bit 4:2:2 / 4:4:4 surfaces (GStreamer's "
                "Y444_10LE keeps them in the low bits, P010 in the high bits) is documented nowhere obbmeta could "
                "check")
UNREAD = {
    "INVALID": "it is DeepStream's 'no format' value",
    "SIGNED_R16G16": "it is not a picture (optical-flow vectors)", "A32": "it is not a picture (optical-flow costs)",
    "R32F_G32F_B32F": "it is a float tensor layout, not video",
    "B32F_G32F_R32F": "it is a float tensor layout, not video",
    "NV21_10LE": "no DeepStream element emits it and GStreamer has no caps name for it",
    **{n: _TWELVE_BIT for n in NVBUF_COLOR_FORMATS if "12LE" in n},
    **{n: _TEN_BIT_444 for n in NVBUF_COLOR_FORMATS if n.startswith(("NV16_10LE", "NV24_10LE", "YUV444_10LE"))},
}

# ---------------------------------------------------------------- the table

# (Kr, Kb) of the Y'CbCr matrices: ITU-R BT.601-7, BT.709-6, BT.2020-2 (non-constant luminance).
MATRICES = {"BT.601": (0.299, 0.114), "BT.709": (0.2126, 0.0722), "BT.2020": (0.2627, 0.0593)}
# Frame sides beyond this are refused before anything is allocated (NVDEC decodes at most 8192 x 8192).
MAX_SIDE = 16384


@dataclass(frozen=True)
class Plane:
    """One plane in memory and its tensor form ``(rows, cols, comps)`` (uint8, or uint16 when ``depth`` is 2).

    ``channels`` is what the elements of a row hold in memory order: ``"Y"``, ``"UV"`` (interleaved chroma),
    ``"U"``, ``"RGBA"``, ``"UYVY"`` (the four bytes of a pixel pair of packed 4:2:2; the tensor holds each pixel's
    two bytes), ... ``sub_x`` / ``sub_y``: frame pixels per element across / down (2 for 4:2:0 chroma).
    ``pairs``: the format's name when each element is a pixel pair that cannot be split (UYVP's five bytes): a frame
    of odd width has no such plane, and ``shape`` / ``row_bytes`` refuse it as the other packed 4:2:2 formats are
    refused (``frame must have an even width``) instead of sizing a plane for a pixel that is not there."""
    channels: str
    sub_x: int = 1
    sub_y: int = 1
    comps: int = 1
    depth: int = 1
    pairs: str = ""

    def shape(self, width: int, height: int) -> tuple[int, int, int]:
        self._check_width(width)
        return -(-height // self.sub_y), -(-width // self.sub_x), self.comps

    def row_bytes(self, width: int) -> int:
        self._check_width(width)
        return -(-width // self.sub_x) * self.comps * self.depth

    def _check_width(self, width: int) -> None:
        if self.pairs and width % 2:
            raise odd_width_error(self.pairs, width)


def odd_width_error(format_name: str, width: int) -> ValueError:
    """The one message for a frame of odd width in a packed 4:2:2 format (two pixels share their chroma)."""
    return ValueError(f"frame must have an even width (format {format_name} is packed 4:2:2), got {width}")


@dataclass(frozen=True)
class PixelFormat:
    """One pixel format: its names, its planes and how its samples become RGB.

    ``packing``: ``"planes"`` (each element a whole sample or an interleaved group of them), ``"yuv422"`` (packed
    4:2:2, two bytes per pixel), ``"uyvp"`` (10-bit packed 4:2:2, five bytes per pixel pair), ``"rgb10a2"`` (10-bit
    RGB in little-endian 32-bit words). ``bits``: significant bits per sample; ``msb``: they are the high bits of a
    16-bit sample (P010). ``matrix`` / ``full_range``: the Y'CbCr matrix and the code range (YUV and gray)."""
    name: str
    nvbuf_id: int | None
    caps: str
    family: str            # "rgb", "gray" or "yuv"
    planes: tuple[Plane, ...]
    bits: int = 8
    matrix: str | None = None
    full_range: bool = True
    packing: str = "planes"
    msb: bool = False

    @property
    def packed(self) -> bool:
        """One interleaved plane: a frame is one tensor (planar formats and gray are tuples of planes)."""
        return len(self.planes) == 1 and self.family != "gray"

    @property
    def subsampling(self) -> str:
        if self.family != "yuv":
            return "4:4:4" if self.family == "rgb" else "-"
        sx, sy = (2, 1) if self.packing in ("yuv422", "uyvp") else (self.planes[1].sub_x, self.planes[1].sub_y)
        return {(1, 1): "4:4:4", (2, 1): "4:2:2", (2, 2): "4:2:0"}[(sx, sy)]

    @property
    def rgb_order(self) -> tuple[int, int, int]:
        """Indices of R, G and B along the last axis of a packed RGB frame (or of its planes, for planar RGB)."""
        channels = self.planes[0].channels if self.packed else "".join(p.channels for p in self.planes)
        return channels.index("R"), channels.index("G"), channels.index("B")

    @property
    def drawable(self) -> bool:
        """``obbmeta.osd.draw_obbs`` paints it: 8-bit packed RGB, 3 or 4 bytes per pixel."""
        return self.family == "rgb" and self.packed and self.packing == "planes" and self.planes[0].depth == 1

    def shapes(self, width: int, height: int) -> tuple[tuple[int, int, int], ...]:
        """The tensor shape of each plane of a ``width`` x ``height`` frame."""
        return tuple(p.shape(width, height) for p in self.planes)


def _build() -> dict[str, PixelFormat]:
    ids = {name: k for k, name in enumerate(NVBUF_COLOR_FORMATS)}
    table: list[PixelFormat] = []

    def add(name: str, caps: str, family: str, planes: tuple, **kw: Any) -> None:
        table.append(PixelFormat(name, ids.get(name), caps, family, planes, **kw))

    # Packed 8-bit RGB: DeepStream's and GStreamer's names are the same, in memory byte order.
    for name in ("RGBA", "BGRA", "ARGB", "ABGR", "RGBx", "BGRx", "xRGB", "xBGR", "RGB", "BGR"):
        add(name, name, "rgb", (Plane(name, comps=len(name)),))
    add("R8_G8_B8", "RGBP", "rgb", (Plane("R"), Plane("G"), Plane("B")))
    add("B8_G8_R8", "BGRP", "rgb", (Plane("B"), Plane("G"), Plane("R")))
    # 10-bit RGB: R (B) in bits 0-9, then G, then B (R), alpha in the top two bits. NVIDIA's nvvideotestsrc packs
    # RGBA_10_10_10_2 so (src/gst-plugins/gst-nvvideotestsrc/patterns.cu, DeepStream 9.1) and labels it
    # RGB10A2_LE, as GStreamer defines that name; BGRA_10_10_10_2 is GStreamer's BGR10A2_LE. The suffix names the
    # primaries, which a model's RGB input keeps.
    for prim in ("709", "2020"):
        add(f"RGBA_10_10_10_2_{prim}", "RGB10A2_LE", "rgb", (Plane("RGBA", comps=4),), bits=10, packing="rgb10a2")
        add(f"BGRA_10_10_10_2_{prim}", "BGR10A2_LE", "rgb", (Plane("BGRA", comps=4),), bits=10, packing="rgb10a2")
    add("BGRA64_LE", "BGRA64_LE", "rgb", (Plane("BGRA", comps=4, depth=2),), bits=16)
    # Gray: GRAY8 is limited range (the header's GRAY8_ER is the full-range one); GStreamer's GRAY8 caps are full
    # range, so system-memory GRAY8 is GRAY8_ER here.
    add("GRAY8", "GRAY8", "gray", (Plane("Y"),), full_range=False)
    add("GRAY8_ER", "GRAY8", "gray", (Plane("Y"),))
    add("GRAY16_LE", "GRAY16_LE", "gray", (Plane("Y", depth=2),), bits=16)

    y8, y16 = Plane("Y"), Plane("Y", depth=2)
    bases = {  # DeepStream base name: GStreamer caps name, planes in memory order, packing, bits, msb
        "YUV420": ("I420", (y8, Plane("U", 2, 2), Plane("V", 2, 2))),
        "YVU420": ("YV12", (y8, Plane("V", 2, 2), Plane("U", 2, 2))),
        "NV12": ("NV12", (y8, Plane("UV", 2, 2, 2))),
        "NV21": ("NV21", (y8, Plane("VU", 2, 2, 2))),
        "YUV422": ("Y42B", (y8, Plane("U", 2, 1), Plane("V", 2, 1))),
        "NV16": ("NV16", (y8, Plane("UV", 2, 1, 2))),
        "YUV444": ("Y444", (y8, Plane("U"), Plane("V"))),
        "NV24": ("NV24", (y8, Plane("UV", 1, 1, 2))),
        "UYVY": ("UYVY", (Plane("UYVY", comps=2),), "yuv422"),
        "VYUY": ("VYUY", (Plane("VYUY", comps=2),), "yuv422"),
        "YUYV": ("YUY2", (Plane("YUYV", comps=2),), "yuv422"),
        "YVYU": ("YVYU", (Plane("YVYU", comps=2),), "yuv422"),
        # 10 bits in the high bits of 16 (P010): what NVDEC writes for 10-bit streams and GStreamer's P010_10LE.
        "NV12_10LE": ("P010_10LE", (y16, Plane("UV", 2, 2, 2, depth=2)), "planes", 10, True),
        # U Y0 V Y1, 10 bits each, most significant bit first in five bytes: GStreamer's UYVP, and how NVIDIA's
        # nvvideotestsrc packs UYVP surfaces (patterns.cu, DeepStream 9.1).
        "UYVP": ("UYVP", (Plane("UYVY", 2, 1, 5, pairs="UYVP"),), "uyvp", 10),
    }
    variants = (("", "BT.601", False), ("_ER", "BT.601", True), ("_709", "BT.709", False),
                ("_709_ER", "BT.709", True), ("_2020", "BT.2020", False), ("_2020_ER", "BT.2020", True))
    for base, (caps, planes, *rest) in bases.items():
        packing, bits, msb = (rest + ["planes", 8, False][len(rest):])
        for suffix, matrix, full in variants:
            add(base + suffix, caps, "yuv", planes, bits=bits, matrix=matrix, full_range=full, packing=packing,
                msb=msb)
    return {f.name: f for f in table}


FORMATS: dict[str, PixelFormat] = _build()
BY_NVBUF_ID: dict[int, PixelFormat] = {f.nvbuf_id: f for f in FORMATS.values() if f.nvbuf_id is not None}
assert set(BY_NVBUF_ID) | {NVBUF_COLOR_FORMATS.index(n) for n in UNREAD} == set(range(len(NVBUF_COLOR_FORMATS)))
# GStreamer caps names obbmeta reads, 8-bit RGB first (what negotiation should prefer: no conversion at all).
CAPS_FORMATS = tuple(dict.fromkeys(f.caps for f in sorted(FORMATS.values(), key=lambda f: not f.drawable)))
# What obboverlay mode=draw paints.
DRAW_FORMATS = tuple(f.caps for f in FORMATS.values() if f.drawable)


class UnreadFormatError(ValueError):
    """A pixel format obbmeta does not read (the message names it and says why)."""


def lookup(name: Any) -> PixelFormat:
    """The table's entry for ``name`` (a :class:`PixelFormat` is returned as it is)."""
    if isinstance(name, PixelFormat):
        return name
    fmt = FORMATS.get(name) if isinstance(name, str) else None
    if fmt is None:
        if isinstance(name, str) and name in UNREAD:
            raise UnreadFormatError(f"pixel format {name} is not read by obbmeta: {UNREAD[name]}")
        hint = ""
        if isinstance(name, str) and any(f.caps == name for f in FORMATS.values()):
            hint = (f" ({name} is a GStreamer caps name: obbmeta names formats as DeepStream does, e.g. "
                    f"{from_gst(name).name} for {name} in BT.601 limited range; see obbmeta.frames.pixels.from_gst)")
        raise ValueError(f"pixel_format must be one of obbmeta.frames.pixels.FORMATS ({', '.join(FORMATS)}), got "
                         f"{name!r}{hint}")
    return fmt


def from_nvbuf(color_format: int) -> PixelFormat:
    """The table's entry for an ``NvBufSurfaceColorFormat`` value; :class:`UnreadFormatError` naming the value, its
    DeepStream name and the reason for a format obbmeta does not read."""
    if not is_int(color_format, numpy_ints=True) or not 0 <= color_format < len(NVBUF_COLOR_FORMATS):
        raise UnreadFormatError(f"colour format {color_format} is no NvBufSurfaceColorFormat of any DeepStream "
                                f"release up to 9.1 (0..{len(NVBUF_COLOR_FORMATS) - 1})")
    fmt = BY_NVBUF_ID.get(color_format)
    if fmt is None:
        name = NVBUF_COLOR_FORMATS[color_format]
        raise UnreadFormatError(f"colour format {color_format} (NVBUF_COLOR_FORMAT_{name}) is not read by obbmeta: "
                                f"{UNREAD[name]}; convert with nvvideoconvert to NV12, P010_10LE or RGBA")
    return fmt


def from_gst(caps_format: str, matrix: str | None = None, full_range: bool | None = None,
             primaries: str | None = None) -> PixelFormat:
    """The entry for system-memory frames of GStreamer format ``caps_format`` with the caps' colorimetry:
    ``matrix`` one of :data:`MATRICES` (None: BT.601), ``full_range`` (None: limited for YUV, full for gray and
    RGB), ``primaries`` ("BT.2020" picks the 2020 variant of 10-bit RGB)."""
    rows = [f for f in FORMATS.values() if f.caps == caps_format]
    if not rows:
        raise UnreadFormatError(f"GStreamer format {caps_format!r} is not read by obbmeta (it reads "
                                f"{', '.join(CAPS_FORMATS)})")
    family = rows[0].family
    if family == "rgb":
        return next((f for f in rows if primaries == "BT.2020" and f.name.endswith("2020")), rows[0])
    full = (family == "gray") if full_range is None else bool(full_range)
    if family == "gray":
        return next(f for f in rows if f.full_range == full) if len(rows) > 1 else rows[0]
    matrix = "BT.601" if matrix is None else matrix
    if matrix not in MATRICES:
        raise UnreadFormatError(f"{caps_format} frames with the {matrix} matrix are not read by obbmeta (it reads "
                                f"{', '.join(MATRICES)})")
    return next(f for f in rows if f.matrix == matrix and f.full_range == full)


def check_size(width: Any, height: Any, what: str = "frame") -> tuple[int, int]:
    """``(width, height)`` when both are ints in 1..:data:`MAX_SIDE`, else ValueError naming ``what``: implausible
    sizes are refused before anything is allocated for them."""
    for side, value in (("width", width), ("height", height)):
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_SIDE:
            raise ValueError(f"{what} {side} must be an int in 1..{MAX_SIDE} pixels, got {value!r}")
    return width, height


# ---------------------------------------------------------------- conversion

def to_rgb(frame: Any, pixel_format: Any) -> Any:
    """One frame as a (3, H, W) float32 RGB tensor in [0, 1], on the frame's device.

    ``pixel_format``: a name of :data:`FORMATS` (DeepStream's, e.g. ``"NV12_709"``) or its :class:`PixelFormat`.
    ``frame``: for a packed format one tensor, for planar formats (YUV with separate chroma, gray, planar RGB) the
    tuple of its plane tensors, as :meth:`obbmeta.frames.FrameSurface.tensors` and the elements' frame views give
    them; each of shape ``PixelFormat.shapes(W, H)`` (uint8; uint16 for 16-bit samples): e.g. RGBA ``(H, W, 4)``,
    NV12 ``((H, W, 1), (ceil(H/2), ceil(W/2), 2))``, I420 three planes, UYVY ``(H, W, 2)`` (W even), P010 two
    uint16 planes. A single-channel plane may drop its last axis; a chroma plane may be one row / column short
    (floor instead of ceil of odd sizes: the last chroma sample is repeated). Rows may be pitched.

    YUV becomes RGB with the matrix (BT.601 / BT.709 / BT.2020) and code range (limited / full) the format names,
    chroma upsampled by repetition (as OpenCV's ``cvtColor`` does); limited-range gray is expanded to full range.
    The work is a few whole-frame tensor operations, the same on the CPU and on CUDA.
    """
    import torch

    fmt = lookup(pixel_format)
    planes, (height, width) = _check_frame(frame, fmt, torch)
    device = planes[0].device
    if fmt.family == "rgb":
        return _rgb(planes, fmt, height, width, torch)
    if fmt.family == "gray":
        y = planes[0][..., 0]
        out = torch.empty(3, height, width, dtype=torch.float32, device=device)
        out.copy_(y.expand(3, height, width))
        lo, scale = _code_range(fmt)[:2]
        return out.sub_(lo).div_(scale).clamp_(0, 1) if lo else out.div_(scale)
    return _yuv(planes, fmt, height, width, torch)


def frame_size(frame: Any, pixel_format: Any) -> tuple[int, int]:
    """(width, height) in pixels of a frame as :func:`to_rgb` takes it, checked the way to_rgb checks it."""
    import torch

    _, (height, width) = _check_frame(frame, lookup(pixel_format), torch)
    return width, height


def frame_kind(frame: Any, pixel_format: Any) -> tuple | None:
    """What every check of a frame depends on: its format, whether it came as a tuple of planes, and each plane's
    shape, dtype and device; frames of one kind get one verdict (a batch's frames are mostly alike). None for a
    frame that is not tensors."""
    import torch

    planes = tuple(frame) if isinstance(frame, (tuple, list)) else (frame,)
    if not all(isinstance(p, torch.Tensor) for p in planes):
        return None
    return pixel_format, isinstance(frame, (tuple, list)), tuple((p.shape, p.dtype, p.device) for p in planes)


def frame_sizes(frames: Sequence[Any], pixel_formats: Sequence[Any]) -> list[tuple[int, int]]:
    """:func:`frame_size` of each frame, checked once per :func:`frame_kind`."""
    seen: dict = {}
    out = []
    for frame, fmt in zip(frames, pixel_formats):
        key = frame_kind(frame, fmt)
        size = seen.get(key) if key is not None else None
        if size is None:
            size = frame_size(frame, fmt)
            if key is not None:
                seen[key] = size
        out.append(size)
    return out


def _check_frame(frame: Any, fmt: PixelFormat, torch: Any) -> tuple[tuple, tuple[int, int]]:
    """The frame's planes as (rows, cols, comps) tensors, checked against the format; and (H, W)."""
    n = len(fmt.planes)
    what = f"format {fmt.name}"
    if fmt.packed:
        if not isinstance(frame, torch.Tensor):
            raise TypeError(f"frame must be a tensor ({what} is packed: one plane), got {type(frame).__name__}")
        planes = (frame,)
    else:
        planes = tuple(frame) if isinstance(frame, (tuple, list)) else (frame,)
        if len(planes) != n:
            names = ", ".join(p.channels for p in fmt.planes)
            raise ValueError(f"frame must be the tuple of the {n} planes ({names}) of {what}, got "
                             f"{len(planes)} plane(s)")
    out = []
    for k, (p, spec) in enumerate(zip(planes, fmt.planes)):
        arg = "frame" if fmt.packed else f"frame[{k}] (the {spec.channels} plane of {what})"
        want_dtype = torch.uint8 if spec.depth == 1 else torch.uint16
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"{arg} must be a {str(want_dtype).replace('torch.', '')} tensor, got "
                            f"{type(p).__name__}")
        if p.dtype != want_dtype:
            raise TypeError(f"{arg} must be a {str(want_dtype).replace('torch.', '')} tensor ({fmt.bits}-bit "
                            f"samples), got {str(p.dtype).replace('torch.', '')}"
                            + (" (float frames are not rescaled: pass the uint8 pixels)"
                               if p.is_floating_point() else ""))
        if p.dim() == 2 and spec.comps == 1:
            p = p[..., None]
        if p.dim() != 3 or p.shape[2] != spec.comps:
            raise ValueError(f"{arg} must be a (rows, cols, {spec.comps}) tensor, got shape {tuple(p.shape)}")
        if p.device != planes[0].device:
            raise ValueError(f"{arg} is on {p.device}, plane 0 on {planes[0].device}: the planes of a frame must "
                             "share a device")
        out.append(p)
    first = fmt.planes[0]
    height, width = out[0].shape[0], out[0].shape[1] * first.sub_x
    if fmt.packing == "yuv422" and width % 2:
        raise odd_width_error(fmt.name, width)
    check_size(width, height, "frame")
    for k in range(1, n):
        spec = fmt.planes[k]
        rows, cols = out[k].shape[:2]
        ok_rows = {height // spec.sub_y, -(-height // spec.sub_y)} - {0}
        ok_cols = {width // spec.sub_x, -(-width // spec.sub_x)} - {0}
        if rows not in ok_rows or cols not in ok_cols:
            rows_ok, cols_ok = (" or ".join(map(str, sorted(ok))) for ok in (ok_rows, ok_cols))
            raise ValueError(f"frame[{k}] (the {spec.channels} plane of {what}, {height}x{width} luma) must have "
                             f"{rows_ok} rows and {cols_ok} columns, got shape {tuple(out[k].shape)}")
    return tuple(out), (height, width)


def _code_range(fmt: PixelFormat) -> tuple[float, float, float, float]:
    """(luma offset, luma scale, chroma offset, chroma scale) of the format's code values (ITU-R BT.601 / BT.709 /
    BT.2020 limited range: 16 + 219 Y', 128 + 224 C' at 8 bits, times 4 at 10 bits; full range as ITU-T H.273:
    (2^n - 1) Y', 2^(n-1) + (2^n - 1) C')."""
    n = fmt.bits
    if fmt.full_range:
        return 0.0, float(2 ** n - 1), float(2 ** (n - 1)), float(2 ** n - 1)
    k = 2 ** (n - 8)
    return 16.0 * k, 219.0 * k, 128.0 * k, 224.0 * k


_coefficients_lock = threading.Lock()
_coefficients_cache: dict[tuple, tuple] = {}


def _coefficients(fmt: PixelFormat, order: str, device: Any, torch: Any) -> tuple[Any, Any]:
    """(A (3, 3), b (3, 1)) with RGB = A @ [Y, c0, c1] + b on raw code values, chroma in ``order`` ("UV" / "VU"),
    on ``device`` (made once per format, order and device)."""
    key = (fmt.name, order, str(device))
    with _coefficients_lock:
        hit = _coefficients_cache.get(key)
    if hit is not None:
        return hit
    kr, kb = MATRICES[fmt.matrix]
    kg = 1.0 - kr - kb
    # E'R = E'Y + 2(1-Kr) E'Cr; E'G = E'Y - 2Kb(1-Kb)/Kg E'Cb - 2Kr(1-Kr)/Kg E'Cr; E'B = E'Y + 2(1-Kb) E'Cb
    m = [[1.0, 0.0, 2 * (1 - kr)], [1.0, -2 * kb * (1 - kb) / kg, -2 * kr * (1 - kr) / kg], [1.0, 2 * (1 - kb), 0.0]]
    yo, ys, co, cs = _code_range(fmt)
    container = 2.0 ** (16 - fmt.bits) if fmt.msb else 1.0
    a = [[row[0] / ys / container, row[1] / cs / container, row[2] / cs / container] for row in m]
    b = [-(row[0] * yo / ys + (row[1] + row[2]) * co / cs) for row in m]
    if order == "VU":
        a = [[row[0], row[2], row[1]] for row in a]
    value = (torch.tensor(a, dtype=torch.float32, device=device),
             torch.tensor(b, dtype=torch.float32, device=device).view(3, 1))
    with _coefficients_lock:
        _coefficients_cache[key] = value
    return value


def _yuv(planes: tuple, fmt: PixelFormat, height: int, width: int, torch: Any) -> Any:
    device = planes[0].device
    if fmt.packing in ("yuv422", "uyvp"):
        yuv = torch.empty(3, height, width, dtype=torch.float32, device=device)
        order = _fill_packed_422(yuv, planes[0], fmt, torch)
        return _apply(yuv, fmt, order, height, width, torch)
    chroma = fmt.planes[1]
    rows, cols = planes[1].shape[:2]
    hp, wp = max(height, rows * chroma.sub_y), max(width, cols * chroma.sub_x)
    yuv = torch.empty(3, hp, wp, dtype=torch.float32, device=device)
    yuv[0, :height, :width].copy_(planes[0][..., 0])
    if len(planes) == 2:  # interleaved chroma (NV12 "UV", NV21 "VU")
        _upsample_into(yuv[1:3], planes[1].permute(2, 0, 1), chroma.sub_x, chroma.sub_y)
        order = chroma.channels
    else:
        for k in (1, 2):
            _upsample_into(yuv[k:k + 1], planes[k].permute(2, 0, 1), chroma.sub_x, chroma.sub_y)
        order = fmt.planes[1].channels + fmt.planes[2].channels
    return _apply(yuv, fmt, order, height, width, torch)


def _upsample_into(dst: Any, src: Any, sx: int, sy: int) -> None:
    """dst (k, Hp, Wp) <- src (k, h, w) repeated sy x sx (cast in the same copy); rows / columns of dst beyond
    h*sy / w*sx repeat the last ones."""
    k, h, w = src.shape
    hb, wb = h * sy, w * sx
    dst[:, :hb, :wb].view(k, h, sy, w, sx).copy_(src[:, :, None, :, None].expand(k, h, sy, w, sx))
    if hb < dst.shape[1]:
        dst[:, hb:, :wb] = dst[:, hb - 1:hb, :wb]
    if wb < dst.shape[2]:
        dst[:, :, wb:] = dst[:, :, wb - 1:wb]


def _fill_packed_422(yuv: Any, frame: Any, fmt: PixelFormat, torch: Any) -> str:
    """Packed 4:2:2 into yuv (3, H, W); returns the chroma order."""
    height, width = yuv.shape[1:]
    pairs = width // 2
    lum = yuv[0].view(height, pairs, 2)
    chroma = yuv[1:3].view(2, height, pairs, 2)
    if fmt.packing == "uyvp":
        b = frame.to(torch.int32)  # (H, pairs, 5): U0 Y0 V0 Y1, 10 bits each, most significant first
        u = (b[..., 0] << 2) | (b[..., 1] >> 6)
        y0 = ((b[..., 1] & 0x3F) << 4) | (b[..., 2] >> 4)
        v = ((b[..., 2] & 0x0F) << 6) | (b[..., 3] >> 2)
        y1 = ((b[..., 3] & 0x03) << 8) | b[..., 4]
        lum.copy_(torch.stack([y0, y1], -1))
        chroma.copy_(torch.stack([u, v])[..., None].expand(2, height, pairs, 2))
        return "UV"
    group = frame.reshape(height, pairs, 4)  # the pixel pair's four bytes
    order = fmt.planes[0].channels
    y_at = order.index("Y")
    c_at = 1 - y_at
    lum.copy_(group[..., y_at::2])
    chroma.copy_(group[..., c_at::2].permute(2, 0, 1)[..., None].expand(2, height, pairs, 2))
    return order[c_at] + order[c_at + 2]


def _apply(yuv: Any, fmt: PixelFormat, order: str, height: int, width: int, torch: Any) -> Any:
    a, b = _coefficients(fmt, order, yuv.device, torch)
    rgb = torch.addmm(b, a, yuv.view(3, -1)).clamp_(0, 1).view(yuv.shape)
    return rgb if rgb.shape[1:] == (height, width) else rgb[:, :height, :width].contiguous()


def _rgb(planes: tuple, fmt: PixelFormat, height: int, width: int, torch: Any) -> Any:
    r, g, b = fmt.rgb_order
    out = torch.empty(3, height, width, dtype=torch.float32, device=planes[0].device)
    if not fmt.packed:  # planar RGB: one plane per channel
        for k, src in enumerate((r, g, b)):
            out[k].copy_(planes[src][..., 0])
        return out.div_(255)
    frame = planes[0]
    if fmt.packing == "rgb10a2":  # little-endian 32-bit words: c0 bits 0-9, c1 10-19, c2 20-29
        w = frame.to(torch.int32)
        fields = ((w[..., 0] | ((w[..., 1] & 0x03) << 8)), ((w[..., 1] >> 2) | ((w[..., 2] & 0x0F) << 6)),
                  ((w[..., 2] >> 4) | ((w[..., 3] & 0x3F) << 4)))
        for k, src in enumerate((r, g, b)):
            out[k].copy_(fields[src])
        return out.div_(1023)
    chw = frame.permute(2, 0, 1)
    if (g, b) == (r + 1, r + 2):
        out.copy_(chw[r:r + 3])
    else:
        for k, src in enumerate((r, g, b)):
            out[k].copy_(chw[src])
    # x / 255, correctly rounded, as the frameworks divide (x * (1 / 255) differs in the last bit)
    return out.div_(2 ** fmt.bits - 1)


__all__ = ["NVBUF_COLOR_FORMATS", "HEADER_LAST", "UNREAD", "MATRICES", "MAX_SIDE", "Plane", "PixelFormat", "FORMATS",
           "BY_NVBUF_ID", "CAPS_FORMATS", "DRAW_FORMATS", "UnreadFormatError", "lookup", "from_nvbuf",
           "from_gst", "check_size", "first_release", "to_rgb", "frame_size", "frame_sizes", "frame_kind"]
