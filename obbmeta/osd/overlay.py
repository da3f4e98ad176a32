"""Rotated boxes for nvdsosd: display-meta lines (any DeepStream version) or DS 9 native rotated rects.

nvdsosd has no polygon primitive, and before DeepStream 9 its rects cannot rotate. ``add_obb_overlay`` therefore
draws every object's oriented box as its 4 edges in ``NvDsDisplayMeta`` lines, planned and written in one call into
C per frame, while the object's own ``rect_params`` stays the axis-aligned box that nvtracker reads.

obbmeta.nvds (NVIDIA's library) is imported inside the functions, so ``from obbmeta.osd import draw_obbs`` works
without it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from .._validators import flag, int_in_range

DEFAULT_WIDTH = 3  # nvinfer's and attach_obbs' border width


@dataclass(frozen=True)
class OverlayResult:
    """What ``add_obb_overlay`` did to one frame (every object is counted in exactly one of drawn / skipped /
    outside: ``objects == drawn + skipped + outside``)."""
    objects: int        # objects in the frame's obj_meta_list
    drawn: int          # objects with an OBB that got lines (or a native rect)
    skipped: int        # objects with only rect_params (no OBB payload, no DS 9 rotation_angle): not drawn
    outside: int        # objects with an OBB that lies fully outside the frame: nothing to draw
    lines: int          # NvOSD_LineParams written (<= 4 per drawn object: edges fully outside are left out)
    rects: int          # native=True: display-meta rects written (one per drawn object)
    display_metas: int  # display metas taken from the batch's pool (16 lines or rects each at most)
    removed: int        # display metas of an earlier add_obb_overlay on this frame, returned to the pool
    labels: int         # objects whose text_params were moved to the top-most vertex
    hidden: int         # objects whose rect_params.border_width was set to 0


def add_obb_overlay(batch: Any, frame: Any, *, width: int = DEFAULT_WIDTH, colors: Any = None, label: bool = True,
                    hide_aabb: bool = False, native: bool = False,
                    frame_size: tuple[float, float] | None = None) -> OverlayResult:
    """Draw every oriented box of ``frame`` for nvdsosd, through display metas from ``batch``'s pool.

    For each object in ``obj_meta_list`` with an OBB — obbmeta's user meta (``attach_obbs``), else a DS 9
    ``rect_params.rotation_angle`` (e.g. nvinfer with an OBB parser) — its 4 edges (corner k to corner k + 1) become
    ``NvOSD_LineParams``: 16 per display meta (nvdsosd does not bound ``num_lines``), each edge clipped to the frame
    (so the visible part keeps its true slope), then rounded to unsigned pixels in ``[0, W-1] x [0, H-1]``; edges
    fully outside are left out. Objects with only an axis-aligned ``rect_params`` are not drawn (``skipped``).

    Calling it again on the same frame replaces the overlay: obbmeta's display metas carry a mark
    (``misc_osd_data[3] = "OBBMOVL1"``, copied with the batch by NVIDIA's copy functions) and are returned to the
    pool with ``nvds_remove_display_meta_from_frame`` first; other display metas are left alone.

    Args:
        batch: an ``obbmeta.nvds.BatchMeta`` or an ``NvDsBatchMeta*`` int.
        frame: a ``FrameMeta`` of that batch, or an ``NvDsFrameMeta*`` int.
        width: line width in pixels (the border width of native rects), an int in 1..32 (nvdsosd refuses wider
            lines and borders, and stops the pipeline).
        colors: None: per class, ``obbmeta.palette.PALETTE_RGBA[class_id % 20]`` (the colours ``attach_obbs``
            gives the AABB borders); one ``(r, g, b, a)`` in 0..1 for every box; or a sequence of such colours,
            used as a palette: class k gets ``colors[k % len(colors)]``.
        label: move each drawn object's label (``text_params.x_offset / y_offset``) to its top-most corner (the
            left one of two at the same height), 10 pixels above it, clamped to the frame. Only objects that have
            ``text_params.display_text`` (nvdsosd draws no text otherwise); nothing is allocated.
        hide_aabb: set ``rect_params.border_width = 0`` on every object with an OBB, so nvdsosd does not draw
            its axis-aligned box; ``rect_params`` keeps the box itself (nvtracker reads it). False leaves the
            borders as they are (it does not restore a border hidden earlier).
        native: DeepStream 9 only: instead of lines, one display-meta rect per object with the un-rotated box
            (``left = cx - w/2``, ..., unclipped) and ``rotation_angle`` in degrees, which nvdsosd 9 draws as a
            rotated rectangle; objects fully outside the frame are left out. The object's ``rect_params`` is not
            touched (it stays the AABB). ValueError on the DeepStream 6-8 layout.
        frame_size: (width, height) of the batched surface for clipping; default: the frame meta's
            ``pipeline_width/height``, else ``source_frame_width/height`` (pass it when nvstreammux scales).

    Returns: :class:`OverlayResult`.
    """
    from ..nvds import display  # lazily: NVIDIA's library is loaded on first use
    from ..nvds.obbs import MAX_BORDER_WIDTH

    int_in_range("width", width, 1, MAX_BORDER_WIDTH,
                 f"an int in 1..{MAX_BORDER_WIDTH} (pixels; nvdsosd refuses wider lines and stops the pipeline)")
    for name, value in (("label", label), ("hide_aabb", hide_aabb), ("native", native)):
        flag(name, value)
    p = display.write_obb_overlay(batch, frame, colors=colors, width=width, label=label, hide_aabb=hide_aabb,
                                  native=native, frame_size=frame_size)
    return OverlayResult(objects=p.objects, drawn=p.drawn, skipped=p.skipped, outside=p.outside, lines=p.lines,
                         rects=p.rects, display_metas=p.display_metas, removed=p.removed, labels=p.labels,
                         hidden=p.hidden)


def remove_obb_overlay(batch: Any, frame: Any) -> int:
    """Remove the display metas that ``add_obb_overlay`` put on ``frame`` (returned to the pool); returns how many.
    Object fields it changed (label position, hidden border) stay as they are."""
    from ..nvds import display

    return display.remove_obb_overlay_metas(batch, frame)


__all__: Sequence[str] = ("add_obb_overlay", "remove_obb_overlay", "OverlayResult")
