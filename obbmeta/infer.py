"""A PyTorch oriented detector on video frames: load the model, prepare the frames as its framework did, one model
call per batch, decode + rotated NMS on the model's device, boxes back in frame pixels.

This is the weight behind the ``obbinfer`` GStreamer element, as plain Python any probe, pyservicemaker operator or
script can use::

    det = Detector("mypkg.models:build_obb_model", input_size=640, conf=0.25, iou=0.45)
    boxes = det([frame_a, frame_b], "RGBA")          # (H, W, 4) uint8 tensors, CPU or CUDA -> list[OrientedBoxes]

The model's input is what its training framework fed it (:mod:`obbmeta.preprocess`; ``preprocess="ultralytics"``
by default: ``(B, 3, H_in, W_in)`` float32 RGB in [0, 1], each frame scaled uniformly to fit and centred on a grey
(114) canvas). Its output, per ``output_format``:

* ``"yolo-obb"``: the YOLO-OBB head, raw ``(B, 4+nc+1, N)`` or end-to-end ``(B, K, 7)`` (told apart by shape);
* ``"mmrotate"``: a list of mmrotate results (1.x ``DetDataSample`` / ``InstanceData``, 0.x per-class arrays);
* ``"boxes"``: a list of :class:`~obbmeta.OrientedBoxes` (or one, for a batch of one).

In every format the boxes are in model-input pixels; the letterbox is undone here.

A :class:`Detector` may be called from several threads at once (pipelines sharing a model): each call prepares its
input in a buffer no other call holds. The library logs under the ``obbmeta`` logger (model loads, warm-up).
"""
from __future__ import annotations

import functools
import importlib
import logging
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from . import decode
from ._validators import flag, int_in_range, number_in_range, size_pair
from .boxes import OrientedBoxes
from .geometry import STATUS_OVERFLOW
from .letterbox import Letterbox
from .pixels import frame_size
from .preprocess import MAX_FRAME_SIDE, Preprocess, preset

OUTPUT_FORMATS = ("yolo-obb", "mmrotate", "boxes")
PRECISIONS = ("fp32", "fp16", "bf16")
PAD_VALUE = 114 / 255

log = logging.getLogger("obbmeta")


class ModelLoadError(RuntimeError):
    """The ``model`` spec could not be turned into a callable model."""


class ModelInputError(RuntimeError):
    """The model refused the input obbmeta fed it (e.g. a torch.export program exported for other shapes)."""


# ---------------------------------------------------------------- loading

def load_model(spec: Any, device: str | torch.device = "cpu") -> Callable:
    """A callable model from ``spec``, in eval mode on ``device`` where it is a module.

    ``spec`` is one of:

    * ``"package.module:factory"``: ``factory()`` is called with no arguments and must return a ``torch.nn.Module``
      or any callable (``"package.module:attr.sub"`` reaches nested attributes); absolute module names only;
    * the path of a TorchScript file (``torch.jit.save``; loaded with ``map_location=device``);
    * the path of a ``torch.export`` program (``torch.export.save``, usually ``.pt2``); it runs where it was exported
      unless its module moves with ``.to(device)``; its input shapes are remembered so that a shape it was not
      exported for is named (:class:`ModelInputError`);
    * a module or callable already (returned as is, modules moved and put in eval mode).

    Only regular files are read (a FIFO or a device such as /dev/zero is refused, never read).
    """
    device = torch.device(device)
    if callable(spec) and not isinstance(spec, str):
        return _ready(spec, device)
    if not isinstance(spec, (str, os.PathLike)) or not str(spec):
        raise ModelLoadError(f"model must be 'module:callable', a TorchScript / torch.export file path, or a "
                             f"callable; got {spec!r}")
    text = os.fspath(spec)
    if os.path.exists(text):
        mode = os.stat(text).st_mode
        if not stat.S_ISREG(mode):
            raise ModelLoadError(f"model {text!r} is not a regular file (a directory, FIFO or device); give a "
                                 "TorchScript / torch.export file or 'module:callable'")
        return _ready(_load_file(text, device), device)
    module_name, sep, attr = text.partition(":")
    if not sep or not module_name or not attr:
        raise ModelLoadError(f"model {text!r} is neither an existing file nor of the form 'module:callable'")
    if module_name.startswith(".") or not all(p.isidentifier() for p in module_name.split(".")):
        raise ModelLoadError(f"model {text!r}: {module_name!r} is not an absolute module name (like "
                             "'mypkg.models'); a path must name an existing file")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise ModelLoadError(f"model {text!r}: cannot import module {module_name!r}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - importing runs the user's module code
        raise ModelLoadError(f"model {text!r}: importing {module_name!r} failed: {exc!r}") from exc
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ModelLoadError(f"model {text!r}: {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise ModelLoadError(f"model {text!r}: {attr!r} is not callable")
    try:
        model = obj()
    except Exception as exc:  # noqa: BLE001 - the user's factory; say which one failed
        raise ModelLoadError(f"model {text!r}: calling {attr}() failed: {exc!r}") from exc
    if not callable(model):
        raise ModelLoadError(f"model {text!r}: {attr}() returned {type(model).__name__}, which is not callable")
    return _ready(model, device)


def _load_export(path: str) -> Any:
    program = torch.export.load(path)
    module = program.module()
    shapes = []
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in program.graph_signature.user_inputs:
            val = node.meta.get("val")
            if isinstance(val, torch.Tensor):
                shapes.append(tuple(int(d) if isinstance(d, int) else None for d in val.shape))
    module._obbmeta_export_shapes = tuple(shapes)  # None: a dynamic dimension
    return module


def _load_file(path: str, device: torch.device) -> Any:
    errors = []
    loaders = [("torch.export", lambda: _load_export(path)),
               ("TorchScript", lambda: torch.jit.load(path, map_location=device))]
    if not path.endswith(".pt2"):
        loaders.reverse()
    for name, load in loaders:
        try:
            return load()
        except Exception as exc:  # noqa: BLE001 - try the other format, then report both
            errors.append(f"as {name}: {exc}")
    raise ModelLoadError(f"model file {path!r} could not be loaded " + "; ".join(errors))


def _ready(model: Any, device: torch.device) -> Any:
    if isinstance(model, torch.nn.Module):
        try:
            model = model.to(device)
        except Exception as exc:  # noqa: BLE001 - e.g. an exported program bound to the device it was exported on
            if any(t.device != device for t in (*model.parameters(), *model.buffers())):
                raise ModelLoadError(f"the model cannot be moved to {device}: {exc}") from exc
        try:
            model.eval()
        except NotImplementedError:  # torch.export modules have no train/eval switch: exported as they are
            pass
    return model


def model_class_names(model: Any) -> list[str] | None:
    """The class names a model carries, in class-id order: ``class_names`` (obbmeta's demo models), Ultralytics'
    ``names`` (a dict id -> name, or a list), mmrotate / mmdet's ``dataset_meta['classes']``; None when it has none.
    """
    candidates = [getattr(model, "class_names", None), getattr(model, "names", None)]
    meta = getattr(model, "dataset_meta", None)
    if isinstance(meta, dict):
        candidates.append(meta.get("classes"))
    for names in candidates:
        if isinstance(names, dict) and names and all(isinstance(k, int) for k in names):
            if sorted(names) == list(range(len(names))):
                names = [names[k] for k in range(len(names))]
            else:
                continue
        if isinstance(names, (list, tuple)) and names and all(isinstance(n, str) and n for n in names):
            return list(names)
    return None


# ---------------------------------------------------------------- settings

def parse_input_size(value: Any) -> tuple[int, int]:
    """``640``, ``"640"``, ``"640x384"`` / ``"640,384"`` (width x height) or ``(640, 384)`` -> (width, height), sides
    in 1..16384; anything else is a ValueError."""
    return size_pair("input_size", value, 1, 16384, strings=True, kind_error=ValueError)


def _looks_like_path(text: str) -> bool:
    return "," not in text and (os.sep in text or text.startswith(".") or
                                os.path.splitext(text)[1].lower() in (".txt", ".names", ".labels", ".csv"))


def read_label_file(path: str) -> list[list[str]]:
    """nvinfer's label file: one line per class (a detector's label is the line's first ``;`` field) or per
    classifier output (its labels separated by ``;``); empty lines are skipped, as nvinfer skips them."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"label file {path!r} does not exist (or is not a file)")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\r\n").split(";") for line in f if line.strip()]


def parse_class_names(value: Any) -> list[str] | None:
    """A comma-separated list, a file with one name per line (nvinfer's label file; a line's first ``;`` field),
    or a sequence of str; '' or None -> None. A value that looks like a path (has a ``/``, starts with ``.`` or
    ends in ``.txt`` / ``.names`` / ``.labels``) must be an existing file: a mistyped path is an error, never a
    one-class list."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        if os.path.isfile(value) or _looks_like_path(value):
            names = [line[0].strip() for line in read_label_file(value)]
        else:
            names = [n.strip() for n in value.split(",")]
    else:
        names = list(value)
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n:
            raise ValueError(f"class_names[{i}] must be a non-empty str, got {n!r}")
    return names


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


@dataclass(frozen=True)
class ClassFilter:
    """What nvinfer does per class around clustering, for a detector's boxes (from ``[class-attrs-*]`` groups and
    ``filter-out-class-ids``): per-class score thresholds before NMS, IoU thresholds, a score threshold after NMS,
    the top k kept, and size / region limits on the axis-aligned box in frame pixels. ``thresholds`` etc. map class
    ids to values; a class not in a map takes the detector's own setting."""
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

    @classmethod
    def from_config(cls, config: Any, drop: Sequence[int] = ()) -> "ClassFilter":
        """From an :class:`obbmeta.nvinfer_config.InferConfig`'s class groups (class-attrs-all is the default)."""
        base = config.class_attrs.get(-1) if config is not None else None
        per = {k: config.attrs_for(k) for k in config.class_attrs if k >= 0} if config is not None else {}

        def size(a, lo):
            w, h = (a.detected_min_w, a.detected_min_h) if lo else (a.detected_max_w, a.detected_max_h)
            return None if w is None and h is None else (w or 0.0, h or 0.0)

        def roi(a):
            return None if a.roi_top_offset is None and a.roi_bottom_offset is None else \
                (a.roi_top_offset or 0.0, a.roi_bottom_offset or 0.0)

        def by_class(get):
            return {k: v for k, v in ((k, get(a)) for k, a in per.items()) if v is not None}

        return cls(
            pre_threshold=by_class(lambda a: a.pre_cluster_threshold),
            iou=by_class(lambda a: a.nms_iou_threshold),
            post_threshold=by_class(lambda a: a.post_cluster_threshold),
            topk=by_class(lambda a: a.topk if a.topk is not None and a.topk >= 0 else None),
            min_size=by_class(lambda a: size(a, True)), max_size=by_class(lambda a: size(a, False)),
            roi=by_class(roi), drop=frozenset(int(c) for c in drop),
            default_post=base.post_cluster_threshold if base else None,
            default_topk=base.topk if base and base.topk is not None and base.topk >= 0 else None,
            default_min=size(base, True) if base else None, default_max=size(base, False) if base else None,
            default_roi=roi(base) if base else None)

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
            if roi is not None and (max(y1, 0.0) < roi[0] or y2 > frame_height - roi[1]):
                continue
            k = self.topk.get(c, self.default_topk)
            if k is not None:
                if seen.get(c, 0) >= k:
                    continue
                seen[c] = seen.get(c, 0) + 1
            keep.append(i)
        if len(keep) == n:
            return boxes, 0
        return boxes[torch.as_tensor(keep, dtype=torch.int64, device=boxes.device)], n - len(keep)


# ---------------------------------------------------------------- pre-processing

def letterbox_batch(images: Sequence[torch.Tensor], input_size: tuple[int, int], out: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, list[Letterbox]]:
    """(3, H_i, W_i) float images -> one (B, 3, H_in, W_in) batch (uniform scale, centred, grey padding,
    antialiased bilinear when shrinking: the demo models' training input) and each image's :class:`Letterbox`.
    ``out``: a float32 (B, 3, H_in, W_in) tensor on the images' device to fill instead of allocating one."""
    return ANTIALIASED.apply(images, input_size, out=out)


ANTIALIASED = Preprocess(resize="bilinear-antialias", quantize=False)


class _Canvases:
    """Buffers reused between calls (a fresh 16x3x640x640 float tensor costs more in allocation and page faults
    than filling it; a pinned host buffer costs a cudaHostAlloc), each held by one call at a time, so threads sharing
    a detector never write each other's. Per (device, dtype, trailing shape) one buffer per concurrent caller, sized
    to the largest batch seen."""

    def __init__(self, pinned: bool = False) -> None:
        self._lock = threading.Lock()
        self._free: dict[tuple, list[torch.Tensor]] = {}
        self._pinned = pinned

    def _key(self, shape: tuple, device: Any, dtype: torch.dtype) -> tuple:
        return ("pinned" if self._pinned else str(device), dtype) + tuple(shape[1:])

    def take(self, shape: tuple, device: Any, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        key = self._key(shape, device, dtype)
        with self._lock:
            if len(self._free) > 8 and key not in self._free:
                self._free.clear()  # frame / input sizes changed: drop the buffers of the old ones
            free = self._free.setdefault(key, [])
            for k, t in enumerate(free):
                if t.shape[0] >= shape[0]:
                    return free.pop(k)[:shape[0]]
            if free:
                free.pop()  # a smaller one is replaced by one of this batch size
        with torch.inference_mode(False):  # a normal tensor, also fillable outside inference mode
            if self._pinned:
                return torch.empty(shape, dtype=dtype, pin_memory=True)
            return torch.empty(shape, dtype=dtype, device=device)

    def give(self, buf: torch.Tensor) -> None:
        base = buf._base if buf._base is not None else buf
        key = self._key(tuple(base.shape), base.device, base.dtype)
        with self._lock:
            free = self._free.setdefault(key, [])
            free.append(base)
            free.sort(key=lambda t: -t.shape[0])
            del free[4:]  # at most four concurrent callers' buffers kept per shape


_SHARED: dict[tuple, Any] = {}
_SHARED_LOCK = threading.Lock()


def shared_models() -> dict[tuple, Any]:
    """The models detectors share in this process: (spec, device, channels_last, compile) -> model."""
    with _SHARED_LOCK:
        return dict(_SHARED)


def default_threads() -> int:
    """torch's intra-op threads for a CPU model inside a pipeline: half the cores (at least one), leaving the rest
    to the decoder, converter and encoder threads of GStreamer (on a 2-core machine one torch thread ran the demo
    ten times faster than torch's default under an encoder's load)."""
    return max(1, (os.cpu_count() or 2) // 2)


class _Compiled:
    """``torch.compile(model)``; a model the compiler refuses (it fails at the first call) runs eagerly after a
    warning."""

    def __init__(self, model: Any):
        self.eager = model
        self.compiled = torch.compile(model)
        self.ok: bool | None = None

    def __call__(self, x):
        if self.ok is False:
            return self.eager(x)
        try:
            y = self.compiled(x)
        except Exception as exc:  # noqa: BLE001 - any compiler failure: the eager model still runs
            if self.ok:
                raise
            self.ok = False
            log.warning("torch.compile could not compile the model (%s: %s); running it eagerly",
                        type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
            return self.eager(x)
        self.ok = True
        return y

    def __getattr__(self, name):  # class_names, names, ... of the wrapped model
        return getattr(self.__dict__["eager"], name)


def _compiled(model: Any) -> Any:
    return _Compiled(model)


_CAPTURE_LOCK = threading.Lock()


class _GraphRunner:
    """Model + fixed-size decode captured in one CUDA graph for one input shape (batch bucket): frames are
    prepared into ``input`` and ``replay()`` gives the padded tables."""

    def __init__(self, detector: "Detector", shape: tuple, device: torch.device):
        self.lock = threading.Lock()
        memory = torch.channels_last if detector.channels_last else torch.contiguous_format
        with torch.inference_mode(False):
            self.input = torch.zeros(shape, device=device).contiguous(memory_format=memory)
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(2):  # lazy initialisation and allocator growth happen outside the capture
                detector._forward_padded(self.input)
        torch.cuda.current_stream(device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        # thread_local: other pipelines' threads keep using CUDA while this one captures (the global mode invalidates
        # the capture on their first allocation or sync, seen with 16 pipelines on the H200); one capture at a time.
        with _CAPTURE_LOCK, torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.output = detector._forward_padded(self.input)

    def replay(self) -> tuple:
        self.graph.replay()
        return self.output


class _Graphs:
    """A detector's CUDA graphs, one per (batch bucket, input shape, decode settings); batch sizes round up to a
    power of two (the extra rows are decoded and ignored). A shape that cannot be captured is remembered and runs
    eagerly, after one warning."""

    MAX = 8

    def __init__(self, detector: "Detector"):
        self.detector = detector
        self._lock = threading.Lock()
        self._runners: dict[tuple, _GraphRunner] = {}
        self._failed: set[tuple] = set()

    def runner(self, shape: tuple, device: torch.device) -> _GraphRunner | None:
        d = self.detector
        bucket = (1 << (int(shape[0]) - 1).bit_length(),) + tuple(shape[1:])
        key = (bucket, str(device), d.conf, d.iou, d.max_det, tuple(sorted(d.class_filter.pre_threshold.items())))
        with self._lock:
            if key in self._failed:
                return None
            runner = self._runners.get(key)
            if runner is None:
                try:
                    runner = _GraphRunner(d, bucket, device)
                except Exception as exc:  # noqa: BLE001 - e.g. a model that syncs or allocates on the host
                    self._failed.add(key)
                    log.warning("the model and decode could not be captured in a CUDA graph for input %s (%s: %s); "
                                "running eagerly", bucket, type(exc).__name__, exc)
                    return None
                if len(self._runners) >= self.MAX:
                    self._runners.pop(next(iter(self._runners)))
                self._runners[key] = runner
            return runner


class _Request:
    __slots__ = ("frames", "pixel_format", "result", "error", "done")

    def __init__(self, frames: Sequence[Any], pixel_format: list[str]):
        self.frames, self.pixel_format = list(frames), pixel_format
        self.result: list | None = None
        self.error: BaseException | None = None
        self.done = False


class _Batcher:
    """Frames that several callers hand detectors of identical settings at about the same time, run as one batch.

    The first caller to arrive leads: it waits up to the window (or until ``max_frames`` are queued), takes what is
    queued, runs it as one model call and hands each caller its own frames' detections; the others
    wait on the result. Callers arriving while a batch runs form the next one.
    """

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.pending: list[_Request] = []
        self.leading = False

    def run(self, detector: "Detector", frames: Sequence[Any], pixel_format: list[str], wait_s: float, max_frames: int,
            on_host: bool) -> list[OrientedBoxes]:
        req = _Request(frames, pixel_format)
        with self.cond:
            self.pending.append(req)
            self.cond.notify_all()
            if self.leading:
                while not req.done:
                    self.cond.wait()
                if req.error is not None:
                    raise req.error
                return req.result
            self.leading = True
            deadline = time.monotonic() + wait_s
            while sum(len(r.frames) for r in self.pending) < max_frames:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            batch, self.pending, self.leading = self.pending, [], False
        try:
            dets = detector._call([f for r in batch for f in r.frames], [p for r in batch for p in r.pixel_format],
                                  on_host)
            k = 0
            for r in batch:
                r.result, k = dets[k:k + len(r.frames)], k + len(r.frames)
        except BaseException as exc:  # noqa: BLE001 - every caller of the batch gets the error
            for r in batch:
                r.error = exc
        with self.cond:
            for r in batch:
                r.done = True
            self.cond.notify_all()
        if req.error is not None:
            raise req.error
        return req.result


_BATCHERS: dict[tuple, _Batcher] = {}
_BATCHERS_LOCK = threading.Lock()


# ---------------------------------------------------------------- the detector

@dataclass
class Detector:
    """A model plus everything around it: frames -> model -> decode/NMS -> :class:`OrientedBoxes` in frame pixels.

    Args:
        model: anything :func:`load_model` takes (a ``module:callable`` string, a TorchScript / export file, a
            module or callable).
        input_size: model input (width, height), or one int for a square.
        conf, iou, max_det: score threshold, rotated-NMS IoU threshold (greedy, exact polygon IoU, class-aware),
            boxes kept per frame (``yolo-obb``; ``mmrotate`` and ``boxes`` use them as score filter, optional
            second NMS and cap).
        output_format: ``"yolo-obb"``, ``"mmrotate"`` or ``"boxes"`` (see the module docstring).
        device: where the model runs: ``"cpu"``, ``"cuda"``, ``"cuda:N"``; ``"auto"``: the frames' device.
        preprocess: the training framework's preparation (:mod:`obbmeta.preprocess`): ``"ultralytics"``,
            ``"mmrotate"``, ``"nvinfer"`` or a :class:`~obbmeta.preprocess.Preprocess`.
        precision: ``"fp32"``, ``"fp16"`` or ``"bf16"`` (the model runs under ``torch.autocast``; nvinfer's
            ``network-mode``).
        class_names: labels by class id; None: the model's own (:func:`model_class_names`), else none.
        class_filter: nvinfer's per-class parameters (:class:`ClassFilter`).
        batch_size: frames per model call (0: all frames of a call at once; nvinfer's ``batch-size``).
        threads: torch's intra-op threads for CPU work (``torch.set_num_threads``, process-wide); None: left as they
            are, except that a CPU model leaves cores to the rest of a pipeline (:func:`default_threads`).
        cuda_graph: on CUDA, capture model + decode in a CUDA graph per input shape (batch sizes bucketed to powers
            of two), replayed per batch with one host synchronisation; a model that cannot be captured runs eagerly
            after a warning.
        compile: run the model through ``torch.compile`` (falls back to eager with a warning when it fails).
        channels_last: model and input in channels-last memory format (faster convolutions on tensor cores).
        share_model: detectors in one process with the same model spec, device and model options use one loaded
            model (:func:`shared_models`).
        max_batch_wait_us: > 0: calls from several threads to detectors of identical settings (separate pipelines
            sharing a model) within this many microseconds run as one batch of at most ``batch_size`` (or 32) frames;
            0: every call runs at once.
    """
    model: Any
    input_size: Any = 640
    conf: float = 0.25
    iou: float = 0.45
    max_det: int = 300
    output_format: str = "yolo-obb"
    device: str = "auto"
    preprocess_mode: Any = "ultralytics"
    precision: str = "fp32"
    class_names: Any = None
    class_filter: ClassFilter | None = None
    batch_size: int = 0
    threads: int | None = None
    cuda_graph: bool = False
    compile: bool = False
    channels_last: bool = False
    share_model: bool = True
    max_batch_wait_us: int = 0

    def __post_init__(self):
        self.input_size = parse_input_size(self.input_size)
        for name in ("conf", "iou"):
            number_in_range(name, getattr(self, name), 0.0, 1.0)
        int_in_range("max_det", self.max_det, 1)
        int_in_range("batch_size", self.batch_size, 0, form="an int >= 0 (0: every frame in one call)")
        if self.output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, got {self.output_format!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")
        int_in_range("max_batch_wait_us", self.max_batch_wait_us, 0, 1_000_000)
        for name in ("cuda_graph", "compile", "channels_last", "share_model"):
            flag(name, getattr(self, name))
        if self.threads is not None:
            int_in_range("threads", self.threads, 1, 1024, form="None or an int in [1, 1024]")
        self.pre = preset(self.preprocess_mode)
        self.device = parse_device(self.device)
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device={self.device!r} but torch sees no CUDA device (torch {torch.__version__}); "
                             "use 'cpu' or 'auto'")
        self.class_names = parse_class_names(self.class_names)
        if self.class_filter is None:
            self.class_filter = ClassFilter()
        self._models: dict[str, Any] = {}
        self._load_lock = threading.Lock()
        self._canvases = _Canvases()
        self.filtered = 0  # boxes removed by class_filter after decoding, over the detector's life
        self.timings: list | None = None  # a list: each CUDA call appends its phase times (benchmarks, debug)
        self._graphs = _Graphs(self)
        self._pinned = _Canvases(pinned=True)
        threads = self.threads if self.threads is not None else (default_threads() if self.device == "cpu" else None)
        if threads is not None:
            torch.set_num_threads(threads)
        if self.cuda_graph and self.device == "cpu":
            log.warning("cuda_graph applies to models on CUDA; this CPU model runs eagerly")
        if self.device != "auto":
            self.model_on(self.device)

    # ---------------------------------------------------------------- model

    def model_on(self, device: torch.device | str) -> Any:
        """The model loaded for ``device`` (loaded once per device, also when threads ask at once)."""
        key = str(torch.device(device))
        model = self._models.get(key)
        if model is None:
            with self._load_lock:
                model = self._models.get(key)
                if model is None:
                    model = self._models[key] = self._load(key)
        return model

    def _load(self, device: str) -> Any:
        shared = self.share_model and isinstance(self.model, (str, os.PathLike))
        key = (os.fspath(self.model), device, self.channels_last, self.compile) if shared else None
        if key is not None:
            with _SHARED_LOCK:
                model = _SHARED.get(key)
            if model is not None:
                log.info("model %r on %s shared with another detector", _spec_name(self.model), device)
                return model
        t0 = time.perf_counter()
        model = load_model(self.model, device)
        if self.channels_last and isinstance(model, torch.nn.Module):
            model = model.to(memory_format=torch.channels_last)
        if self.compile:
            model = _compiled(model)
        log.info("model %r loaded on %s in %.3f s", _spec_name(self.model), device, time.perf_counter() - t0)
        if key is not None:
            with _SHARED_LOCK:
                model = _SHARED.setdefault(key, model)
        return model

    @property
    def labels(self) -> list[str] | None:
        """The labels objects get: ``class_names`` when given, else the model's own (None when it has none)."""
        if self.class_names is not None:
            return self.class_names
        for model in self._models.values():
            return model_class_names(model)
        return model_class_names(self.model) if not isinstance(self.model, (str, os.PathLike)) else None

    def warm_up(self, frame_size: tuple[int, int] | None = None, batch: int = 1) -> float:
        """Run ``batch`` grey frames of ``frame_size`` (default: the input size) through preparation, model and
        decode once on the model's device, so the first real batch pays no first-call costs (kernel selection,
        allocator growth, lazy initialisation). Returns the seconds it took."""
        if self.device == "auto":
            raise ValueError("warm_up needs a concrete device (device='auto' follows the frames)")
        w, h = frame_size or self.input_size
        t0 = time.perf_counter()
        frame = torch.full((h, w, 3), 114, dtype=torch.uint8, device=self.device)
        self([frame] * batch, "RGB")
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(self.device)
        seconds = time.perf_counter() - t0
        log.info("model %r warmed up on %s (%d x %dx%d) in %.3f s", _spec_name(self.model), self.device, batch, w, h,
                 seconds)
        return seconds

    # ---------------------------------------------------------------- frames

    def _images(self, frames: Sequence[Any], pixel_format: Any, device: torch.device) -> list[Any]:
        """The frames on ``device`` as given (a tensor, or a tuple of plane tensors), each refused by name before
        the copy when it is no frame or of an implausible size. ``pixel_format`` (the frames' formats) is checked
        where the frames are read; it is passed here for subclasses that look at the frames as they arrive (the
        tests' recording detectors)."""
        out = []
        for i, f in enumerate(frames):
            planes = tuple(f) if isinstance(f, (tuple, list)) else (f,)
            for p in planes:
                if not isinstance(p, torch.Tensor):
                    raise TypeError(f"frames[{i}] must be a tensor or a tuple of plane tensors, got "
                                    f"{type(p).__name__}")
            h, w = int(planes[0].shape[0]), int(planes[0].shape[1]) if planes[0].dim() > 1 else 0
            if not (0 < w <= MAX_FRAME_SIDE and 0 < h <= MAX_FRAME_SIDE):
                raise ValueError(f"frames[{i}] is {w}x{h}: frames must be 1..{MAX_FRAME_SIDE} pixels per side")
            planes = tuple(p.to(device, non_blocking=True) for p in planes)
            out.append(planes if isinstance(f, (tuple, list)) else planes[0])
        return out

    def _run_device(self, frames: Sequence[Any]) -> torch.device:
        if self.device != "auto":
            return torch.device(self.device)
        first = frames[0][0] if isinstance(frames[0], (tuple, list)) else frames[0]
        return first.device

    def preprocess(self, frames: Sequence[Any], pixel_format: Any) -> tuple[torch.Tensor, list[Letterbox]]:
        """Frames (tensors or plane tuples as :func:`obbmeta.pixels.to_rgb` takes them) -> a new model input batch
        on the model's device and the letterbox of each frame."""
        device = self._run_device(frames)
        with torch.no_grad():
            formats = _formats(pixel_format, len(frames))
            return self.pre.apply_frames(self._images(frames, formats, device), formats, self.input_size)

    # ---------------------------------------------------------------- the call

    @torch.inference_mode()
    def __call__(self, frames: Sequence[Any], pixel_format: Any = "RGB", *, on_host: bool = False
                 ) -> list[OrientedBoxes]:
        """Detections of each frame, in that frame's pixels (``pixel_format``: one for all frames or one per frame),
        on the model's device, or with ``on_host`` on the CPU
        (what a metadata writer needs: on CUDA the raw YOLO-OBB path then decodes into fixed-size tables and copies
        them to pinned memory with one synchronisation for the batch)."""
        if not frames:
            return []
        if self.max_batch_wait_us > 0 and self.share_model and isinstance(self.model, (str, os.PathLike)):
            with _BATCHERS_LOCK:
                batcher = _BATCHERS.setdefault(self._batch_key(), _Batcher())
            return batcher.run(self, frames, _formats(pixel_format, len(frames)), self.max_batch_wait_us * 1e-6,
                               self.batch_size or 32, on_host)
        formats = _formats(pixel_format, len(frames))
        step = self.batch_size or len(frames)
        out: list[OrientedBoxes] = []
        for start in range(0, len(frames), step):
            out += self._call(frames[start:start + step], formats[start:start + step], on_host)
        return out

    def _batch_key(self) -> tuple:
        """Everything that decides a call's result but the frames: calls with equal keys may share a batch."""
        cf = self.class_filter
        return (os.fspath(self.model), self.device, self.input_size, self.pre, self.precision, self.conf, self.iou,
                self.max_det, self.output_format, self.cuda_graph, self.compile, self.channels_last,
                tuple(sorted(cf.pre_threshold.items())), tuple(sorted(cf.iou.items())), repr(cf))

    def _call(self, frames: Sequence[Any], pixel_format: Any, on_host: bool = False) -> list[OrientedBoxes]:
        device = self._run_device(frames)
        formats = _formats(pixel_format, len(frames))
        images = self._images(frames, formats, device)
        sizes = [frame_size(im, fmt) for im, fmt in zip(images, formats)]
        # The fixed-size decode runs one NMS threshold: per-class ones take the sized decode (one NMS each).
        padded = self.output_format == "yolo-obb" and not self.class_filter.iou
        if device.type == "cuda" and padded and (on_host or self.cuda_graph):
            dets = self._call_padded(images, formats, sizes, device)
            return dets if on_host else [d.to(device) for d in dets]
        shape = self.pre.input_shape(sizes, self.input_size)
        canvas = self._canvases.take(shape, device)
        try:
            x, letterboxes = self.pre.apply_frames(images, formats, self.input_size, out=canvas)
            output = self.forward(x)
            first = output[0] if isinstance(output, (tuple, list)) and output else output
            if isinstance(first, torch.Tensor) and first.device != x.device:
                raise ValueError(f"the model returned its output on {first.device}, but its input was on {x.device}: "
                                 "return the output on the input's device")
            dets = self.decode(output, letterboxes, sizes)
        finally:
            # Work queued on this thread's stream reads the canvas; the next taker queues after it on the same
            # stream, or (another thread's stream) the decode's read of the counts has already synchronised.
            self._canvases.give(canvas)
        return [d.to("cpu") for d in dets] if on_host else dets

    def _call_padded(self, images: list, formats: list, sizes: list, device: torch.device) -> list[OrientedBoxes]:
        """CUDA, raw or end-to-end YOLO-OBB head: prepare, model, fixed-size decode (in a CUDA graph when
        ``cuda_graph``), one copy of the tables to pinned memory and one synchronisation; boxes on the CPU.
        With :attr:`timings` a list, each call appends its phases in seconds (synchronising between them)."""
        shape = self.pre.input_shape(sizes, self.input_size)
        runner = self._graphs.runner(shape, device) if self.cuda_graph else None
        sink = self.timings if self.timings is not None else getattr(_PROFILE, "sink", None)
        clock = _Clock(device) if sink is not None else None
        if runner is not None:
            with runner.lock:
                x, letterboxes = self.pre.apply_frames(images, formats, self.input_size, out=runner.input[:shape[0]])
                clock and clock.tick("prepare")
                tables = runner.replay()
                clock and clock.tick("model_decode")
                host = self._to_host(tables, shape[0])
        else:
            canvas = self._canvases.take(shape, device)
            try:
                x, letterboxes = self.pre.apply_frames(images, formats, self.input_size, out=canvas)
                clock and clock.tick("prepare")
                tables = self._forward_padded(x)
                clock and clock.tick("model_decode")
                host = self._to_host(tables, shape[0])
            finally:
                self._canvases.give(canvas)
        if clock:
            clock.tick("copy")
            sink.append(clock.phases)
        boxes, scores, labels, counts, status = host
        if status & STATUS_OVERFLOW:  # the pool was outgrown: the sized decode sizes it exactly (rare; never silent)
            x, letterboxes = self.pre.apply_frames(images, formats, self.input_size)
            return [d.to("cpu") for d in self._decode_yolo(self.forward(x), letterboxes)]
        if status:
            from .decode.yolo_padded import padded_status_error

            raise padded_status_error(status)
        dets = []
        for b, (lb, n) in enumerate(zip(letterboxes, counts)):
            d = OrientedBoxes._checked_elsewhere(boxes[b, :n], scores[b, :n], labels[b, :n])
            dets.append(d.rescale(lb))
        return self._filter_after_decode(dets, sizes)

    def _forward_padded(self, x: torch.Tensor) -> tuple:
        """Model and fixed-size decode in model-input pixels, no host synchronisation (what a graph captures)."""
        output = self.forward(x)
        if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
            output = output[0]
        if not isinstance(output, torch.Tensor):
            raise TypeError(f"output-format yolo-obb expects a tensor (B, 4+nc+1, N) or (B, K, 7); the model "
                            f"returned {type(output).__name__}")
        conf = self.conf
        if self.class_filter.pre_threshold:
            output, conf = _per_class_scores(output, self.class_filter.pre_threshold, self.conf)
        try:
            padded = decode.yolo_obb_padded(output, conf=conf, iou=self.iou, max_det=self.max_det)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"output-format yolo-obb: the model's output cannot be decoded: {exc}") from None
        return tuple(padded)

    def _to_host(self, tables: tuple, n: int) -> tuple:
        """The first ``n`` images' tables in pinned host memory after one synchronisation: (boxes, scores, labels,
        counts list, status int)."""
        boxes, scores, labels, counts, status = tables
        flat = torch.cat((counts[:n].to(torch.int64), status.reshape(1).to(torch.int64)))
        out = []
        for t in (boxes[:n], scores[:n], labels[:n], flat):
            buf = self._pinned.take(tuple(t.shape), t.device, dtype=t.dtype)
            buf.copy_(t, non_blocking=True)
            out.append(buf)
        torch.cuda.current_stream(boxes.device).synchronize()
        try:
            *counts_list, status_value = out[3].tolist()
            return out[0].clone(), out[1].clone(), out[2].clone(), counts_list, status_value
        finally:
            for buf in out:
                self._pinned.give(buf)

    def forward(self, x: torch.Tensor) -> Any:
        """The model on a prepared input batch, in the configured precision."""
        model = self.model_on(x.device)
        if self.channels_last and x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        try:
            if self.precision == "fp32":
                return model(x)
            dtype = torch.float16 if self.precision == "fp16" else torch.bfloat16
            with torch.autocast(x.device.type, dtype=dtype):
                return model(x)
        except AssertionError as exc:
            shapes = getattr(model, "_obbmeta_export_shapes", None)
            if shapes is not None and "Guard failed" in str(exc):
                raise ModelInputError(_export_mismatch(tuple(x.shape), shapes, str(exc))) from None
            raise

    def decode(self, output: Any, letterboxes: Sequence[Letterbox],
               frame_sizes: Sequence[tuple[int, int]] | None = None) -> list[OrientedBoxes]:
        """The model's output for a batch -> one :class:`OrientedBoxes` per frame, in frame pixels, after the class
        filter (its region offsets need ``frame_sizes``, (w, h) per frame; the boxes it removed are counted in
        :attr:`filtered`)."""
        n = len(letterboxes)
        if self.output_format == "yolo-obb":
            dets = self._decode_yolo(output, letterboxes)
        elif self.output_format == "mmrotate":
            dets = decode.mmrotate(output, score_thr=self.conf, iou=self.iou, max_det=self.max_det)
            dets = [d.rescale(lb) for d, lb in zip(self._check_count(dets, n), letterboxes)]
        else:
            dets = [output] if isinstance(output, OrientedBoxes) else list(output)
            for i, d in enumerate(dets):
                if not isinstance(d, OrientedBoxes):
                    raise TypeError(f"output-format boxes expects OrientedBoxes per frame; item {i} is "
                                    f"{type(d).__name__}")
            dets = [_filter(d, self.conf, self.max_det).rescale(lb)
                    for d, lb in zip(self._check_count(dets, n), letterboxes)]
        if self.class_filter.filters_after_decode and (frame_sizes is None or len(frame_sizes) != n):
            raise ValueError("decode with a class filter needs frame_sizes, one (w, h) per frame")
        return self._filter_after_decode(dets, frame_sizes)

    def _filter_after_decode(self, dets: list[OrientedBoxes], frame_sizes) -> list[OrientedBoxes]:
        """The class filter's post-decode rules (sizes, ROI) per frame; the boxes they remove counted in
        ``filtered``."""
        if not self.class_filter.filters_after_decode:
            return dets
        kept = []
        for d, (_, h) in zip(dets, frame_sizes):
            d, gone = self.class_filter.apply(d, h)
            self.filtered += gone
            kept.append(d)
        return kept

    def _decode_yolo(self, output: Any, letterboxes: Sequence[Letterbox]) -> list[OrientedBoxes]:
        if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
            output = output[0]  # Ultralytics-style (predictions, extras)
        if not isinstance(output, torch.Tensor):
            raise TypeError(f"output-format yolo-obb expects a tensor (B, 4+nc+1, N) or (B, K, 7); the model "
                            f"returned {type(output).__name__}")
        n = len(letterboxes)
        cf = self.class_filter
        conf = self.conf
        if cf.pre_threshold:
            output, conf = _per_class_scores(output, cf.pre_threshold, self.conf)
        # One letterbox for the batch (frames of one size, a uniform scale): undone inside the decode.
        same = all(lb == letterboxes[0] for lb in letterboxes) and letterboxes[0].is_uniform
        ious = sorted(set(cf.iou.values()) | {self.iou})
        parts = []
        for iou in ious:
            classes = None
            if len(ious) > 1:  # one decode per distinct NMS threshold, each on its classes
                nc = output.shape[1] - 5 if output.shape[-1] != 7 else None
                own = [c for c, v in cf.iou.items() if v == iou]
                if iou == self.iou:
                    others = set(cf.iou) - set(own)
                    classes = [c for c in range(nc) if c not in others] if nc else None
                    if classes is None:
                        raise ValueError("per-class nms-iou-threshold needs a raw YOLO-OBB head (B, 4+nc+1, N)")
                else:
                    classes = own
            try:
                dets = decode.yolo_obb(output, conf=conf, iou=iou, max_det=self.max_det, classes=classes,
                                       letterbox=letterboxes[0] if same else None)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"output-format yolo-obb: the model's output cannot be decoded: {exc}") from None
            parts.append(self._check_count(dets, n))
        dets = parts[0] if len(parts) == 1 else [_merge([p[i] for p in parts], self.max_det) for i in range(n)]
        return dets if same else [d.rescale(lb) for d, lb in zip(dets, letterboxes)]

    @staticmethod
    def _check_count(dets: list, n: int) -> list:
        if len(dets) != n:
            raise ValueError(f"the model returned detections for {len(dets)} frames, but {n} frames went in")
        return dets


_PROFILE = threading.local()


class profile_phases:
    """``with profile_phases() as phases:``: the CUDA YOLO-OBB calls this thread makes inside the block append
    their phase times in seconds (``prepare``, ``model_decode``, ``copy``) to the list ``phases``, the device
    synchronised between phases (slower: for debugging and benchmarks). Per thread, so one shared Detector can be
    profiled by one pipeline while others run; calls gathered into another thread's batch
    (``max_batch_wait_us``) are not seen."""

    def __enter__(self) -> list:
        self._outer = getattr(_PROFILE, "sink", None)
        _PROFILE.sink = []
        return _PROFILE.sink

    def __exit__(self, *exc) -> None:
        _PROFILE.sink = self._outer


class _Clock:
    """Phase times of one call, the device synchronised at each tick (only when timings are asked for)."""

    def __init__(self, device: torch.device):
        self.device = device
        torch.cuda.synchronize(device)
        self.t = time.perf_counter()
        self.phases: dict[str, float] = {}

    def tick(self, name: str) -> bool:
        torch.cuda.synchronize(self.device)
        now = time.perf_counter()
        self.phases[name], self.t = now - self.t, now
        return True


def _formats(pixel_format: Any, n: int) -> list[str]:
    """One pixel format per frame: a str for all, or a sequence of n (a batch mixing sources' colour formats)."""
    if isinstance(pixel_format, str):
        return [pixel_format] * n
    formats = list(pixel_format)
    if len(formats) != n or not all(isinstance(f, str) for f in formats):
        raise ValueError(f"pixel_format must be a str or one str per frame ({n}), got {pixel_format!r}")
    return formats


def _spec_name(model: Any) -> str:
    return model if isinstance(model, str) else type(model).__name__


def _export_mismatch(fed: tuple, shapes: tuple, guard: str) -> str:
    want = shapes[0] if shapes else ()
    text = "x".join("*" if d is None else str(d) for d in want)
    return (f"the torch.export program takes input ({text}) but obbmeta fed {tuple(fed)} ({guard}). Set input-size "
            f"to the exported width x height, and export with a dynamic batch dimension, e.g. "
            f"torch.export.export(model, (x,), dynamic_shapes={{'x': {{0: torch.export.Dim('batch')}}}}), or set "
            f"batch-size to the exported batch size")


def _per_class_scores(output: torch.Tensor, thresholds: dict[int, float], conf: float
                      ) -> tuple[torch.Tensor, float]:
    """nvinfer's per-class pre-cluster thresholds before NMS: class scores at or below their class's threshold are
    zeroed, and the decode keeps scores above the lowest threshold: exactly the scores above their own. No host
    synchronisation (this runs inside the captured CUDA graph)."""
    items = tuple(sorted((int(c), float(t)) for c, t in thresholds.items() if c >= 0))
    if output.dim() == 3 and output.shape[-1] == 7 and output.shape[1] != 7:  # end-to-end (B, K, 7)
        # One slot per class up to the highest with a threshold, then one for every class above it (conf).
        n = (items[-1][0] if items else -1) + 2
        thr = _threshold_table(items, conf, n, output.device, torch.float32)
        labels = output[..., 5].round().long()
        keep = output[..., 4] > thr[labels.clamp(0, n - 1)]
        out = output.clone()
        out[..., 4] = torch.where(keep, out[..., 4], torch.zeros_like(out[..., 4]))
        return out, min([conf, *thresholds.values()])
    nc = output.shape[1] - 5
    thr = _threshold_table(items, conf, nc, output.device, output.dtype)
    scores = output[:, 4:4 + nc]
    out = output.clone()
    out[:, 4:4 + nc] = torch.where(scores > thr.view(1, nc, 1), scores, torch.zeros_like(scores))
    return out, min([conf, *thresholds.values()])


@functools.lru_cache(maxsize=64)
def _threshold_table(items: tuple, conf: float, n: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(n,) thresholds: ``conf``, with the given (class, threshold) pairs below n in their slots (made once per
    setting and device, on the device without a host copy: the graph's eager warm-up makes it before the capture)."""
    thr = torch.full((n,), conf, dtype=dtype, device=device)
    for c, t in items:
        if c < n:
            thr[c] = t
    return thr


def _merge(parts: list[OrientedBoxes], max_det: int) -> OrientedBoxes:
    boxes = OrientedBoxes.cat(parts)
    return boxes[torch.argsort(boxes.scores, descending=True, stable=True)[:max_det]]


def _filter(boxes: OrientedBoxes, conf: float, max_det: int) -> OrientedBoxes:
    boxes = boxes[boxes.scores > conf]
    return boxes[torch.argsort(boxes.scores, descending=True, stable=True)[:max_det]]
