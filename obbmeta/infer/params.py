"""What a detector call is given besides the frames: thresholds, caps and nvinfer's per-class rules, immutable.

:class:`DetectParams` is what each call of :class:`obbmeta.infer.Detector` runs with (the element builds one per
change of its settings, never per batch); :class:`ClassFilter` is nvinfer's ``[class-attrs-*]`` and
``filter-out-class-ids`` for oriented boxes, built from the resolved settings with nvinfer's cluster modes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import torch

from .._validators import int_in_range, number_in_range, size_pair
from ..boxes import OrientedBoxes

# nvinfer's release library has no OpenCV: its cluster-mode 0 (groupRectangles) becomes NMS with these, for every
# class, overriding [class-attrs] (nvdsinfer_context_impl.cpp, "OpenCV has been deprecated").
GROUP_RECTANGLES_IOU, GROUP_RECTANGLES_TOPK = 0.5, 20
# DeepStream-Yolo-OBB's C++ parser suppresses its per-anchor rows itself (class-aware, IoU > 0.45 on the boxes'
# AABBs) while its configs say cluster-mode=4: obbinfer runs rotated NMS at this IoU on that layout.
PER_ANCHOR_IOU = 0.45
CLUSTER_NONE, CLUSTER_NMS, CLUSTER_GROUP_RECTANGLES = 4, 2, 0


def parse_input_size(value: Any) -> tuple[int, int]:
    """``640``, ``"640"``, ``"640x384"`` / ``"640,384"`` (width x height) or ``(640, 384)`` -> (width, height), sides
    in 1..16384; anything else is a ValueError."""
    return size_pair("input_size", value, 1, 16384, strings=True, kind_error=ValueError)


def parse_device(value: Any) -> str:
    """``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (checked, not required to exist until used)."""
    if isinstance(value, torch.device):
        value = str(value)
    if not isinstance(value, str):  # torch.device(3) would silently mean cuda:3
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    if value == "auto":
        return value
    try:
        d = torch.device(value)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {value!r}") from None
    if d.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {value!r}")
    return str(d)


def run_precision(precision: str, device: Any) -> str:
    """The precision a model runs in on ``device``: nvinfer's ``int8`` (a calibrated TensorRT engine, which a
    PyTorch model has not) and ``best`` run at the nearest one the device has: fp16 on CUDA, fp32 on the CPU."""
    if precision in ("int8", "best"):
        return "fp16" if torch.device(device).type == "cuda" else "fp32"
    return precision


@dataclass(frozen=True)
class ClassFilter:
    """What nvinfer does per class around clustering, for a detector's boxes (from ``[class-attrs-*]`` groups and
    ``filter-out-class-ids``): per-class score thresholds before NMS, IoU thresholds, a score threshold after NMS,
    the top k kept, and size / region limits on the axis-aligned box in frame pixels. ``pre_threshold`` etc. map
    class ids to values; a class not in a map takes the ``default_*`` (class-attrs-all), else the detector's own
    setting. ``crop_to_roi``: roi-top / bottom-offset clip a box's AABB instead of dropping it (nvinfer's
    crop-objects-to-roi-boundary; the OBB is kept, its AABB is what nvinfer's rect would be)."""
    pre_threshold: dict[int, float] = field(default_factory=dict)
    iou: dict[int, float] = field(default_factory=dict)
    post_threshold: dict[int, float] = field(default_factory=dict)
    topk: dict[int, int] = field(default_factory=dict)
    min_size: dict[int, tuple[float, float]] = field(default_factory=dict)
    max_size: dict[int, tuple[float, float]] = field(default_factory=dict)
    roi: dict[int, tuple[float, float]] = field(default_factory=dict)  # (top offset, bottom offset)
    drop: frozenset = frozenset()
    default_post: float | None = None
    default_topk: int | None = None
    default_min: tuple[float, float] | None = None
    default_max: tuple[float, float] | None = None
    default_roi: tuple[float, float] | None = None
    crop_to_roi: bool = False

    @classmethod
    def from_config(cls, config: Any, drop: Sequence[int] = ()) -> "ClassFilter":
        """From an :class:`obbmeta.config.nvinfer.InferConfig`'s class groups (class-attrs-all is the default)."""
        attrs = dict(config.class_attrs) if config is not None else {}
        return cls.from_attrs(attrs, drop)

    @classmethod
    def from_attrs(cls, class_attrs: Mapping[int, Any], drop: Sequence[int] = (), cluster_mode: int = CLUSTER_NMS,
                   crop_to_roi: bool = False) -> "ClassFilter":
        """From ``[class-attrs-*]`` groups (class id -> :class:`~obbmeta.config.nvinfer.ClassAttrs`, ``-1`` for
        class-attrs-all) with nvinfer's cluster mode: 4 keeps every box (top k per class only), 0 runs NMS at IoU 0.5
        keeping 20 per class for every class (nvinfer's release library does exactly that), the others NMS with
        the groups' thresholds."""
        base = class_attrs.get(-1)
        per = {k: (a.over(base) if base is not None else a) for k, a in class_attrs.items() if k >= 0}

        def size(a, lo):
            w, h = (a.detected_min_w, a.detected_min_h) if lo else (a.detected_max_w, a.detected_max_h)
            return None if w is None and h is None else (float(w or 0), float(h or 0))

        def roi(a):
            return None if a.roi_top_offset is None and a.roi_bottom_offset is None else \
                (float(a.roi_top_offset or 0), float(a.roi_bottom_offset or 0))

        def by_class(get):
            return {k: v for k, v in ((k, get(a)) for k, a in per.items()) if v is not None}

        def topk(a):
            return a.topk if a is not None and a.topk is not None and a.topk >= 0 else None

        iou, default_topk, topks = by_class(lambda a: a.nms_iou_threshold), topk(base), by_class(topk)
        if cluster_mode == CLUSTER_NONE:
            iou = {}
        elif cluster_mode == CLUSTER_GROUP_RECTANGLES:
            iou, default_topk, topks = {}, GROUP_RECTANGLES_TOPK, {}
        return cls(
            pre_threshold=by_class(lambda a: a.pre_cluster_threshold), iou=iou,
            post_threshold=by_class(lambda a: a.post_cluster_threshold), topk=topks,
            min_size=by_class(lambda a: size(a, True)), max_size=by_class(lambda a: size(a, False)),
            roi=by_class(roi), drop=frozenset(int(c) for c in drop),
            default_post=base.post_cluster_threshold if base else None, default_topk=default_topk,
            default_min=size(base, True) if base else None, default_max=size(base, False) if base else None,
            default_roi=roi(base) if base else None, crop_to_roi=bool(crop_to_roi))

    @property
    def filters_after_decode(self) -> bool:
        return bool(self.post_threshold or self.topk or self.min_size or self.max_size or self.roi or self.drop or
                    self.default_post is not None or self.default_topk is not None or self.default_min or
                    self.default_max or self.default_roi)

    def apply(self, boxes: OrientedBoxes, frame_height: float) -> tuple[OrientedBoxes, int]:
        """The boxes that pass (score order kept) and how many were filtered out, as nvinfer filters after NMS."""
        n = len(boxes)
        if not n or not self.filters_after_decode:
            return boxes, 0
        labels = boxes.labels.tolist()
        scores = boxes.scores.tolist()
        aabb = boxes.aabb().tolist()
        keep, seen = [], {}
        for i, (c, s, (x1, y1, x2, y2)) in enumerate(zip(labels, scores, aabb)):
            if c in self.drop:
                continue
            post = self.post_threshold.get(c, self.default_post)
            if post is not None and not s > post:
                continue
            w, h = x2 - max(x1, 0.0), y2 - max(y1, 0.0)  # nvinfer clamps left / top to 0 before its size tests
            lo = self.min_size.get(c, self.default_min)
            if lo is not None and (w < lo[0] or h < lo[1]):
                continue
            hi = self.max_size.get(c, self.default_max)
            if hi is not None and ((hi[0] > 0 and w > hi[0]) or (hi[1] > 0 and h > hi[1])):
                continue
            roi = self.roi.get(c, self.default_roi)
            if roi is not None and not self.crop_to_roi and (max(y1, 0.0) < roi[0] or y2 > frame_height - roi[1]):
                continue
            if roi is not None and self.crop_to_roi and (y2 <= roi[0] or max(y1, 0.0) >= frame_height - roi[1]):
                continue  # clipped to nothing
            k = self.topk.get(c, self.default_topk)
            if k is not None:
                if seen.get(c, 0) >= k:
                    continue
                seen[c] = seen.get(c, 0) + 1
            keep.append(i)
        if len(keep) == n:
            return boxes, 0
        return boxes[torch.as_tensor(keep, dtype=torch.int64, device=boxes.device)], n - len(keep)


@dataclass(frozen=True)
class DetectParams:
    """The decode settings of one detector call: score threshold, rotated-NMS IoU threshold (greedy, exact polygon
    IoU, class-aware; 1.0 with strict ``>`` keeps every box), boxes per frame (0: no limit, nvinfer's) and
    nvinfer's per-class rules. Frozen: the element makes one when its settings change and hands it to every call."""
    conf: float = 0.25
    iou: float = 0.45
    max_det: int = 300
    class_filter: ClassFilter = field(default_factory=ClassFilter)
    anchor_iou: float | None = None  # NMS IoU of per-anchor (B, N, 7) rows (DeepStream-Yolo exports); None: iou

    def __post_init__(self):
        number_in_range("conf", self.conf, 0.0, 1.0)
        number_in_range("iou", self.iou, 0.0, 1.0)
        if self.anchor_iou is not None:
            number_in_range("anchor_iou", self.anchor_iou, 0.0, 1.0)
        int_in_range("max_det", self.max_det, 0, form="an int >= 0 (0: no limit)")
        if not isinstance(self.class_filter, ClassFilter):
            raise TypeError(f"class_filter must be a ClassFilter, got {type(self.class_filter).__name__}")

    @classmethod
    def from_settings(cls, settings: Any) -> "DetectParams":
        """From resolved :class:`obbmeta.config.settings.InferSettings` (its class attributes, cluster mode and
        filter-out-class-ids included)."""
        cluster = settings.cluster_mode
        cf = ClassFilter.from_attrs(dict(settings.class_attrs), settings.filter_out_class_ids, cluster,
                                    settings.crop_objects_to_roi_boundary)
        iou = settings.iou
        anchor_iou = None
        if cluster == CLUSTER_NONE:
            iou = 1.0  # no clustering: a strict IoU > 1 never holds
            # ... except where the config's C++ parser clustered (per-anchor rows): its threshold, or the file's
            anchor_iou = settings.iou if "iou" in settings.given else PER_ANCHOR_IOU
        elif cluster == CLUSTER_GROUP_RECTANGLES:
            iou = GROUP_RECTANGLES_IOU
        return cls(settings.conf, iou, settings.max_det, cf, anchor_iou)

    def limit(self, candidates: int) -> int:
        """Boxes kept per frame for a head with ``candidates`` rows: ``max_det``, or all of them."""
        return self.max_det if self.max_det > 0 else max(int(candidates), 1)

    def graph_key(self) -> tuple:
        """What a captured decode depends on."""
        return (self.conf, self.iou, self.max_det, tuple(sorted(self.class_filter.pre_threshold.items())),
                self.anchor_iou)


__all__ = ["DetectParams", "ClassFilter", "parse_input_size", "parse_device", "run_precision",
           "GROUP_RECTANGLES_IOU", "GROUP_RECTANGLES_TOPK", "PER_ANCHOR_IOU"]
