"""The per-class colours, one table for every output: metadata border colours (nvds) and drawing (osd)."""
from __future__ import annotations

# 20 well-separated RGB colours (0-255); class k gets PALETTE[k % 20].
PALETTE = (
    (255, 56, 56), (255, 157, 151), (255, 112, 31), (255, 178, 29), (207, 210, 49),
    (72, 249, 10), (146, 204, 23), (61, 219, 134), (26, 147, 52), (0, 212, 187),
    (44, 153, 168), (0, 194, 255), (52, 69, 147), (100, 115, 255), (0, 24, 236),
    (132, 56, 255), (82, 0, 133), (203, 56, 255), (255, 149, 200), (255, 55, 199),
)

# The same colours as DeepStream's NvOSD_ColorParams want them: (r, g, b, a) in 0..1, opaque.
PALETTE_RGBA = tuple((r / 255.0, g / 255.0, b / 255.0, 1.0) for r, g, b in PALETTE)


def class_color(class_id: int) -> tuple:
    """RGB colour (0-255) of a class id."""
    return PALETTE[int(class_id) % len(PALETTE)]
