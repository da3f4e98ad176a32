"""``obbinfer``: an oriented detector written in PyTorch as a pipeline element, in place of nvinfer.

Per buffer: the frames of the batch (system memory: one; after nvstreammux / nvvideoconvert in ``memory:NVMM``:
every filled surface, as zero-copy CUDA views) go through the model in ``batch-size`` chunks, are decoded and
suppressed on the model's device (:class:`obbmeta.infer.Detector`) and written with ``attach_obbs_batch`` into the
frame metas (``frame_meta->batch_id`` picks the surface), as nvinfer writes detections: tight AABB in
``rect_params``, ``object_id = UNTRACKED_OBJECT_ID``, ``bInferDone``, plus the OBB user meta. With no NvDsBatchMeta
on the buffer it makes one as nvstreammux would.

Its settings are :class:`obbmeta.config.settings.InferSettings`: every property (nvinfer's with nvinfer's name, type,
range, default and flags) and every honoured nvinfer config key fill one typed field. ``config-file-path`` is read
when it is set, as nvinfer reads it; a property set on the element overrides the file; with a file, the keys it
leaves out take nvinfer's defaults. Life cycle as nvinfer's: the model is loaded and warmed up at READY -> PAUSED (a
bad model fails the state change); setting a property that defines the model while playing loads the new one off
the streaming thread and swaps it in at a batch boundary (``model-updated`` signal and an ``obbinfer-model-updated``
element message); a replacement that fails keeps the old model and posts a warning. ``GST_DEBUG=obbinfer:4`` logs
the effective preprocessing and thresholds once, ``:5`` each batch's latency by phase, ``:6`` the detector's own
phases on CUDA. torch is imported when the element starts, not when GStreamer scans the plugin.
"""
from __future__ import annotations

import collections
import contextlib
import threading
import time
from dataclasses import dataclass
from typing import Any

from ..config import settings as S
from ..config.nvinfer import read_nvinfer_config
from ._element import ObbmetaElement, batch_meta_for, describe_failure, enum_type
from ._frames import mapped_frames
from ._gi import GObject, Gst

REINFER_AREA_GROWTH = 0.2   # nvinfer's REINFER_AREA_THRESHOLD: an object whose box grew this much is inferred again
HISTORY_MAX_AGE = 150       # nvinfer's CLEANUP_ACCESS_CRITERIA: frames after which an unseen object is forgotten
CAP_WARNING_INTERVAL_S = 10.0  # a frame that hits max-det is said at most this often

ProcessMode = enum_type("GstObbInferProcessMode", S.PROCESS_MODES)
_GTYPES = {"str": str, "bool": bool, "int": int, "float": float, "uint": GObject.TYPE_UINT}


def _gproperty(spec: S.Spec) -> tuple:
    """The ``(type, nick, blurb, [min, max,] default)`` of a setting's GObject property."""
    nick = spec.name.replace("-", " ")
    if spec.kind == "pointer":
        return (GObject.TYPE_POINTER, nick, spec.blurb)
    if spec.kind == "enum":
        return (ProcessMode, nick, spec.blurb, spec.default)
    default = spec.to_property(spec.default)
    if spec.kind in ("str", "bool"):
        return (_GTYPES[spec.kind], nick, spec.blurb, "" if default is None else default)
    if spec.kind == "int" and spec.low is None:
        return (int, nick, spec.blurb, -S.G_MAXINT - 1, S.G_MAXINT, default)
    return (_GTYPES[spec.kind], nick, spec.blurb, spec.low, spec.high, default)


def _properties() -> dict[str, tuple]:
    out = {s.name: _gproperty(s) for s in S.SPECS.values() if s.is_property}
    out["gie-unique-id"] = (GObject.TYPE_UINT, "gie unique id", "alias of unique-id (nvinfer's config key)", 0,
                            S.G_MAXUINT, 15)
    out["infer-on-gie-id"] = (int, "infer on gie id", "nvinfer's name of operate-on-gie-id", -1, S.G_MAXINT, -1)
    out["infer-on-class-ids"] = (str, "infer on class ids", "nvinfer's name of operate-on-class-ids (0:2:3)", "")
    out["network-mode"] = (int, "network mode", "nvinfer's precision numbers: 0 FP32, 1 INT8 (fp16 on CUDA, no "
                           "calibration), 2 FP16, 3 BEST", 0, 3, 0)
    return out


def _region(rect: tuple, size: tuple) -> tuple[float, float, float, float]:
    """A ROI (left, top, width, height) as (x1, y1, x2, y2) inside its frame."""
    w, h = size
    x1, y1 = min(max(rect[0], 0.0), w), min(max(rect[1], 0.0), h)
    x2, y2 = min(max(rect[0] + rect[2], 0.0), w), min(max(rect[1] + rect[3], 0.0), h)
    if x2 <= x1 or y2 <= y1:
        raise ValueError(f"a preprocess ROI {rect} has no area inside its {w}x{h} frame")
    return (x1, y1, x2, y2)


def _tensor_view(t: Any, device: str) -> Any:
    """The preprocess tensor as a torch tensor without a copy: device memory (nvdspreprocess allocates it with
    cudaMalloc on gpu_id) as a CUDA tensor, host memory (a tensor attached by a CPU pipeline) as a CPU one, as the
    CUDA driver tells them apart; float32 / float16, on ``device`` ("auto": where it lies)."""
    import torch

    from ..frames import tensor_at

    x = tensor_at(t.address, t.shape, t.dtype, f"the preprocess tensor {t.name!r}")
    if x.dtype not in (torch.float32, torch.float16):
        x = x.float()
    return x.to(device) if str(x.device) != device and device != "auto" else x


def _frame_device(view: Any) -> Any:
    t = view.model_input
    return (t[0] if isinstance(t, tuple) else t).device


def frames_device_problem(frames_device: Any, model_device: Any) -> str | None:
    """Why frames on ``frames_device`` (an NvBufSurface's GPU) cannot go to a model on ``model_device``, or None.
    Frames in CUDA memory of one GPU and a model on another would be copied across GPUs every batch: refused, with
    the setting that fixes it (a CPU model takes any frames; frames in host memory go to any device)."""
    import torch

    if str(model_device) == "auto":  # a Detector of device "auto" runs where the frames are
        return None
    f, m = torch.device(frames_device), torch.device(str(model_device))
    if f.type != "cuda" or m.type != "cuda":
        return None
    fi, mi = f.index or 0, m.index if m.index is not None else 0
    if fi == mi:
        return None
    return (f"the frames are in the memory of GPU {fi} (the NvBufSurface's gpuId) but the model runs on cuda:{mi}: "
            f"set gpu-id={fi} (as on nvvideoconvert / nvstreammux) or device=cuda:{fi}, or put the pipeline on GPU "
            f"{mi}; obbinfer does not copy frames between GPUs")


@dataclass
class _History:
    """What a secondary element last did for a tracked object (nvinfer's GstNvInferObjectHistory)."""
    frame_num: int      # frame it was last inferred on
    area: float         # its rect_params area then
    seen: int           # frame it was last seen on
    result: Any         # the labels attached then (None: nothing passed the threshold)


class ObbInfer(ObbmetaElement):
    element_name = "obbinfer"
    gtype_name = "GstObbInfer"
    long_name = "obbmeta oriented-box inference"
    klass = "Filter/Analyzer/Video"
    description = ("Runs a PyTorch oriented-box detector on every frame of the batch and writes NvDsObjectMeta (the "
                   "tight axis-aligned box) plus an OBB user meta (angle, polygon): nvinfer for oriented detectors")
    debug_description = "obbmeta oriented-box inference (nvinfer for PyTorch oriented detectors)"
    __gsignals__ = {
        "model-updated": (GObject.SignalFlags.RUN_LAST, None, (int, str)),
        # buffer, {"input": (name, ndarray), "outputs": [(name, ndarray), ...]}, batch size: every inferred batch's
        # layers on the host (nvinfer's raw-output-generated-callback, for Python)
        "raw-output-generated": (GObject.SignalFlags.RUN_LAST, None, (Gst.Buffer, object, int)),
    }
    # nvinfer's READY-only properties apply at the next batch here (or load a new model), except these: they change
    # what the element is, and apply at the next start.
    _at_start = frozenset({"process-mode", "input-tensor-meta", "queue-depth"})
    _ready_only = frozenset(s.name for s in S.SPECS.values() if s.mutable == "ready") | \
        frozenset(a for a, n in S.ALIASES.items() if S.SPECS[n].mutable == "ready")
    property_specs = _properties()

    def __init__(self):
        super().__init__()
        self._explicit = {}  # setting name -> typed value set on the element (overrides a config file)
        self._pointers: dict[str, Any] = {}
        self._config = None  # the parsed config-file-path
        self._config_reported = None
        self.settings = S.resolve()
        self.loaded = None  # the obbmeta.infer.build.Built in force
        self._pending = None
        self._generation = 0
        self._swap_lock = threading.Lock()
        self._history: dict[int, dict[int, _History]] = {}  # secondary: per source, per tracked object
        self._assigned = False
        self._said: set = set()  # one-time warnings already posted
        self._cap_said = 0.0
        self._params = (None, None)
        self._labels = (None, None)
        self._outputs = (None, None)  # (settings, obbmeta.infer.outputs.TensorOutputs)
        self.batches = 0   # buffers seen (for interval)
        self.frames = 0    # frame_num of the batch metas this element creates
        self.inferred = 0  # batches that went through the model
        self.timings: list | None = None  # a list: each inferred batch appends its phase times (benchmarks)
        # Per model batch, the CPU seconds of this element's own work on its threads (time.thread_time): [submit
        # (streaming thread: map, batch meta, letterbox and model launches), result (output thread: wait, copy
        # back, boxes per frame), write (the metadata)], without what downstream elements do when it pushes.
        self.host_times: collections.deque = collections.deque(maxlen=4096)
        self.gpu_timing = False  # True: each batch's GPU span (CUDA events around its work) goes to gpu_times
        self.gpu_times: collections.deque = collections.deque(maxlen=4096)  # seconds
        self._cost: list | None = None
        self._stream = None  # the element's own CUDA stream (a model on CUDA)

    latencies = property(ObbmetaElement.output_latencies, doc=ObbmetaElement.output_latencies.__doc__)

    @property
    def detector(self) -> Any:
        """The detector in force (None before start)."""
        return self.loaded.detector if self.loaded is not None else None

    @detector.setter
    def detector(self, detector: Any) -> None:
        """Use this :class:`obbmeta.infer.Detector` (from Python) instead of building one from the properties."""
        from ..infer import Labels
        from ..infer.build import Built, class_palette

        s = self.settings
        self.loaded = None if detector is None else Built(
            detector, s, "(assigned)", "", secondary=s.secondary,
            labels=None if s.secondary else Labels.of(getattr(detector, "labels", None)), palette=class_palette(s))
        self._assigned = detector is not None

    # ---------------------------------------------------------------- properties

    def do_get_property(self, prop: GObject.ParamSpec) -> Any:
        name = prop.name
        with self._prop_lock:
            s = self.settings
        if name == S.NETWORK_MODE_ALIAS:
            return {"fp32": 0, "int8": 1, "fp16": 2, "bf16": 2, "best": 3}[s.precision]
        spec = S.SPECS[S.ALIASES.get(name, name)]
        if spec.kind == "pointer":
            return self._pointers.get(spec.name, (0, None))[1]
        value = spec.to_property(getattr(s, spec.attr))
        return "" if value is None else value

    def do_set_property(self, prop: GObject.ParamSpec, value: Any) -> None:
        name = S.ALIASES.get(prop.name, prop.name)
        spec = S.SPECS[name]
        config = None
        try:
            if prop.name == S.NETWORK_MODE_ALIAS:
                if int(value) not in S.NETWORK_MODES:
                    raise ValueError(f"expected 0 (FP32), 1 (INT8), 2 (FP16) or 3 (BEST), got {value!r}")
                value = S.NETWORK_MODES[int(value)]
            if spec.kind == "pointer":  # a C caller's g_object_set: PyGObject hands a GPointer, hashed to its address
                typed = (0, None) if value is None else (value if isinstance(value, int) else hash(value), value)
            else:
                typed = spec.value(int(value) if spec.kind == "enum" else value)
            if name == "config-file-path" and typed:
                config = read_nvinfer_config(typed)
            if name in ("class-names", "labelfile-path") and typed:
                from ..infer.labels import parse_class_names

                parse_class_names(typed)  # a missing or unreadable file is refused now, not at a batch
        except (TypeError, ValueError, OSError, ImportError) as exc:
            with self._prop_lock:
                # keyed by the setting: a later valid value of either name (alias or property) clears it
                self._refused[name] = f"property {prop.name}={value!r} refused: {exc}"
            self.warn(self._refused[name])
            return
        with self._prop_lock:
            self._refused.pop(name, None)
            if spec.kind == "pointer":
                self._pointers[name] = typed
            else:
                self._explicit[name] = typed
            if name == "config-file-path":
                self._config = config
                self._explicit.pop(name, None)
                if typed:
                    self._explicit[name] = typed
            self.settings = S.resolve(self._explicit, self._config)
        if self.running and name in self._at_start:
            self.warn(f"property {prop.name} cannot change while the element runs; it applies at the next start")
            return
        self.property_changed(name)

    def prop(self, name: str) -> Any:
        """The value in force of a setting (typed: ``prop("input-size")`` is a (width, height) tuple)."""
        return getattr(self.settings, S.SPECS[S.ALIASES.get(name, name)].attr)

    def property_changed(self, name: str) -> None:
        if self.running and name in S.MODEL_SETTINGS and not self._assigned:
            self._rebuild(name)

    # ---------------------------------------------------------------- building the detector

    def _build(self, settings: Any, config: Any) -> Any:
        """A detector from ``settings`` (resolved, the config file applied under the explicit properties), loaded
        on its device and warmed up (:func:`obbmeta.infer.build.build`). Runs on any thread; touches no element
        state."""
        from ..infer.build import build

        return build(settings, config)

    def start(self) -> None:
        self.batches = self.frames = self.inferred = 0
        self._pending = None
        self._said.clear()
        with self._prop_lock:
            settings, config = self.settings, self._config
        self._report_config(config)
        if not (self._assigned and self.loaded is not None):
            with self._swap_lock:
                self._generation += 1
            self._bring_in(self._build(settings, config))
        self._start_output(settings)

    def _start_output(self, settings: Any) -> None:
        """The element's CUDA stream (for a model on CUDA) and, with queue-depth > 0, its output thread."""
        device = str(getattr(self.loaded.detector, "device", "cpu"))
        self._stream = None
        if device.startswith("cuda"):
            import torch

            self._stream = torch.cuda.Stream(device=torch.device(device))
        self._tensor_outputs(settings)  # made (and its modules imported) here, not while the first buffer waits
        if settings.queue_depth > 0:
            self.open_output(settings.queue_depth)

    def _report_config(self, config: Any) -> None:
        if config is None or config is self._config_reported:
            return
        self._config_reported = config
        for text in config.warnings:
            self.warn(text)
        for text in config.infos:
            self.debug_category.info(self, "%s", text)

    def _bring_in(self, loaded: Any) -> None:
        """Make ``loaded`` the model in force and say what its build found."""
        old, self.loaded = self.loaded, loaded
        for text in loaded.warnings:
            self.warn(text)
        for text in loaded.infos:
            self.debug_category.info(self, "%s", text)
        if old is not None and old is not loaded and hasattr(old.detector, "release"):
            old.detector.release()  # a model no element holds any more is freed

    def reset(self) -> None:
        self._history.clear()  # a stream ended or was flushed: its objects' ids start again

    def stop(self) -> None:
        with self._swap_lock:
            self._generation += 1  # a replacement still loading is dropped when it finishes
            self._pending = None
        self._stream = None

    def _rebuild(self, reason: str) -> None:
        with self._swap_lock:
            self._generation += 1
            generation = self._generation
        with self._prop_lock:
            settings, config = self.settings, self._config
        self.debug_category.info(self, "%s changed while running: loading a new model in the background", reason)
        threading.Thread(target=self._build_pending, args=(generation, reason, settings, config), daemon=True,
                         name=f"{self.get_name()}-model-load").start()

    def _build_pending(self, generation: int, reason: str, settings: Any, config: Any) -> None:
        try:
            loaded = self._build(settings, config)
        except BaseException as exc:  # noqa: BLE001 - the old model keeps running; say why the new one did not
            self.warn(f"the new model ({reason} changed) could not be loaded, the previous one keeps running: "
                      f"{describe_failure(exc)}")
            self.emit("model-updated", 1, settings.config_file_path or settings.model)
            return
        with self._swap_lock:
            if generation == self._generation and self.running:
                self._pending = loaded

    def _swap_if_ready(self) -> None:
        with self._swap_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        if self._output_queue is not None:
            self._output_queue.drain()  # the old model's batches in flight finish before it is let go
        self._report_config(self._config)
        self._bring_in(pending)
        self.debug_category.info(self, "model swapped at batch %d: %s", self.batches, pending.model)
        s = Gst.Structure.new_empty("obbinfer-model-updated")
        s.set_value("batch", self.batches)
        s.set_value("model", pending.model)
        s.set_value("config-file-path", pending.config_path)
        self.post_message(Gst.Message.new_element(self, s))
        self.emit("model-updated", 0, pending.config_path or pending.model)

    def say_once(self, key: Any, text: str) -> None:
        """A warning posted once per start (a key says what it is about)."""
        if key not in self._said:
            self._said.add(key)
            self.warn(text)

    def _detect_params(self, settings: Any) -> Any:
        """The detector call's parameters for these settings (made once per settings change, not per batch)."""
        cached_for, params = self._params
        if cached_for is not settings:
            from ..infer import DetectParams

            params = DetectParams.from_settings(settings)
            self._params = (settings, params)
        return params

    def _tensor_outputs(self, s: Any) -> Any:
        """nvinfer's tensor outputs for these settings (made once per settings change), or None when nothing
        asks for them (output-tensor-meta, raw-output-file-write, the raw-output callback or signal)."""
        cached_for, outputs = self._outputs
        key = (s, self._pointers.get("raw-output-generated-callback", (0, None))[0],
               self._pointers.get("raw-output-generated-userdata", (0, None))[0])
        if cached_for != key:
            from ..infer.outputs import TensorOutputs

            loaded = self.loaded
            pre = loaded.detector.pre if hasattr(loaded.detector, "pre") else None
            device = getattr(loaded.detector, "device", "cpu")
            outputs = TensorOutputs(
                unique_id=s.unique_id, gpu_id=int(device.split(":")[1]) if device.startswith("cuda:") else 0,
                maintain_aspect_ratio=bool(pre and pre.keep_ratio), symmetric_padding=bool(pre and pre.center),
                attach=s.output_tensor_meta, write_files=s.raw_output_file_write,
                callback=key[1] or None, userdata=key[2] or None)
            self._outputs = (key, outputs)
        if outputs.active or self._signal_pending():
            return outputs
        return None

    def _signal_pending(self) -> bool:
        signal = GObject.signal_lookup("raw-output-generated", self.__gtype__)
        return bool(signal) and GObject.signal_has_handler_pending(self, signal, 0, True)

    # ---------------------------------------------------------------- buffers

    def _select(self, frames: list, s: Any, detector: bool) -> tuple[list, list, list, list]:
        """The objects nvinfer's secondary mode takes: operate-on-gie-id / class ids, input object sizes, and the
        reinfer rules of tracked objects (a classifier re-infers an object whose box grew by 20 % or after
        secondary-reinfer-interval frames, attaching its last result meanwhile; a detector re-infers after the
        interval, or always with the default G_MAXINT). Returns (rows [batch id, cx, cy, w, h, angle], addresses,
        history keys, cached (address, result))."""
        import numpy as np

        from .. import nvds

        gie = s.operate_on_gie_id
        classes = set(s.operate_on_class_ids)
        lo_w, lo_h = s.input_object_min_width, s.input_object_min_height
        hi_w, hi_h = s.input_object_max_width, s.input_object_max_height
        interval = s.secondary_reinfer_interval
        rows, targets, keys, cached = [], [], [], []
        every, offsets = nvds.read_boxes_batch(frames[0].batch, frames) if frames else (None, [0])
        for k, f in enumerate(frames):
            history = self._history.setdefault(f.source_id, {})
            frame_num = f.frame_number
            o = every[offsets[k]:offsets[k + 1]]  # columns: the filters below are array masks, no object per row
            d = o.data
            w_all, h_all = d["rect"][:, 2].astype(np.float64), d["rect"][:, 3].astype(np.float64)  # as Python compares
            take = ~(w_all < lo_w) & ~(h_all < lo_h)  # the comparisons nvinfer's rule is written with (NaN kept)
            if gie >= 0:
                take &= d["component_id"] == gie
            if classes:
                take &= np.isin(o.labels, list(classes))
            if hi_w:
                take &= ~(w_all > hi_w)
            if hi_h:
                take &= ~(h_all > hi_h)
            if detector:
                take &= d["component_id"] != s.unique_id  # a secondary detector's own children are no parents
            index = np.flatnonzero(take)
            batch_id = float(f.batch_id)
            tracked = nvds.is_tracked(o)[index]
            if not tracked.any():  # no tracker upstream: every object is inferred, no history to keep
                area = (d["rect"][index, 2].astype(np.float64) * d["rect"][index, 3].astype(np.float64)).tolist()
                rows += np.c_[np.full(index.size, batch_id), o.xywhr[index].astype(np.float64)].tolist()
                targets += d["address"][index].tolist()
                keys += [(f.source_id, None, frame_num, a, f) for a in area]
            else:
                for w, h, key, address, xywhr, is_tracked in zip(
                        d["rect"][index, 2].tolist(), d["rect"][index, 3].tolist(), d["object_id"][index].tolist(),
                        d["address"][index].tolist(), o.xywhr[index].tolist(), tracked.tolist()):
                    key = key if is_tracked else None
                    past = history.get(key) if key is not None else None
                    if past is not None:
                        past.seen = frame_num
                        due = frame_num - past.frame_num > interval
                        if detector and not (due or interval == S.G_MAXINT):
                            continue  # nvinfer keeps no children of an object that is not due
                        grew = w * h > past.area * (1 + REINFER_AREA_GROWTH)
                        if not detector and not grew and not due:
                            cached.append((address, past.result))
                            continue
                    rows.append([batch_id, *xywhr])
                    targets.append(address)
                    keys.append((f.source_id, key, frame_num, w * h, f))
            for old in [key for key, v in history.items() if frame_num - v.seen > HISTORY_MAX_AGE]:
                del history[old]
        return rows, targets, keys, cached

    def _secondary(self, batch: Any, frames: list, views: list, loaded: Any, t0: float, batch_index: int,
                   timing: bool, s: Any, buf: Gst.Buffer) -> None:
        """process-mode=2: the objects nvinfer's secondary mode would take, cropped upright and classified / read
        (results in NvDsClassifierMeta; tracked objects not due again get their last result, as nvinfer attaches its
        cache), or searched by a secondary detector (children written to the parent's frame with ``parent`` set)."""
        from .. import nvds
        from ..nvds.classifier import Label
        from ..secondary.detect import SecondaryDetector

        sec = loaded.detector
        is_detector = isinstance(sec, SecondaryDetector)
        rows, targets, keys, cached = self._select(frames, s, is_detector)
        t1 = time.perf_counter()
        formats = [v.format for v in views]
        inputs = [v.model_input for v in views]
        tensors = self._tensor_outputs(s)
        raws = [] if tensors is not None else None
        written = None
        tensor_targets = targets
        if loaded.raw:  # network-type=100: each object's tensors, no result
            results = sec.run_raw(inputs, formats, rows) if rows else []
            raws, labels = results, []
        elif is_detector:
            children = sec(inputs, formats, rows, self._detect_params(s), raws) if rows else []
            labels = [None] * len(children)
            if children:
                counts = [len(c) for c in children]
                parents = [t for t, n in zip(targets, counts) for _ in range(n)]
                fs = [k[4] for k in keys]
                written = nvds.attach_obbs_batch(
                    batch, children, frames=fs, class_names=self._label_table(loaded, children, s),
                    component_id=s.unique_id, frame_sizes=[(views[f.batch_id].width, views[f.batch_id].height)
                                                           for f in fs], osd_limit=s.osd_limit or None,
                    parents=parents or None, **self._colours(loaded))
        else:
            parts = [] if raws is not None else None
            results = sec(inputs, formats, rows, outputs=parts) if rows else []
            labels = [None if r is None else [Label(x.class_id, x.prob, x.label, x.label_id) for x in r]
                      for r in results]
            if parts:  # the model saw the objects in its own order (by crop width): their tensors follow it
                raws = [r for _, r in parts]
                tensor_targets = [targets[i] for idx, _ in parts for i in idx]
        t2 = time.perf_counter()
        for (source, key, frame_num, area, _f), result in zip(keys, labels):
            if key is not None:
                self._history[source][key] = _History(frame_num, area, frame_num, result)
        if not is_detector and not loaded.raw:
            objects = targets + [a for a, _ in cached]
            if objects:
                written = nvds.attach_classifications(batch, objects, results=labels + [r for _, r in cached],
                                                      component_id=s.unique_id,
                                                      classifier_type=s.classifier_type or None)
        if raws:
            self._emit_tensors(tensors, batch, tensor_targets, raws, buf, to_objects=True)
        t3 = time.perf_counter()
        if self.timings is not None:
            self.timings.append({"frames": len(frames), "objects": len(rows), "map": t1 - t0, "infer": t2 - t1,
                                 "write": t3 - t2})
        if timing:
            done = (written.written if is_detector else written.classified) if written else 0
            self.debug_category.debug(
                self, "batch %d: %d objects inferred, %d from the cache, %d %s; select %.3f ms, crop + model "
                "%.3f ms, write %.3f ms", batch_index, len(rows), len(cached), done,
                "children written" if is_detector else "classified", (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                (t3 - t2) * 1e3)

    def _tensor_input(self, buf: Gst.Buffer, loaded: Any, s: Any, batch_index: int) -> None:
        """input-tensor-meta: the model on each tensor nvdspreprocess attached for this element's unique-id, its
        boxes mapped back through each row's ROI (``(tensor - offset) / scale + roi``) and written to the ROI's
        frame (child objects of the ROI's object), clipped to the ROI with clip-object-outside-roi, as nvinfer
        does; tensor outputs go to the ROI's frame. interval does not apply, as in nvinfer."""
        from .. import nvds
        from ..frames.letterbox import Letterbox
        from ..nvds.preprocess_meta import read_preprocess_tensors

        batch = nvds.BatchMeta.from_gst_buffer(buf)
        detector = loaded.detector
        params = self._detect_params(s)
        tensors = self._tensor_outputs(s)
        for t in read_preprocess_tensors(batch, s.unique_id):
            if len(t.rois) != (t.shape[0] if t.shape else 0):
                raise ValueError(f"the preprocess tensor {t.name!r} has {t.shape[0] if t.shape else 0} rows but "
                                 f"{len(t.rois)} ROIs")
            x = _tensor_view(t, detector.device)
            step = s.batch_size or x.shape[0]
            for start in range(0, x.shape[0], step):
                rows, rois = x[start:start + step], t.rois[start:start + step]
                frames = [nvds.FrameMeta(r.frame, batch) for r in rois]
                sizes = [(f.size or (1, 1)) for f in frames]
                lbs = [Letterbox(r.scale_x, r.offset_left - r.rect[0] * r.scale_x,
                                 r.offset_top - r.rect[1] * r.scale_y, r.scale_y) for r in rois]
                output = detector.forward(rows)
                dets = [d.to("cpu") for d in detector.decode(output, lbs, sizes, params)]
                regions = None
                if s.clip_object_outside_roi:
                    regions = [_region(r.rect, size) for r, size in zip(rois, sizes)]
                parents = [r.object for r, d in zip(rois, dets) for _ in range(len(d))]
                nvds.attach_obbs_batch(batch, dets, frames=frames, class_names=self._label_table(loaded, dets, s),
                                       component_id=s.unique_id, frame_sizes=sizes, osd_limit=s.osd_limit or None,
                                       parents=parents or None, regions=regions, **self._colours(loaded))
                if tensors is not None:
                    from ..infer import RawOutputs
                    from ..infer.detector import output_layers

                    self._emit_tensors(tensors, batch, frames, [RawOutputs(rows, output_layers(output))], buf)

    def process(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        t_in = time.perf_counter()
        flow = self.downstream_flow()
        if flow != Gst.FlowReturn.OK:
            return flow  # downstream stopped taking buffers (EOS, flushing, not linked, an error)
        c0 = time.thread_time()
        self._cost = None
        with self._on_stream():
            finish = self._run(buf, t_in)
        if self._cost is not None:
            self._cost[0] = time.thread_time() - c0
        return self.hand_over(buf, finish, t_in)

    def _on_stream(self) -> Any:
        """The element's own CUDA stream as the current one (non-blocking: never the legacy default stream, which
        would serialise the model with every other library's GPU work in the process), or nothing on the CPU."""
        if self._stream is None:
            return contextlib.nullcontext()
        import torch

        return torch.cuda.stream(self._stream)

    def _run(self, buf: Gst.Buffer, t0: float) -> Any:
        """The streaming thread's part of a batch: everything, or for a primary detector the frames mapped and the
        model's work queued; then the rest (wait for the device, write the metadata) is returned as a callable
        that the output thread (or, with queue-depth=0, this thread) calls before the buffer is pushed."""
        from .. import nvds

        self._swap_if_ready()
        loaded = self.loaded
        s = self.settings  # one snapshot per batch: a property set meanwhile applies at the next one
        detector = loaded.detector
        video = self.video
        batch_index = self.batches
        self.batches += 1
        # nvinfer's interval is for whole frames only; stabilize-buffer-count lets the first buffers through
        skip = (not loaded.secondary and batch_index % (s.interval + 1) != 0) or \
            batch_index < s.stabilize_buffer_count
        timing = self.debug_category.enabled(Gst.DebugLevel.DEBUG)
        if loaded.settings.input_tensor_meta and not loaded.secondary:
            if batch_index >= s.stabilize_buffer_count:
                self._tensor_input(buf, loaded, s, batch_index)
                self.inferred += 1
            return None
        mapping = contextlib.ExitStack()
        try:
            views = mapping.enter_context(mapped_frames(buf, video, write=False))
            if not views:
                return mapping.close()  # an empty batch (numFilled = 0) passes through
            batch = batch_meta_for(buf, len(views), video.width, video.height, self.frames)
            self.frames += 1
            if skip:
                return mapping.close()
            frames = batch.frames
            chosen = []
            for f in frames:
                if not 0 <= f.batch_id < len(views):
                    raise ValueError(f"frame meta batch_id {f.batch_id} has no surface (the buffer holds "
                                     f"{len(views)})")
                chosen.append(views[f.batch_id])
            if not chosen:
                return mapping.close()
            problem = frames_device_problem(_frame_device(chosen[0]), getattr(detector, "device", "cpu"))
            if problem:
                raise ValueError(problem)
            if loaded.secondary:
                with mapping:
                    self._secondary(batch, frames, views, loaded, t0, batch_index, timing, s, buf)
                self.inferred += 1
                return None
            params = self._detect_params(s)
            if len(chosen) > max(loaded.settings.batch_size, 1) and loaded.settings.batch_size:
                self.say_once("batch-size", f"buffers hold {len(chosen)} frames and batch-size is "
                              f"{loaded.settings.batch_size}: each buffer takes several model calls; set batch-size="
                              f"{len(chosen)} (as nvinfer's batch-size follows the muxer's) or 0 for one call")
            t1 = time.perf_counter()
            formats = [v.format for v in chosen]  # sources of one batch may differ (NV12 / NV12_709)
            inputs = [v.model_input for v in chosen]
            tensors = self._tensor_outputs(s)
            raws = [] if tensors is not None else None
            if loaded.raw:  # network-type=100: the model's tensors are the only output
                with mapping:
                    raws = detector.run_raw(inputs, formats)
                    self._emit_tensors(tensors, batch, frames, raws, buf)
                self.inferred += 1
                return None
            span = None
            if self.debug_category.enabled(Gst.DebugLevel.LOG):  # level 6: the detector's phases, the device synced
                from ..infer import Pending, profile_phases

                with profile_phases() as phases:
                    pending = Pending.done(detector(inputs, formats, on_host=True, params=params, outputs=raws))
                for p in phases:
                    self.debug_category.log(self, "batch %d detector phases: %s", batch_index,
                                            ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in p.items()))
            else:
                # queued on the element's stream; the graph's tensor outputs are overwritten by the next batch, so a
                # batch whose tensors are handed out is finished before this thread takes the next one
                span = self._gpu_span()
                pending = detector.submit(inputs, formats, params=params, outputs=raws)
                if span:
                    span[1].record()
        except BaseException:
            mapping.close()
            raise
        sizes = [(v.width, v.height) for v in chosen]
        cost = self._cost = [0.0, 0.0, 0.0]

        def finish() -> None:
            with mapping, self._on_stream():
                c1 = time.thread_time()
                filtered = detector.filtered
                dets = pending.result()
                c2 = time.thread_time()
                t2 = time.perf_counter()
                self._check_cap(dets, params)
                result = nvds.attach_obbs_batch(batch, dets, frames=frames,
                                                class_names=self._label_table(loaded, dets, s),
                                                component_id=s.unique_id, frame_sizes=sizes,
                                                osd_limit=s.osd_limit or None, **self._colours(loaded))
                if raws:
                    self._emit_tensors(tensors, batch, frames, raws, buf)
                t3 = time.perf_counter()
                cost[1], cost[2] = c2 - c1, time.thread_time() - c2
                self.host_times.append(cost)
                if span:  # the end was recorded right after the copy result() waited for
                    span[1].synchronize()
                    self.gpu_times.append(span[0].elapsed_time(span[1]) * 1e-3)
            self.inferred += 1
            if self.timings is not None:
                self.timings.append({"frames": len(chosen), "map": t1 - t0, "infer": t2 - t1, "write": t3 - t2})
            if timing:
                self.debug_category.debug(
                    self, "batch %d: %d frames, %d objects written (%d outside the frames), %d filtered by class "
                    "attributes; map %.3f ms, model + decode %.3f ms (from submit to result), write %.3f ms",
                    batch_index, len(chosen), result.written, result.filtered, detector.filtered - filtered,
                    (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3)

        if raws is not None or self.timings is not None:
            finish()
            return None
        return finish

    def _gpu_span(self) -> tuple | None:
        """With gpu_timing on a CUDA stream: a (start, end) pair of timing events, start recorded on the element's
        stream now (before the batch's first launch); the caller records end after its last."""
        if not self.gpu_timing or self._stream is None:
            return None
        import torch

        span = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        span[0].record()
        return span

    def _labels_for(self, loaded: Any, s: Any) -> Any:
        """The labels in force: the loaded model's, or those class-names / labelfile-path name now (read once per
        change; the value was checked when it was set)."""
        if (s.class_names, s.labelfile_path) == (loaded.settings.class_names, loaded.settings.labelfile_path):
            return loaded.labels
        key, labels = self._labels
        if key != (s.class_names, s.labelfile_path, id(loaded)):
            from ..infer import Labels, parse_class_names

            names = parse_class_names(s.class_names or s.labelfile_path or None)
            labels = Labels.of(names if names is not None else loaded.detector.labels)
            self._labels = ((s.class_names, s.labelfile_path, id(loaded)), labels)
        return labels

    def _emit_tensors(self, tensors: Any, batch: Any, targets: list, raws: list, buf: Gst.Buffer,
                      to_objects: bool = False) -> None:
        """The batch's tensors as nvinfer hands them out: tensor metas, files, the C callback, and the
        raw-output-generated signal for Python."""
        if tensors is None or not raws:
            return
        pending = self._signal_pending()
        for layers in tensors.handle(batch, targets, raws, to_objects=to_objects, buffer_address=hash(buf),
                                     want_input=pending):
            if pending:
                self.emit("raw-output-generated", buf, layers, layers["batch_size"])

    def _label_table(self, loaded: Any, dets: list, s: Any) -> list[str] | None:
        """The label table covering every class of this batch: a class the labels do not name gets an empty label,
        as nvinfer writes it, with one warning per class."""
        labels = self._labels_for(loaded, s)
        if labels is None or labels.names is None:
            return None
        if all(len(d) == 0 or int(d.labels.max()) < len(labels.names) for d in dets):
            return labels.names
        ids = [int(c) for d in dets for c in d.labels.tolist()]
        before = set(labels.missing)
        table = labels.table(ids)
        for c in sorted(labels.missing - before):
            self.say_once(("label", c), f"class {c} has no label (the labels name {len(labels.names)} classes): its "
                          "objects are written with an empty label, as nvinfer writes them")
        return table

    def _colours(self, loaded: Any) -> dict:
        """nvinfer's border colours by class (class-attrs border-color; red by default) with an nvinfer file."""
        return {} if loaded.palette is None else {"palette": loaded.palette}

    def _check_cap(self, dets: list, params: Any) -> None:
        """A frame whose boxes hit max-det: said at most every CAP_WARNING_INTERVAL_S (footage the model was not
        trained for shows as every frame at the cap)."""
        if params.max_det <= 0 or not any(len(d) >= params.max_det for d in dets):
            return
        now = time.monotonic()
        if now - self._cap_said >= CAP_WARNING_INTERVAL_S:
            self._cap_said = now
            full = sum(len(d) >= params.max_det for d in dets)
            self.warn(f"{full} of {len(dets)} frames hit max-det={params.max_det}: boxes beyond it were not written; "
                      "raise max-det (or conf), or the model is seeing footage it was not trained for")
