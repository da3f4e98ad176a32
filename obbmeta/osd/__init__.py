"""Drawing: rasterise rotated boxes into frames (``draw_obbs``)."""
from .draw import draw_obbs
from ..palette import PALETTE, class_color

__all__ = ["draw_obbs", "PALETTE", "class_color"]
