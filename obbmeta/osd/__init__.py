"""Drawing: rasterise rotated boxes into frames (``draw_obbs``), or plan them as nvdsosd display metas
(``add_obb_overlay``; NVIDIA's library is loaded only when that is called)."""
from ..palette import PALETTE, PALETTE_RGB, PALETTE_RGBA, class_color
from .draw import draw_obbs
from .overlay import OverlayResult, add_obb_overlay, remove_obb_overlay

__all__ = ["draw_obbs", "PALETTE", "PALETTE_RGB", "PALETTE_RGBA", "class_color", "add_obb_overlay",
           "remove_obb_overlay", "OverlayResult"]
