"""Drawing: rasterise rotated boxes into frames (``draw_obbs``; ``draw_obbs_batch`` for several at once), or plan
them as nvdsosd display metas (``add_obb_overlay``; NVIDIA's library is loaded only when that is called). The
drawing functions (and the torch they need) are imported on first use, so ``import obbmeta.osd`` stays
torch-free."""
from ..palette import PALETTE_RGB, PALETTE_RGBA, class_color
from .overlay import OverlayResult, add_obb_overlay, remove_obb_overlay

__all__ = ["draw_obbs", "draw_obbs_batch", "PALETTE_RGB", "PALETTE_RGBA", "class_color", "add_obb_overlay",
           "remove_obb_overlay",
           "OverlayResult"]


def __getattr__(name):
    if name in ("draw_obbs", "draw_obbs_batch"):
        from . import draw

        return getattr(draw, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
