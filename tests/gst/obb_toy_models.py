"""Small deterministic "detectors" for the element tests: their output is a function of the frame, so a test can
compute what obbinfer must write by running the same model and decoder on the same frame."""
from __future__ import annotations

import math

import torch

NUM_CLASSES = 3
CLASS_NAMES = ["vehicle", "ship", "plane"]


class ToyObb(torch.nn.Module):
    """(B, 3, H, W) in [0, 1] -> raw YOLO-OBB (B, 4 + 3 + 1, 12): boxes placed from the frame's quadrant means, with
    overlapping duplicates (so NMS has work) and scores on both sides of conf=0.25."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, h, w = x.shape
        q = torch.stack([x[:, :, : h // 2, : w // 2].mean((1, 2, 3)), x[:, :, : h // 2, w // 2:].mean((1, 2, 3)),
                         x[:, :, h // 2:, : w // 2].mean((1, 2, 3)), x[:, :, h // 2:, w // 2:].mean((1, 2, 3))], 1)
        k = torch.arange(12, dtype=x.dtype, device=x.device)
        base = q[:, (k.long() % 4)]                                           # (B, 12)
        cx = w * (0.15 + 0.7 * ((base * 3.1 + k * 0.137) % 1.0))
        cy = h * (0.15 + 0.7 * ((base * 5.3 + k * 0.311) % 1.0))
        bw = w * (0.08 + 0.15 * base)
        bh = h * (0.05 + 0.08 * ((base * 7.0) % 1.0))
        angle = (base * 11.0 + k) % math.pi - math.pi / 2
        # duplicates: anchors 6..11 repeat 0..5 slightly shifted, with lower scores
        cx = torch.cat([cx[:, :6], cx[:, :6] + 1.5], 1)
        cy = torch.cat([cy[:, :6], cy[:, :6] + 0.5], 1)
        bw, bh, angle = (torch.cat([t[:, :6], t[:, :6]], 1) for t in (bw, bh, angle))
        score = (0.15 + 0.8 * ((base * 13.0 + k * 0.29) % 1.0))
        score = torch.cat([score[:, :6], score[:, :6] * 0.9], 1)
        cls = (k.long() + (base * 10).long()) % NUM_CLASSES                  # (B, 12)
        scores = torch.nn.functional.one_hot(cls, NUM_CLASSES).to(x.dtype) * score[..., None]
        return torch.cat([cx[:, None], cy[:, None], bw[:, None], bh[:, None], scores.permute(0, 2, 1),
                          angle[:, None]], 1)


def toy() -> torch.nn.Module:
    return ToyObb()


class Failing(torch.nn.Module):
    """Raises on its third call."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == 3:
            raise RuntimeError("toy model failure on call 3")
        return ToyObb()(x)


def failing() -> torch.nn.Module:
    return Failing()


def wrong_shape() -> torch.nn.Module:
    class WrongShape(torch.nn.Module):
        def forward(self, x):
            return x.mean((2, 3))  # (B, 3): not a YOLO-OBB head
    return WrongShape()


def as_boxes():
    """output-format=boxes: a callable returning OrientedBoxes per frame (in model-input pixels)."""
    from obbmeta import OrientedBoxes

    def run(x):
        m = x.mean((1, 2, 3))
        return [OrientedBoxes(torch.tensor([[30.0 + 20 * float(v), 40.0, 20.0, 10.0, 0.3]]), torch.tensor([0.9]),
                              torch.tensor([1])) for v in m]
    return run


def cxx_error() -> torch.nn.Module:
    """Fails inside torch's C++ code (a shape mismatch), i.e. with a C++ exception turned into a RuntimeError."""
    class CxxError(torch.nn.Module):
        def forward(self, x):
            return x.flatten(1) @ torch.ones(3, 3, device=x.device)
    return CxxError()


class Const(torch.nn.Module):
    """One box at a fixed place with a fixed class: the element tests tell models apart by it."""

    def __init__(self, cx: float, label: int):
        super().__init__()
        self.cx, self.label = cx, label

    def forward(self, x):
        b = x.shape[0]
        head = torch.zeros(b, 4 + NUM_CLASSES + 1, 1, dtype=x.dtype, device=x.device)
        head[:, 0], head[:, 1], head[:, 2], head[:, 3] = self.cx, 20.0, 12.0, 6.0
        head[:, 4 + self.label] = 0.9
        return head


def const_a() -> torch.nn.Module:
    return Const(10.0, 0)


def const_b() -> torch.nn.Module:
    return Const(30.0, 1)


def const_c() -> torch.nn.Module:
    return Const(50.0, 2)


INPUTS: list = []  # what `recording` was fed, for tests that check the model's input


def recording() -> torch.nn.Module:
    class Recording(torch.nn.Module):
        def forward(self, x):
            INPUTS.append(x.detach().clone())
            return ToyObb()(x if x.shape[1] == 3 else x.expand(-1, 3, -1, -1))
    return Recording()


def system_exit() -> torch.nn.Module:
    class Exits(torch.nn.Module):
        def forward(self, x):
            if not torch.all(x == x.flatten()[0]):  # not the warm-up's uniform grey frame
                raise SystemExit(3)
            return ToyObb()(x)
    return Exits()


def keyboard_interrupt() -> torch.nn.Module:
    class Interrupts(torch.nn.Module):
        def forward(self, x):
            if not torch.all(x == x.flatten()[0]):
                raise KeyboardInterrupt
            return ToyObb()(x)
    return Interrupts()


CALLS: list = []  # batch sizes `counting` was called with


def counting() -> torch.nn.Module:
    class Counting(torch.nn.Module):
        def forward(self, x):
            CALLS.append(x.shape[0])
            return ToyObb()(x)
    return Counting()


# ---------------------------------------------------------------- secondary models (crops in, results out)

SECONDARY_CALLS: list = []  # crops per call of the toy secondary models


class ToyClassifier(torch.nn.Module):
    """(K, 3, h, w) crops -> (K, 3) logits: the class is the crop's brightest channel, confidently."""

    def forward(self, x):
        SECONDARY_CALLS.append(x.shape[0])
        return x.mean((2, 3)) * 40.0


def toy_classifier() -> torch.nn.Module:
    return ToyClassifier()


def toy_reader():
    """output-format=text as a callable returning one string per crop: its size."""
    def read(x):
        SECONDARY_CALLS.append(x.shape[0])
        return [f"{x.shape[2]}x{x.shape[3]}"] * x.shape[0]
    return read


def recording_silent() -> torch.nn.Module:
    """Records its input (INPUTS) and finds nothing: for tests of what the model is fed, whatever the levels."""
    class RecordingSilent(torch.nn.Module):
        def forward(self, x):
            INPUTS.append(x.detach().clone())
            return torch.zeros(x.shape[0], 4 + NUM_CLASSES + 1, 4, dtype=x.dtype, device=x.device)
    return RecordingSilent()


CHILDREN = [(0.3, 0.4, 0.2, 0.1, 0.3, 0, 0.9), (0.7, 0.6, 0.15, 0.25, -0.5, 1, 0.8)]  # fractions of the input


class Children(torch.nn.Module):
    """Two boxes at fixed places of whatever input it gets (fractions of its width / height): a secondary detector
    whose output says where the crop was, not what it shows."""

    def forward(self, x):
        b, _, h, w = x.shape
        head = torch.zeros(b, 4 + NUM_CLASSES + 1, len(CHILDREN), dtype=x.dtype, device=x.device)
        for k, (cx, cy, bw, bh, a, c, s) in enumerate(CHILDREN):
            head[:, 0, k], head[:, 1, k], head[:, 2, k], head[:, 3, k] = cx * w, cy * h, bw * w, bh * h
            head[:, 4 + c, k], head[:, -1, k] = s, a
        return head


def children() -> torch.nn.Module:
    return Children()


def nan_classifier() -> torch.nn.Module:
    """A classifier whose scores are NaN for every crop (a broken export)."""
    class NanClassifier(torch.nn.Module):
        def forward(self, x):
            return torch.full((x.shape[0], NUM_CLASSES), float("nan"), dtype=x.dtype, device=x.device)

    return NanClassifier()
