"""A small CRNN-style text-line recogniser in plain PyTorch (CTC, blank = class 0), for the document demo.

Input: (K, 3, 32, W) float RGB in [0, 1], W a multiple of 4 (from 4 up): upright crops of text lines, the crop's x
axis along the line (the box's width edge, from its corner 0 to corner 1 in ``OrientedBoxes.polygons()`` order), of
height ``input_height`` = 32 and width by the line's aspect ratio (:func:`crop_width`). Crops of one batch that are
narrower than W are padded on either side (any fill). Output: (K, W / 4, C) per-column class logits, C =
``len(model.charset) + 1``: class 0 is the CTC blank, class i >= 1 the character ``model.charset[i - 1]``;
:func:`obbmeta.decode.ctc_greedy` turns them into strings.

A detector's box of a text line says nothing of which end the line starts at: crop it along its long side
(:func:`obbmeta.conventions.to_le90` gives w >= h), and the crop may be upside down. The model has a second head
that scores whether a crop reads the right way up; ``forward`` reads every crop the way that head prefers (``read``
also says which crops it turned by 180 degrees). ``auto_orient = False`` reads crops as given.

Architecture: six 3x3 Conv-BN-ReLU layers and a 2x1 one (max pools to height 1 and width W / 4), a bidirectional
LSTM over the W / 4 columns and a linear layer to the C classes; the orientation head pools the convolutional
columns (mean and max) into a small MLP.
"""
from __future__ import annotations

import string
from pathlib import Path
from typing import Sequence, Tuple, Union

import torch
from torch import nn

#: The document scenes' characters: the space, digits and ASCII letters (class i >= 1 is ``CHARSET[i - 1]``).
CHARSET = " " + string.digits + string.ascii_lowercase + string.ascii_uppercase
INPUT_HEIGHT = 32
#: Columns of input per output column (and per CTC step).
STRIDE = 4
#: The widest crop :func:`crop_width` asks for: longer lines are squeezed to it.
MAX_WIDTH = 1024
FORMAT = "obbmeta-text-recognizer/1"


def _conv(cin: int, cout: int, k=3, padding=1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, k, 1, padding, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class TextRecognizer(nn.Module):
    """CRNN text-line recogniser: (K, 3, 32, W) float RGB in [0, 1] -> (K, W / 4, len(charset) + 1) logits.

    Args:
        charset: the characters (or tokens) of classes 1, 2, ...; class 0 is the CTC blank.
        widths: channels of the convolution stages (4 values).
        hidden: LSTM hidden size per direction.
    """

    def __init__(self, charset: Union[str, Sequence[str]] = CHARSET,
                 widths: Tuple[int, int, int, int] = (16, 32, 64, 96), hidden: int = 96):
        super().__init__()
        tokens = tuple(charset)
        if not tokens or len(set(tokens)) != len(tokens) or not all(isinstance(t, str) and t for t in tokens):
            raise ValueError("charset must be a non-empty sequence of distinct non-empty strings")
        self.charset = "".join(tokens) if all(len(t) == 1 for t in tokens) else list(tokens)
        self.input_height = INPUT_HEIGHT
        self.stride = STRIDE
        self.widths = tuple(int(w) for w in widths)
        self.hidden = int(hidden)
        self.auto_orient = True
        c1, c2, c3, c4 = self.widths
        self.convs = nn.Sequential(
            _conv(3, c1), nn.MaxPool2d(2),                          # 16 x W/2
            _conv(c1, c2), nn.MaxPool2d(2),                         # 8 x W/4
            _conv(c2, c3), _conv(c3, c3), nn.MaxPool2d((2, 1)),     # 4 x W/4
            _conv(c3, c4), _conv(c4, c4), nn.MaxPool2d((2, 1)),     # 2 x W/4
            _conv(c4, c4, (2, 1), 0),                               # 1 x W/4
        )
        self.rnn = nn.LSTM(c4, self.hidden, batch_first=True, bidirectional=True)
        self.classify = nn.Linear(2 * self.hidden, len(tokens) + 1)
        self.orientation = nn.Sequential(nn.Linear(2 * c4, 64), nn.ReLU(inplace=True), nn.Linear(64, 1))

    @property
    def num_classes(self) -> int:
        return len(self.charset) + 1

    def columns(self, x: torch.Tensor) -> torch.Tensor:
        """(K, 3, 32, W) -> (K, W / 4, widths[-1]) convolutional column features."""
        _check_input(x, self.input_height, self.stride)
        return self.convs(x).squeeze(2).transpose(1, 2)

    def sequence_logits(self, cols: torch.Tensor) -> torch.Tensor:
        """Column features (K, T, F) -> (K, T, C) class logits."""
        return self.classify(self.rnn(cols)[0])

    def upright_logit(self, cols: torch.Tensor) -> torch.Tensor:
        """Column features (K, T, F) -> (K,) logit that the crop reads the right way up (not turned by 180°)."""
        pooled = torch.cat([cols.mean(1), cols.amax(1)], dim=1)
        return self.orientation(pooled).squeeze(1)

    def read(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(logits, turned)``: (K, W / 4, C) logits of each crop read the way up the orientation head prefers,
        and (K,) bool, True where that was the crop turned by 180° (all False when ``auto_orient`` is off)."""
        cols = self.columns(x)
        turned = torch.zeros(x.shape[0], dtype=torch.bool, device=x.device)
        if x.shape[0] == 0:  # the LSTM refuses an empty batch
            return x.new_zeros(0, cols.shape[1], self.num_classes), turned
        if self.auto_orient:
            # Compare the two readings: the head scores each, the better one wins (ties keep the crop as given).
            cols_t = self.columns(x.flip(2, 3))
            turned = self.upright_logit(cols_t) > self.upright_logit(cols)
            cols = torch.where(turned[:, None, None], cols_t, cols)
        return self.sequence_logits(cols), turned

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.read(x)[0]


def crop_width(box_w, box_h, height: int = INPUT_HEIGHT, max_width: int = MAX_WIDTH) -> torch.Tensor:
    """Crop width(s) for boxes of ``box_w`` x ``box_h`` pixels (w along the line, after any padding) cropped to
    ``height`` rows: the aspect ratio kept, rounded to a multiple of 4, at least 8, at most ``max_width``."""
    w = torch.as_tensor(box_w, dtype=torch.float32)
    h = torch.as_tensor(box_h, dtype=torch.float32).clamp(min=1e-6)
    cols = torch.round(w / h * height / STRIDE).clamp(2, max_width // STRIDE)
    return (cols * STRIDE).to(torch.int64)


def save_recognizer(model: TextRecognizer, path: Union[str, Path], **info) -> None:
    """Write ``model``'s weights (floats as fp16) with its charset and sizes; ``info`` (str/int/float values) is
    stored beside them."""
    state = {k: (v.detach().to("cpu", torch.float16) if v.is_floating_point() else v.detach().cpu())
             for k, v in model.state_dict().items()}
    payload = {"format": FORMAT, "charset": list(model.charset), "widths": list(model.widths),
               "hidden": int(model.hidden), "info": dict(info), "state_dict": state}
    tmp = Path(str(path) + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)


def load_recognizer(path: Union[str, Path], device="cpu") -> TextRecognizer:
    """Rebuild a :class:`TextRecognizer` from a file written by :func:`save_recognizer`; eval mode, float32."""
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not an obbmeta text-recogniser weights file (format {FORMAT!r})")
    model = TextRecognizer(payload["charset"], tuple(payload["widths"]), payload["hidden"])
    model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in payload["state_dict"].items()})
    return model.to(device).eval()


def _check_input(x, height: int, stride: int) -> None:
    if not isinstance(x, torch.Tensor) or x.dim() != 4 or x.shape[1] != 3:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"input must be a (K, 3, {height}, W) float tensor of RGB in [0, 1], got {shape}")
    if not x.is_floating_point():
        raise TypeError(f"input must be a floating-point tensor of RGB in [0, 1], got {x.dtype}")
    if x.shape[2] != height:
        raise ValueError(f"input height must be {height} (model.input_height), got {x.shape[2]}")
    if x.shape[3] < stride or x.shape[3] % stride:
        raise ValueError(f"input width must be a positive multiple of {stride}, got {x.shape[3]}")


__all__ = ["TextRecognizer", "CHARSET", "INPUT_HEIGHT", "STRIDE", "MAX_WIDTH", "crop_width", "save_recognizer",
           "load_recognizer"]
