"""Drawing: rasterise rotated boxes into frames (``draw_obbs``), or plan them as nvdsosd display metas
(``add_obb_overlay``; NVIDIA's library is loaded only when that is called). ``draw_obbs`` (and the torch it needs)
is imported on first use, so ``import obbmeta.osd`` stays torch-free."""
from ..palette import PALETTE_RGB, PALETTE_RGBA, class_color
from .overlay import OverlayResult, add_obb_overlay, remove_obb_overlay

__all__ = ["draw_obbs", "PALETTE_RGB", "PALETTE_RGBA", "class_color", "add_obb_overlay", "remove_obb_overlay",
           "OverlayResult"]


def __getattr__(name):
    if name == "draw_obbs":
        from .draw import draw_obbs

        return draw_obbs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
