"""The per-class colours, one table for every output, in the two forms the outputs want:

* ``PALETTE_RGB``: (r, g, b) ints in 0..255, for drawing into pixels (``obbmeta.osd.draw_obbs``, the elements);
* ``PALETTE_RGBA``: (r, g, b, a) floats in 0..1, opaque, as DeepStream's ``NvOSD_ColorParams`` want them (border
  colours written by ``obbmeta.nvds.attach_obbs``, ``obbmeta.osd.add_obb_overlay``).

Class k gets entry ``k % 20`` of either (:func:`class_color`, :func:`class_color_rgba`).
"""
from __future__ import annotations

# 20 well-separated RGB colours (0-255).
PALETTE_RGB = (
    (255, 56, 56), (255, 157, 151), (255, 112, 31), (255, 178, 29), (207, 210, 49),
    (72, 249, 10), (146, 204, 23), (61, 219, 134), (26, 147, 52), (0, 212, 187),
    (44, 153, 168), (0, 194, 255), (52, 69, 147), (100, 115, 255), (0, 24, 236),
    (132, 56, 255), (82, 0, 133), (203, 56, 255), (255, 149, 200), (255, 55, 199),
)

# The same colours as NvOSD_ColorParams: (r, g, b, a) in 0..1, opaque.
PALETTE_RGBA = tuple((r / 255.0, g / 255.0, b / 255.0, 1.0) for r, g, b in PALETTE_RGB)


def class_color(class_id: int) -> tuple:
    """RGB colour (0-255) of a class id."""
    return PALETTE_RGB[int(class_id) % len(PALETTE_RGB)]


def class_color_rgba(class_id: int) -> tuple:
    """(r, g, b, a) colour in 0..1 of a class id, as DeepStream's metadata holds it."""
    return PALETTE_RGBA[int(class_id) % len(PALETTE_RGBA)]


__all__ = ["PALETTE_RGB", "PALETTE_RGBA", "class_color", "class_color_rgba"]
