"""OrientedBoxes: the one type that flows through obbmeta (decode -> suppress -> write meta -> draw -> read back).

Its columns are torch tensors on one device (what the decoders make) or NumPy arrays on the host (what the metadata
readers make, so ``obbmeta.nvds`` stays torch-free): the same type and methods either way, torch imported only when
a tensor is at hand or asked for.
"""
from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

from ._validators import is_tensor, number_in_range, vector_array
from .frames.letterbox import Letterbox

ArrayLike = Union["torch.Tensor", np.ndarray, Sequence]  # noqa: F821 (torch is imported lazily)


def _tensor(name: str, value, device=None):
    import torch

    if isinstance(value, torch.Tensor):
        return value if device is None else value.to(device)
    try:
        return torch.as_tensor(np.asarray(value), device=device)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a torch.Tensor or array-like, got {type(value).__name__}") from exc


@dataclass(frozen=True, eq=False)
class OrientedBoxes:
    """N oriented boxes with scores and class labels: torch tensors on one device (CPU or CUDA), or NumPy arrays.

    Attributes:
        xywhr: (N, 5) float32 [cx, cy, w, h, angle]. Angle in radians, positive = clockwise on screen (image
            y axis down): the width axis is (cos a, sin a). (w, h, a), (w, h, a + pi) and (h, w, a + pi/2)
            are the same rectangle; obbmeta never normalises silently (see :mod:`obbmeta.conventions`).
        scores: (N,) float32.
        labels: (N,) int64 class indices.
        track_ids: optional (N,) int64 track ids (like supervision's ``tracker_id``), set by
            :mod:`obbmeta.track` or read back from the metadata (-1: an object no tracker has set); None when the
            boxes are not tracked. Kept by indexing, ``cat``, ``to``, ``numpy``, ``rescale`` and ``clip``.
        data: per-box extras by name (like supervision's ``Detections.data``; ``boxes["name"]`` reads one): each a
            NumPy array or torch tensor with N rows, e.g. what :func:`obbmeta.nvds.read_boxes` read besides the boxes
            (``address``, ``object_id``, ``rect``, ...). Lists are converted to NumPy arrays. Kept row for row by
            indexing, ``cat`` (the items must have the same names), ``to`` (tensors move; NumPy arrays stay on the
            host), ``numpy`` (tensors come to the host), ``rescale`` and ``clip``. Empty by default.

    The backing follows ``xywhr``: a NumPy array gives NumPy columns (``device`` is None; what the metadata readers
    return, so no torch is imported), anything else torch tensors (lists and the other columns converted onto
    ``xywhr``'s device). ``to(device)`` and ``numpy()`` convert whole boxes; every method works on either backing
    and returns the same one.

    Construction checks shapes, dtypes and devices (floating ``xywhr``/``scores`` are cast to float32, integer
    ``labels`` to int64; lists are converted). Values are not inspected here, because that would force a GPU sync;
    the ops and the metadata writer reject NaN/inf. Methods return new objects and never modify this one.
    """

    xywhr: Any
    scores: Any
    labels: Any
    track_ids: Optional[Any] = None
    data: Optional[Mapping[str, Any]] = None

    def __post_init__(self):
        if isinstance(self.xywhr, np.ndarray):
            self._init_numpy()
        else:
            self._init_torch()
        object.__setattr__(self, "data", _data_columns(self.data, len(self)))

    def _init_numpy(self):
        xywhr = self.xywhr
        if xywhr.ndim != 2 or xywhr.shape[1] != 5:
            raise ValueError(f"xywhr must have shape (N, 5) [cx, cy, w, h, angle], got {xywhr.shape}")
        if xywhr.dtype == np.bool_ or xywhr.dtype.kind not in "iuf":
            raise TypeError(f"xywhr must be a floating-point array, got {xywhr.dtype}")
        n = xywhr.shape[0]
        object.__setattr__(self, "xywhr", xywhr.astype(np.float32, copy=False))
        object.__setattr__(self, "scores", vector_array("scores", self.scores, n, floating=True))
        object.__setattr__(self, "labels", vector_array("labels", self.labels, n, floating=False))
        if self.track_ids is not None:
            object.__setattr__(self, "track_ids", vector_array("track_ids", self.track_ids, n, floating=False))

    def _init_torch(self):
        # Lists and NumPy arrays are converted to the documented dtypes; tensors must already be of the right
        # kind (floating boxes and scores, integer labels), which catches swapped or mis-sliced columns.
        import torch

        from ._validators import vector_tensor

        def column(name, value, device):
            return _tensor(name, value, None if isinstance(value, torch.Tensor) else device)

        xywhr = _tensor("xywhr", self.xywhr)
        if not isinstance(self.xywhr, torch.Tensor) and not xywhr.is_floating_point():
            xywhr = xywhr.to(torch.float32)
        device = xywhr.device
        scores = column("scores", self.scores, device)
        if not isinstance(self.scores, torch.Tensor) and not scores.is_floating_point():
            scores = scores.to(torch.float32)
        labels = column("labels", self.labels, device)
        if xywhr.dim() != 2 or xywhr.shape[1] != 5:
            raise ValueError(f"xywhr must have shape (N, 5) [cx, cy, w, h, angle], got {tuple(xywhr.shape)}")
        if not xywhr.is_floating_point():
            raise TypeError(f"xywhr must be a floating-point tensor, got {xywhr.dtype}")
        n = xywhr.shape[0]
        of_xywhr = dict(against="xywhr", against_is="xywhr is")
        vector_tensor("scores", scores, n, device, floating=True, **of_xywhr)
        vector_tensor("labels", labels, n, device, floating=False, **of_xywhr)
        if self.track_ids is not None:
            ids = column("track_ids", self.track_ids, device)
            vector_tensor("track_ids", ids, n, device, floating=False, **of_xywhr)
            object.__setattr__(self, "track_ids", ids.to(torch.int64))
        object.__setattr__(self, "xywhr", xywhr.to(torch.float32))
        object.__setattr__(self, "scores", scores.to(torch.float32))
        object.__setattr__(self, "labels", labels.to(torch.int64))

    @classmethod
    def _checked_elsewhere(cls, xywhr, scores, labels, track_ids=None, data=None) -> "OrientedBoxes":
        """For obbmeta's own producers whose columns already have the documented shapes, dtypes and device (a decoder
        writing float32 / int64 tables, the metadata reader's copies): skips the construction checks, which cost more
        than a small decode itself."""
        obj = object.__new__(cls)
        object.__setattr__(obj, "xywhr", xywhr)
        object.__setattr__(obj, "scores", scores)
        object.__setattr__(obj, "labels", labels)
        object.__setattr__(obj, "track_ids", track_ids)
        object.__setattr__(obj, "data", {} if data is None else data)
        return obj

    @property
    def is_numpy(self) -> bool:
        """The columns are NumPy arrays (not torch tensors)."""
        return isinstance(self.xywhr, np.ndarray)

    # --- array-like behaviour -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.xywhr.shape[0]

    def __iter__(self):
        # Without this, Python would iterate through __getitem__ (one-box OrientedBoxes until IndexError), so that
        # ``xywhr, scores, labels = boxes`` of the former (xywhr, scores, labels) tuples would silently unpack boxes.
        raise TypeError("OrientedBoxes is not iterable: index it (boxes[i], boxes[mask]) or read its columns "
                        "(boxes.xywhr, boxes.scores, boxes.labels)")

    def __getitem__(self, index) -> "OrientedBoxes":
        """Select by int, slice, index array/tensor/list or boolean mask (always returns OrientedBoxes), or read a
        ``data`` column by name (``boxes["address"]``, as supervision's ``Detections``)."""
        if isinstance(index, str):
            try:
                return self.data[index]
            except KeyError:
                raise KeyError(f"no data column {index!r}; these boxes have {sorted(self.data)}") from None
        is_array = isinstance(index, (list, tuple, np.ndarray)) or (is_tensor(index) and index.dim() > 0)
        if not isinstance(index, slice) and not is_array:
            try:
                i = operator.index(index)  # int, NumPy integer, 0-d integer tensor
            except TypeError:
                raise TypeError("index must be an int, a slice, a sequence/array/tensor of indices, a boolean mask "
                                f"or a data column's name, got {type(index).__name__}") from None
            n = len(self)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of range for {n} boxes")
            i %= n
            index = slice(i, i + 1)
        elif is_array:
            index = self._index_array(index)
        if not isinstance(index, slice) and _is_bool(index) and tuple(index.shape) != (len(self),):
            raise IndexError(f"a boolean mask must have shape ({len(self)},), got {tuple(index.shape)}")
        # Rows of checked columns keep their kind, dtype and device: no second check (a per-frame slice of a batch's
        # read is on the pipeline's path).
        return OrientedBoxes._checked_elsewhere(self.xywhr[index], self.scores[index], self.labels[index],
                                                None if self.track_ids is None else self.track_ids[index],
                                                {k: _take(v, index) for k, v in self.data.items()})

    def _index_array(self, index):
        """An index list / array / tensor in this backing's kind (an empty one as integers)."""
        if self.is_numpy:
            a = index.detach().cpu().numpy() if is_tensor(index) else np.asarray(index)
        else:
            import torch

            a = index if isinstance(index, torch.Tensor) else torch.as_tensor(np.asarray(index), device=self.device)
        if a.shape[0] == 0 and a.ndim == 1 and not _is_bool(a):
            a = a.astype(np.int64) if isinstance(a, np.ndarray) else a.long()
        return a

    def __repr__(self) -> str:
        tracked = "" if self.track_ids is None else ", tracked"
        data = f", data={sorted(self.data)}" if self.data else ""
        where = "numpy" if self.is_numpy else f"device={self.device}"
        return f"OrientedBoxes(n={len(self)}, {where}{tracked}{data})"

    @property
    def device(self):
        """The columns' torch device; None for NumPy-backed boxes."""
        return None if self.is_numpy else self.xywhr.device

    @classmethod
    def empty(cls, device="cpu") -> "OrientedBoxes":
        """No boxes: tensors on ``device``, or NumPy arrays when ``device`` is None."""
        if device is None:
            return cls(np.zeros((0, 5), np.float32), np.zeros(0, np.float32), np.zeros(0, np.int64))
        import torch

        return cls(
            torch.zeros((0, 5), device=device), torch.zeros(0, device=device),
            torch.zeros(0, dtype=torch.int64, device=device),
        )

    @classmethod
    def cat(cls, items: Iterable["OrientedBoxes"]) -> "OrientedBoxes":
        """Concatenate; an empty list gives :meth:`empty`. All items must have one backing (NumPy, or tensors on one
        device), either all or none of them have ``track_ids``, and all have ``data`` of the same names (each
        name's columns all NumPy arrays or all tensors)."""
        items = list(items)
        if not items:
            return cls.empty()
        for i, item in enumerate(items):
            if not isinstance(item, OrientedBoxes):
                raise TypeError(f"items[{i}] must be OrientedBoxes, got {type(item).__name__}")
        for i, item in enumerate(items):
            if item.is_numpy != items[0].is_numpy:
                raise TypeError(f"items[{i}] is {'NumPy' if item.is_numpy else 'torch'}-backed but items[0] is "
                                f"{'NumPy' if items[0].is_numpy else 'torch'}-backed; convert with .numpy() or "
                                ".to(device) first")
        tracked = [item.track_ids is not None for item in items]
        if any(tracked) and not all(tracked):
            k = tracked.index(not tracked[0])
            raise ValueError(f"items[{k}] {'has no' if tracked[0] else 'has'} track_ids but items[0] "
                             f"{'has' if tracked[0] else 'has none'}; concatenate tracked boxes only with tracked "
                             "boxes")
        names = set(items[0].data)
        for i, item in enumerate(items):
            if set(item.data) != names:
                raise ValueError(f"items[{i}] has data {sorted(item.data)} but items[0] has {sorted(names)}; "
                                 "concatenate boxes whose data have the same names")
        if items[0].is_numpy:
            join = np.concatenate
        else:
            import torch

            join = torch.cat
        return cls(
            join([b.xywhr for b in items]), join([b.scores for b in items]), join([b.labels for b in items]),
            join([b.track_ids for b in items]) if tracked[0] else None,
            {k: _cat_column(k, [b.data[k] for b in items]) for k in items[0].data},
        )

    # --- conversions ----------------------------------------------------------------------------------------
    def polygons(self):
        """(N, 4, 2) float32 corners, top-left of the un-rotated box first, clockwise on screen."""
        if self.is_numpy:
            from .geometry import corners

            return corners(self.xywhr).astype(np.float32)
        from .ops import obb_to_polygons

        return obb_to_polygons(self.xywhr)

    def aabb(self):
        """(N, 4) float32 [x1, y1, x2, y2]: the tight axis-aligned box around each polygon."""
        if self.is_numpy:
            from .geometry import aabb

            return aabb(self.xywhr).astype(np.float32)
        from .ops import obb_to_aabb

        return obb_to_aabb(self.xywhr)

    def area(self):
        return self.xywhr[:, 2] * self.xywhr[:, 3]

    def nonempty(self, min_size: float = 0.0):
        """Boolean mask of boxes whose w and h are both > min_size."""
        return (self.xywhr[:, 2] > min_size) & (self.xywhr[:, 3] > min_size)

    def inside(self, width: float, height: float):
        """Boolean mask of boxes lying wholly inside the frame [0, width] x [0, height] (every corner, edges
        included): a text line cut by the frame edge cannot be read whole."""
        poly = self.polygons()
        x, y = poly[..., 0], poly[..., 1]
        return ((x >= 0) & (x <= width) & (y >= 0) & (y <= height)).all(1)

    def to(self, device) -> "OrientedBoxes":
        """The boxes as tensors on ``device`` (from NumPy too); ``data``'s tensors move, its NumPy arrays stay."""
        import torch

        def move(v):
            return v.to(device) if isinstance(v, torch.Tensor) else torch.from_numpy(v).to(device)

        return OrientedBoxes(move(self.xywhr), move(self.scores), move(self.labels),
                             None if self.track_ids is None else move(self.track_ids),
                             {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in self.data.items()})

    def numpy(self) -> "OrientedBoxes":
        """The boxes as NumPy arrays on the host (itself when they already are); ``data``'s tensors come too."""
        if self.is_numpy:
            return self

        def host(v):
            return v.detach().cpu().numpy() if is_tensor(v) else v

        return OrientedBoxes(host(self.xywhr), host(self.scores), host(self.labels),
                             None if self.track_ids is None else host(self.track_ids),
                             {k: host(v) for k, v in self.data.items()})

    def _with_xywhr(self, xywhr) -> "OrientedBoxes":
        return OrientedBoxes(xywhr, self.scores, self.labels, self.track_ids, self.data)

    def rescale(self, letterbox: Letterbox) -> "OrientedBoxes":
        """Map boxes from the model input back to the source frame: ``source = (input - pad) / scale``."""
        if not isinstance(letterbox, Letterbox):
            raise TypeError(f"letterbox must be an obbmeta.Letterbox, got {type(letterbox).__name__}")
        if self.is_numpy:
            import torch

            return self._with_xywhr(letterbox.to_source(torch.from_numpy(self.xywhr)).numpy())
        return self._with_xywhr(letterbox.to_source(self.xywhr))

    def clip(self, width: float, height: float) -> "OrientedBoxes":
        """Replace each box by the minimum-area rectangle around its part inside the frame [0, W] x [0, H].

        Boxes inside the frame are unchanged; an axis-aligned box is clipped like an ordinary box; a box
        entirely outside becomes w = h = 0 (drop those with ``boxes[boxes.nonempty()]``). The intersection of
        a rectangle with the frame is convex and its edges run along the box's axes or the frame's, so the
        minimum-area rectangle around it is aligned with one of those two directions; both are tried.
        """
        for name, v in (("width", width), ("height", height)):
            number_in_range(name, v, 0.0, sys.float_info.max, "a positive finite number", low_open=True)
        if len(self) == 0:
            return self
        import torch

        if self.is_numpy:
            return self._with_xywhr(_clipped(torch.from_numpy(self.xywhr), width, height).numpy())
        return self._with_xywhr(_clipped(self.xywhr, width, height))

    # --- constructors ---------------------------------------------------------------------------------------
    @classmethod
    def from_polygons(cls, polygons: ArrayLike, scores: Optional[ArrayLike] = None,
                      labels: Optional[ArrayLike] = None) -> "OrientedBoxes":
        """Minimum-area rectangles around (N, 4, 2) or (N, 8) polygons (e.g. DOTA labels).

        >>> OrientedBoxes.from_polygons([[0, 0, 4, 0, 4, 2, 0, 2]]).xywhr
        tensor([[2., 1., 4., 2., 0.]])
        """
        import torch

        polygons = _tensor("polygons", polygons)
        if polygons.dim() == 1 and polygons.numel() == 0:  # [] : no polygons at all
            polygons = polygons.reshape(0, 4, 2)
        if not polygons.is_floating_point():
            polygons = polygons.to(torch.float32)
        from .ops import polygons_to_obb

        xywhr = polygons_to_obb(polygons)
        return cls(xywhr, *_scores_labels(len(xywhr), scores, labels, xywhr.device))

    @classmethod
    def from_ultralytics(cls, obb) -> "OrientedBoxes":
        """From an Ultralytics result: a ``Results`` (uses ``.obb``), its ``OBB`` object (``.xywhr``, ``.conf``,
        ``.cls``) or that object's ``data`` tensor, (N, 7) ``[cx, cy, w, h, angle, conf, cls]`` or (N, 8) with a
        track id before conf (kept as ``track_ids``, like a tracked ``OBB``'s ``.id``). Ultralytics uses the same
        angle convention (radians, clockwise on screen).

        >>> from ultralytics import YOLO                                   # doctest: +SKIP
        >>> dets = OrientedBoxes.from_ultralytics(YOLO("yolo11n-obb.pt")("img.jpg")[0])  # doctest: +SKIP
        """
        import torch

        if hasattr(obb, "obb") and not hasattr(obb, "xywhr"):
            obb = obb.obb
            if obb is None:
                raise ValueError("this Ultralytics result has no oriented boxes (result.obb is None)")
        if hasattr(obb, "xywhr") and hasattr(obb, "conf") and hasattr(obb, "cls"):
            xywhr, conf, cls_ = (_tensor(n, getattr(obb, n)) for n in ("xywhr", "conf", "cls"))
            ids = getattr(obb, "id", None)
            return cls(xywhr.float(), conf.float(), cls_.to(torch.int64),
                       None if ids is None else _tensor("id", ids).to(torch.int64))
        data = _tensor("obb", obb)
        if data.dim() != 2 or data.shape[1] not in (7, 8):
            raise ValueError(
                "obb must be an Ultralytics Results/OBB object or an (N, 7) [cx, cy, w, h, angle, conf, cls] / "
                f"(N, 8) [cx, cy, w, h, angle, track_id, conf, cls] tensor, got shape {tuple(data.shape)}"
            )
        return cls(data[:, :5].float(), data[:, -2].float(), data[:, -1].to(torch.int64),
                   data[:, 5].to(torch.int64) if data.shape[1] == 8 else None)

    @classmethod
    def from_mmrotate(cls, result, score_thr: float = 0.0) -> "OrientedBoxes":
        """From mmrotate output (duck-typed, mmrotate need not be installed):

        * 1.x: a ``DetDataSample`` (uses ``.pred_instances``) or an ``InstanceData`` with ``bboxes``
          (``RotatedBoxes`` or an (n, 5) tensor), ``scores`` and ``labels``;
        * 0.x: the per-class list of (n, 6) arrays ``[cx, cy, w, h, angle, score]`` that ``inference_detector``
          returns (the list index is the label).

        mmrotate's angles are radians, clockwise on screen, like obbmeta's: only the range differs by
        ``angle_version``, never the rectangle. Boxes with score <= ``score_thr`` are dropped (default keeps all).
        """
        import torch

        if hasattr(result, "pred_instances"):
            result = result.pred_instances
        if hasattr(result, "bboxes") and hasattr(result, "scores") and hasattr(result, "labels"):
            bboxes = result.bboxes
            bboxes = getattr(bboxes, "tensor", bboxes)
            xywhr = _tensor("bboxes", bboxes)
            if xywhr.dim() != 2 or xywhr.shape[-1] != 5:
                raise ValueError(f"mmrotate bboxes must be (n, 5) rotated boxes, got {tuple(xywhr.shape)}")
            boxes = cls(xywhr.float(), _tensor("scores", result.scores).float(),
                        _tensor("labels", result.labels).to(torch.int64))
        elif isinstance(result, (list, tuple)):
            parts = []
            for label, arr in enumerate(result):
                arr = _tensor(f"result[{label}]", arr)
                if arr.numel() == 0:
                    continue
                if arr.dim() != 2 or arr.shape[1] != 6:
                    raise ValueError(
                        f"result[{label}] must be an (n, 6) [cx, cy, w, h, angle, score] array, got {tuple(arr.shape)}"
                    )
                parts.append(cls(arr[:, :5].float(), arr[:, 5].float(),
                                 torch.full((arr.shape[0],), label, dtype=torch.int64, device=arr.device)))
            boxes = cls.cat(parts)
        else:
            raise TypeError(
                "result must be an mmrotate 1.x DetDataSample / InstanceData or the mmrotate 0.x per-class list of "
                f"(n, 6) arrays, got {type(result).__name__}"
            )
        return boxes[boxes.scores > score_thr] if score_thr > 0 else boxes

    @classmethod
    def from_deepstream9(cls, rects: ArrayLike, scores: Optional[ArrayLike] = None,
                         labels: Optional[ArrayLike] = None) -> "OrientedBoxes":
        """From DeepStream 9 ``NvOSD_RectParams`` values: (N, 5) [left, top, width, height, rotation_angle],
        where left/top/width/height describe the un-rotated box centred on the OBB centre and the angle is
        in degrees (clockwise on screen)."""
        import torch

        rects = _tensor("rects", rects)
        if not rects.is_floating_point():
            rects = rects.to(torch.float32)
        from . import conventions

        xywhr = conventions.from_deepstream9(rects).to(torch.float32)
        return cls(xywhr, *_scores_labels(len(xywhr), scores, labels, xywhr.device))


def _data_columns(data: Optional[Mapping[str, Any]], n: int) -> dict:
    """OrientedBoxes.data checked: names are strings, every column a NumPy array or tensor (lists converted) of n
    rows."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise TypeError(f"data must be a mapping of names to per-box columns, got {type(data).__name__}")
    out = {}
    for name, value in data.items():
        if not isinstance(name, str):
            raise TypeError(f"data's names must be strings, got {name!r}")
        if not isinstance(value, np.ndarray) and not is_tensor(value):
            try:
                value = np.asarray(value)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"data[{name!r}] must be a NumPy array, a tensor or array-like, got "
                                f"{type(value).__name__}") from exc
        if value.ndim < 1 or value.shape[0] != n:
            raise ValueError(f"data[{name!r}] must have one row per box ({n} rows, as xywhr), got shape "
                             f"{tuple(value.shape)}")
        out[name] = value
    return out


def _take(column, index):
    """Rows ``index`` (a slice, or an index / mask array or tensor as OrientedBoxes.__getitem__ has it) of a data
    column (a NumPy array or a tensor, of either kind whatever the boxes' backing)."""
    if isinstance(index, slice):
        return column[index]
    if is_tensor(column):
        if isinstance(index, np.ndarray):
            import torch

            index = torch.from_numpy(index)
        return column[index.to(column.device)]
    return column[index if isinstance(index, np.ndarray) else index.cpu().numpy()]


def _is_bool(index) -> bool:
    """An index array or tensor of booleans (a mask)."""
    if isinstance(index, np.ndarray):
        return index.dtype == np.bool_
    import torch

    return index.dtype == torch.bool


def _cat_column(name: str, columns: list):
    if all(isinstance(c, np.ndarray) for c in columns):
        return np.concatenate(columns)
    if all(is_tensor(c) for c in columns):
        import torch

        return torch.cat(columns)
    raise TypeError(f"data[{name!r}] is a NumPy array in some items and a tensor in others; make them one kind "
                    "before OrientedBoxes.cat")


def _scores_labels(n, scores, labels, device):
    import torch

    scores = torch.ones(n, device=device) if scores is None else _tensor("scores", scores, device).float()
    labels = torch.zeros(n, dtype=torch.int64, device=device) if labels is None else _tensor("labels", labels, device)
    return scores, labels


def _frame_intersection_points(xywhr, width: float, height: float):
    """Candidate vertices of (box ∩ frame): box corners in the frame, frame corners in the box, and edge
    crossings. Returns points (N, 24, 2) and a validity mask (N, 24)."""
    import torch

    from .ops.convert import corners as box_corners

    n = xywhr.shape[0]
    cx, cy, w, h, a = xywhr.unbind(-1)
    c, s = torch.cos(a)[:, None], torch.sin(a)[:, None]
    corners = box_corners(xywhr)  # float64, for precision
    tol = 1e-9 * max(width, height)
    frame = xywhr.new_tensor([[0.0, 0.0], [width, 0.0], [width, height], [0.0, height]])
    frame_pts = frame[None].expand(n, 4, 2)
    in_frame = ((corners[..., 0] >= -tol) & (corners[..., 0] <= width + tol)
                & (corners[..., 1] >= -tol) & (corners[..., 1] <= height + tol))
    # Frame corners inside the box: project onto the box axes.
    d = frame_pts - torch.stack((cx, cy), -1)[:, None]
    du = d[..., 0] * c + d[..., 1] * s
    dv = -d[..., 0] * s + d[..., 1] * c
    btol = 1e-9 * (w + h)[:, None]
    in_box = (du.abs() <= 0.5 * w[:, None] + btol) & (dv.abs() <= 0.5 * h[:, None] + btol)
    # Box edges (4) x frame edges (4) crossings.
    p = corners[:, :, None, :]  # (N,4,1,2)
    r = (corners.roll(-1, dims=1) - corners)[:, :, None, :]
    q = frame[None, None]  # (1,1,4,2)
    sv = (frame.roll(-1, dims=0) - frame)[None, None]
    cross = lambda a_, b_: a_[..., 0] * b_[..., 1] - a_[..., 1] * b_[..., 0]  # noqa: E731
    denom = cross(r, sv)
    qp = q - p
    par = denom.abs() < 1e-12
    safe = torch.where(par, torch.ones_like(denom), denom)
    t = cross(qp, sv) / safe
    uu = cross(qp, r) / safe
    hit = (~par) & (t >= -1e-12) & (t <= 1 + 1e-12) & (uu >= -1e-12) & (uu <= 1 + 1e-12)
    xpts = (p + t[..., None] * r).reshape(n, 16, 2)
    pts = torch.cat((corners, frame_pts, xpts), dim=1)
    ok = torch.cat((in_frame, in_box, hit.reshape(n, 16)), dim=1)
    return pts, ok


def _clipped(xywhr, width: float, height: float):
    """OrientedBoxes.clip of an (N, 5) float32 tensor, N > 0."""
    import torch

    from .ops import obb_to_aabb

    pts, ok = _frame_intersection_points(xywhr.to(torch.float64), float(width), float(height))
    inside = ok.any(dim=1)
    best = None
    for angle in (xywhr[:, 4].to(torch.float64), torch.zeros_like(pts[:, 0, 0])):
        u = torch.stack((torch.cos(angle), torch.sin(angle)), dim=-1)
        v = torch.stack((-u[:, 1], u[:, 0]), dim=-1)
        pu = (pts * u[:, None]).sum(-1)
        pv = (pts * v[:, None]).sum(-1)
        big = torch.finfo(torch.float64).max
        umin = torch.where(ok, pu, big).amin(1)
        umax = torch.where(ok, pu, -big).amax(1)
        vmin = torch.where(ok, pv, big).amin(1)
        vmax = torch.where(ok, pv, -big).amax(1)
        w, h = umax - umin, vmax - vmin
        c = 0.5 * (umin + umax)[:, None] * u + 0.5 * (vmin + vmax)[:, None] * v
        cand = torch.stack((c[:, 0], c[:, 1], w, h, angle), dim=-1)
        if best is None:
            best = cand
        else:
            smaller = (cand[:, 2] * cand[:, 3]) < (best[:, 2] * best[:, 3]) - 1e-9 * best[:, 2] * best[:, 3]
            best = torch.where(smaller[:, None], cand, best)
    original = xywhr.to(torch.float64)
    collapsed = torch.cat((original[:, :2], torch.zeros_like(original[:, 2:4]), original[:, 4:]), 1)
    best = torch.where(inside[:, None], best, collapsed)
    # Boxes already inside keep their exact parameters (no round trip through projections).
    aabb = obb_to_aabb(xywhr).to(torch.float64)
    fully = (aabb[:, 0] >= 0) & (aabb[:, 1] >= 0) & (aabb[:, 2] <= width) & (aabb[:, 3] <= height)
    best = torch.where(fully[:, None], original, best)
    return best.to(torch.float32)
