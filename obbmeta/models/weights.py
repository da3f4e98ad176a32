"""Saving and loading demo-detector weights: an fp16 state dict plus what is needed to rebuild the module, in a
file that ``torch.load(weights_only=True)`` reads (tensors, strings, ints and lists only)."""
from __future__ import annotations

from pathlib import Path
from typing import Union

import torch

from .detector import OBBDetector

FORMAT = "obbmeta-demo-detector/1"


def save_weights(model: OBBDetector, path: Union[str, Path], scene: str = "") -> None:
    """Write ``model``'s weights (floats as fp16) with its class names, input size and widths."""
    state = {k: (v.detach().to("cpu", torch.float16) if v.is_floating_point() else v.detach().cpu())
             for k, v in model.state_dict().items()}
    widths = list(model.widths)
    payload = {"format": FORMAT, "scene": scene, "class_names": list(model.class_names),
               "input_size": int(model.input_size), "widths": widths, "state_dict": state}
    tmp = Path(str(path) + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)  # never leave a half-written file where a reader (or an interrupted run) looks


def load_weights(path: Union[str, Path], device="cpu") -> OBBDetector:
    """Rebuild an :class:`OBBDetector` from a file written by :func:`save_weights`; eval mode, float32."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not an obbmeta demo-detector weights file (format {FORMAT!r})")
    model = OBBDetector(len(payload["class_names"]), payload["class_names"], payload["input_size"],
                        tuple(payload["widths"]))
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in payload["state_dict"].items()})
    return model.to(device).eval()
