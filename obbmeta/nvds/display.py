"""Everything obbmeta writes as nvdsosd display meta: bulk lines (``add_display_lines``), the primitive under an
OBB overlay on any DeepStream version, and the overlay itself (``write_obb_overlay``, behind
``obbmeta.osd.add_obb_overlay``).

nvdsosd has no polygon primitive and draws a rotated rect only on DeepStream 9; four ``NvOSD_LineParams`` per box
work everywhere. ``NvDsDisplayMeta`` holds 16 lines and nvdsosd does not check ``num_lines`` against that, so the C
writer takes a new display meta from the pool every 16 lines. Lines are clipped to the frame (the coordinates are
unsigned ints; a negative one would wrap around).
"""
from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from .._validators import int_in_range, is_number, rgba
from . import _core
from ._inputs import address_of, batch_of, frame_of, frame_size_of, reader_frame, to_host_once, to_numpy
from ._tables import DEFAULT_PALETTE_TABLE, palette_table
from .batch import BatchMeta, FrameMeta
from .batch import entry as c_entry


def add_display_lines(batch: Any, frame: Any, segments: Any, colors: Any = (1.0, 1.0, 1.0, 1.0),
                      width: int = 2, *, frame_size: tuple[float, float] | None = None) -> int:
    """Add line segments to ``frame`` as display meta; returns how many lines were written (after clipping).

    Args:
        segments: (M, 4) x1, y1, x2, y2 in pixels of the batched surface, or (M, k, 2) closed polygons (e.g.
            ``OrientedBoxes.polygons()``, (N, 4, 2)): each polygon becomes its k edges.
        colors: one (r, g, b, a) in 0..1 for all lines, or (M, 4) one per segment / polygon.
        width: line width in pixels.
    """
    b: BatchMeta = batch_of(batch)
    f: FrameMeta = frame_of(frame, b)
    (seg,) = to_host_once(segments)
    seg = to_numpy(seg, "segments")
    if seg.dtype.kind not in "fiu":
        raise TypeError(f"segments must be a numeric array, got dtype {seg.dtype}")
    per_polygon = 1
    if seg.ndim == 3 and seg.shape[2] == 2 and seg.shape[1] >= 3:  # a 2-point "polygon" would draw its edge twice
        k = seg.shape[1]
        seg = np.concatenate([seg, np.roll(seg, -1, axis=1)], axis=2).reshape(-1, 4)  # edge i: p_i -> p_(i+1)
        per_polygon = k
    elif not (seg.ndim == 2 and seg.shape[1] == 4):
        raise ValueError("segments must have shape (M, 4) x1, y1, x2, y2 or (M, k, 2) polygons with k >= 3; "
                         f"got {seg.shape}")
    seg = np.ascontiguousarray(seg, dtype=np.float32)
    m = seg.shape[0]
    if isinstance(colors, (str, bytes)):
        raise TypeError(f"colors must be (r, g, b, a) in 0..1 or one per segment / polygon; named colours such as "
                        f"{colors!r} are not supported")
    (rgba,) = to_host_once(colors)
    try:
        rgba = np.asarray(to_numpy(rgba, "colors"), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"colors must be (r, g, b, a) numbers in 0..1 or one per segment / polygon, got {colors!r}") from exc
    if rgba.shape == (4,):
        rgba = rgba.reshape(1, 4)
    elif rgba.ndim == 2 and rgba.shape[1] == 4 and rgba.shape[0] * per_polygon == m and per_polygon > 1:
        rgba = np.repeat(rgba, per_polygon, axis=0)
    elif not (rgba.ndim == 2 and rgba.shape == (m, 4)):
        raise ValueError(f"colors must be one (r, g, b, a) or one per segment / polygon; got shape {rgba.shape}")
    if not (np.isfinite(rgba).all() and (rgba >= 0).all() and (rgba <= 1).all()):
        raise ValueError("colors must be r, g, b, a values in 0..1")
    rgba = np.ascontiguousarray(rgba)
    int_in_range("width", width, 1, 2**31 - 1, "an int in 1..2**31-1 (pixels)")
    fw, fh = frame_size_of(f, frame_size)
    core = b._core
    n_display = ctypes.c_int64(0)
    add_lines = c_entry(core.c, "obbmeta_nvds_add_lines", b.address)
    written = add_lines(core.layout.id, b.address, f.address, address_of(seg) or None, m, address_of(rgba) or None,
                        rgba.shape[0], width, fw, fh, ctypes.byref(n_display))
    if written < 0:
        bad = int(n_display.value) if written == _core.WriterError.INVALID_BOX else -1  # a row (edge) of seg
        entry, shown = bad // per_polygon, None
        if bad >= 0:  # the caller's segment, or its polygon (the start points of its edges)
            shown = seg[bad].tolist() if per_polygon == 1 else seg[bad - bad % per_polygon:][:per_polygon, :2].tolist()
        argument = "segments" if written == _core.WriterError.INVALID_BOX else None  # only that code names them
        raise _core.writer_error(written, "display writer", argument, entry, shown, "is not finite")
    return int(written)


def read_display_lines(frame: Any, batch: Any = None) -> list[tuple[int, int, int, int, int, tuple[float, ...]]]:
    """All display-meta lines of a frame: (x1, y1, x2, y2, width, (r, g, b, a)) in display_meta_list order.

    Read under the lock of the frame's own batch (as every writer here writes), so a concurrent
    ``add_display_lines`` / ``add_obb_overlay`` is seen whole or not at all. ``frame``: a FrameMeta, or an
    NvDsFrameMeta* int (of ``batch`` when given)."""
    f = reader_frame(frame, batch)
    core = _core.get()
    head = f._head
    owner = head.base_meta.batch_meta
    meta = core.libs.meta
    out = []
    if owner:
        meta.nvds_acquire_meta_lock(owner)
    try:
        node = head.display_meta_list
        while node:
            dm = core.layout.display_meta.from_address(node.contents.data)
            for lp in dm.line_params[: min(dm.num_lines, 16)]:
                c = lp.line_color
                out.append((lp.x1, lp.y1, lp.x2, lp.y2, lp.line_width, (c.red, c.green, c.blue, c.alpha)))
            node = node.contents.next
    finally:
        if owner:
            meta.nvds_release_meta_lock(owner)
    return out


def write_obb_overlay(batch: Any, frame: Any, *, colors: Any, width: int, label: bool, hide_aabb: bool,
                      native: bool, frame_size: tuple[float, float] | None) -> _core.OverlayParams:
    """The C side of ``obbmeta.osd.add_obb_overlay`` (which checks the other arguments and documents the
    behaviour): one call that removes the frame's previous obbmeta overlay and writes the new one. ``colors`` as
    that function takes them. Returns the filled parameter struct (its counters say what was done)."""
    flags = ((_core.OVERLAY_LABEL if label else 0) | (_core.OVERLAY_HIDE_AABB if hide_aabb else 0)
             | (_core.OVERLAY_NATIVE if native else 0))
    return _overlay(batch, frame, _overlay_palette(colors), width, flags, frame_size)


def remove_obb_overlay_metas(batch: Any, frame: Any) -> int:
    """Return the display metas of obbmeta's overlay on ``frame`` to the pool; how many there were."""
    p = _overlay(batch, frame, DEFAULT_PALETTE_TABLE, 1, _core.OVERLAY_REMOVE_ONLY, (1.0, 1.0))
    return int(p.removed)


def _overlay(batch: Any, frame: Any, palette: tuple[Any, int], width: int, flags: int,
             frame_size: tuple[float, float] | None) -> _core.OverlayParams:
    b: BatchMeta = batch_of(batch)
    f: FrameMeta = frame_of(frame, b)
    fw, fh = frame_size_of(f, frame_size)
    core = b._core
    native = "native" if flags & _core.OVERLAY_NATIVE else None
    if native and not core.layout.has_rotation_angle:
        raise _core.writer_error(_core.WriterError.LAYOUT, "overlay writer", native, layout=core.layout,
                                 detail="use the default line overlay")
    params = _core.OverlayParams()
    params.palette, params.num_colors = ctypes.addressof(palette[0]), palette[1]
    params.line_width, params.flags, params.frame_width, params.frame_height = width, flags, fw, fh
    code = c_entry(core.c, "obbmeta_nvds_overlay", b.address)(core.layout.id, b.address, f.address,
                                                             ctypes.addressof(params))
    if code < 0:
        raise _core.writer_error(code, "overlay writer", native, layout=core.layout,
                                 detail="use the default line overlay")
    return params


def _overlay_palette(colors: Any) -> tuple[Any, int]:
    """colors -> a cached (ctypes double array, count) palette, or ValueError naming ``colors``."""
    if colors is None:
        return DEFAULT_PALETTE_TABLE
    if hasattr(colors, "tolist"):  # numpy / torch
        colors = colors.tolist()
    if isinstance(colors, (str, bytes)) or not isinstance(colors, Sequence):
        raise TypeError(f"colors must be None, (r, g, b, a) or a sequence of (r, g, b, a), got "
                        f"{type(colors).__name__}")
    if len(colors) and all(is_number(v) for v in colors):
        colors = [colors]
    table = [rgba(f"colors[{k}]", c, " (NvOSD_ColorParams)") for k, c in enumerate(colors)]
    if not table:
        raise ValueError("colors must hold at least one (r, g, b, a) colour")
    return palette_table(tuple(table))


__all__: Sequence[str] = ("add_display_lines", "read_display_lines")
