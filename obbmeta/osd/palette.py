"""Per-class colours shared by the rasteriser and the DeepStream overlay."""
from __future__ import annotations

# 20 well-separated RGB colours (class id modulo 20).
PALETTE = (
    (255, 56, 56), (255, 157, 151), (255, 112, 31), (255, 178, 29), (207, 210, 49),
    (72, 249, 10), (146, 204, 23), (61, 219, 134), (26, 147, 52), (0, 212, 187),
    (44, 153, 168), (0, 194, 255), (52, 69, 147), (100, 115, 255), (0, 24, 236),
    (132, 56, 255), (82, 0, 133), (203, 56, 255), (255, 149, 200), (255, 55, 199),
)


def class_color(class_id: int) -> tuple:
    """RGB colour (0-255) of a class id."""
    return PALETTE[int(class_id) % len(PALETTE)]
