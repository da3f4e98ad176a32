"""A PyTorch oriented detector on video frames: prepare the frames as the model's framework did, one model call per
batch, decode + rotated NMS on the model's device, boxes back in frame pixels (the weight of ``obbinfer``)."""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np
import torch

from .. import decode
from .._validators import flag, int_in_range
from ..boxes import OrientedBoxes
from ..frames.letterbox import Letterbox, rows_to_source
from ..frames.pixels import frame_sizes
from ..frames.preprocess import MAX_FRAME_SIDE, Preprocess, preset
from ..geometry import STATUS_OVERFLOW
from .batcher import BATCHERS, BATCHERS_LOCK, Batcher
from .buffers import Canvases
from .graphs import Graphs
from .labels import parse_class_names
from .models import spec_name
from .params import ClassFilter, DetectParams, parse_device, parse_input_size
from .pending import Done, Many, Pending
from .runner import PRECISIONS, ModelRunner

OUTPUT_FORMATS = ("yolo-obb", "mmrotate", "boxes")
PAD_VALUE = 114 / 255
log = logging.getLogger("obbmeta")


def letterbox_batch(images: Sequence[torch.Tensor], input_size: tuple[int, int], out: torch.Tensor | None = None
                    ) -> tuple[torch.Tensor, list[Letterbox]]:
    """(3, H_i, W_i) float images -> one (B, 3, H_in, W_in) batch (uniform scale, centred, grey padding,
    antialiased bilinear when shrinking: the demo models' training input) and each image's :class:`Letterbox`.
    ``out``: a float32 (B, 3, H_in, W_in) tensor on the images' device to fill instead of allocating one."""
    return ANTIALIASED.apply(images, input_size, out=out)


ANTIALIASED = Preprocess(resize="bilinear-antialias", quantize=False)


def default_threads() -> int:
    """torch's intra-op threads for a CPU model inside a pipeline: half the cores (at least one), leaving the rest
    to the decoder, converter and encoder threads of GStreamer (on a 2-core machine one torch thread ran the demo
    ten times faster than torch's default under an encoder's load)."""
    return max(1, (os.cpu_count() or 2) // 2)


@dataclass(frozen=True)
class RawOutputs:
    """The model's tensors of one call, for nvinfer's tensor outputs (``output-tensor-meta``, the raw-output file
    and callback): ``input`` the prepared (B, C, H, W) batch, ``outputs`` (name, (B, ...) tensor) per output layer,
    on the model's device, valid until the next call."""
    input: torch.Tensor
    outputs: tuple[tuple[str, torch.Tensor], ...]


@dataclass
class Detector:
    """A model plus everything around it: frames -> model -> decode/NMS -> :class:`OrientedBoxes` in frame pixels.

    Args:
        model: anything :func:`~obbmeta.infer.load_model` takes (a ``module:callable`` string, a TorchScript /
            export / ONNX file, an Ultralytics checkpoint, a module or callable).
        input_size: model input (width, height), or one int for a square; None: what the model file declares, else
            640.
        conf, iou, max_det: score threshold, rotated-NMS IoU threshold (greedy, exact polygon IoU, class-aware),
            boxes kept per frame (0: no limit); the defaults of every call (:attr:`params`), which a call may
            replace with its own :class:`~obbmeta.infer.DetectParams`.
        output_format: ``"yolo-obb"`` (raw ``(B, 4+nc+1, N)`` or end-to-end ``(B, K, 7)`` head), ``"mmrotate"``
            (a list of results) or ``"boxes"`` (an :class:`OrientedBoxes` per frame), in model-input pixels.
        device: where the model runs: ``"cpu"``, ``"cuda"``, ``"cuda:N"``; ``"auto"``: the frames' device.
        preprocess_mode: the training framework's preparation (:mod:`obbmeta.frames.preprocess`): ``"ultralytics"``,
            ``"mmrotate"``, ``"nvinfer"`` or a :class:`~obbmeta.frames.preprocess.Preprocess`.
        precision: ``"fp32"``, ``"fp16"``, ``"bf16"`` (``torch.autocast``), nvinfer's ``"int8"`` / ``"best"``
            (fp16 on CUDA, fp32 on the CPU).
        class_names: labels by class id; None: the model's own, else none.
        class_filter: nvinfer's per-class parameters (:class:`~obbmeta.infer.ClassFilter`).
        batch_size: frames per model call (0: all frames of a call at once; nvinfer's ``batch-size``).
        threads: torch's intra-op threads for CPU work (process-wide); None: left as they are, except that a CPU
            model leaves cores to the rest of a pipeline (:func:`default_threads`).
        cuda_graph: on CUDA, capture model + decode in a CUDA graph per input shape (batch sizes bucketed to powers
            of two), replayed per batch with one host synchronisation; a model that cannot be captured runs eagerly
            after a warning.
        compile, channels_last: ``torch.compile``; channels-last memory format.
        input_order: ``"nchw"``, or ``"nhwc"`` (the input permuted, nvinfer's network-input-order=1).
        share_model: detectors in one process with the same model file, device and model options use one loaded
            model (:func:`~obbmeta.infer.shared_models`), freed when none holds it.
        max_batch_wait_us: > 0: calls from several threads to detectors of identical settings (separate pipelines
            sharing a model) within this many microseconds run as one batch of at most ``batch_size`` (or 32) frames.
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
    input_order: str = "nchw"
    num_classes: int | None = None
    timings: list | None = field(default=None, repr=False)

    def __post_init__(self):
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
        if self.class_filter is None:
            self.class_filter = ClassFilter()
        DetectParams(self.conf, self.iou, self.max_det, self.class_filter)  # checked here, named by field
        self.pre = preset(self.preprocess_mode)
        self.device = parse_device(self.device)
        if self.device.startswith("cuda") and not torch.cuda.is_available():
            raise ValueError(f"device={self.device!r} but torch sees no CUDA device (torch {torch.__version__}); "
                             "use 'cpu' or 'auto'")
        self.class_names = parse_class_names(self.class_names)
        self.runner = ModelRunner(self.model, precision=self.precision, channels_last=self.channels_last,
                                  compile=self.compile, input_order=self.input_order, share=self.share_model)
        self._canvases = Canvases()
        self._pinned = Canvases(pinned=True)
        self._graphs = Graphs(self)
        self.filtered = 0  # boxes removed by class_filter after decoding, over the detector's life
        self._last_batcher: tuple | None = None  # (params, device, batcher) of the last batched call
        if self.num_classes is not None:  # known in advance (num-detected-classes, the labels): no decode needs to ask
            int_in_range("num_classes", self.num_classes, 1, 1 << 20)
        self._classes_given = self.num_classes
        threads = self.threads if self.threads is not None else (default_threads() if self.device == "cpu" else None)
        if threads is not None:
            torch.set_num_threads(threads)
        if self.cuda_graph and self.device == "cpu":
            log.warning("cuda_graph applies to models on CUDA; this CPU model runs eagerly")
        if self.device != "auto":
            self.model_on(self.device)
        if self.input_size is None:
            info = self.runner.info
            self.input_size = info.input_size if info is not None and info.input_size else (640, 640)
        self.input_size = parse_input_size(self.input_size)

    @property
    def params(self) -> DetectParams:
        """The decode settings of a call that passes none: this detector's ``conf``, ``iou``, ``max_det`` and
        ``class_filter``."""
        return DetectParams(self.conf, self.iou, self.max_det, self.class_filter)

    # ---------------------------------------------------------------- model

    def model_on(self, device: torch.device | str) -> Any:
        """The model loaded for ``device`` (loaded once per device, also when threads ask at once)."""
        return self.runner.model_on(device)

    @property
    def labels(self) -> list[str] | None:
        """The labels objects get: ``class_names`` when given, else the model's own (None when it has none)."""
        return self.class_names if self.class_names is not None else self.runner.class_names

    @property
    def model_info(self) -> Any:
        """What the model file declared about itself (:class:`~obbmeta.infer.models.ModelInfo`), or None."""
        return self.runner.info

    def warm_up(self, frame_size: tuple[int, int] | None = None, batch: int = 1) -> float:
        """Run ``batch`` grey frames of ``frame_size`` (default: the input size) through preparation, model and
        decode once on the model's device, so the first real batch pays no first-call costs (kernel selection,
        allocator growth, lazy initialisation). With ``cuda_graph`` on CUDA, every batch bucket up to ``batch``
        (1, 2, 4, ...) is captured now, so no capture happens while a pipeline runs (a partial batch at the end of
        a stream, a batcher's batch of whatever arrived). Returns the seconds it took."""
        if self.device == "auto":
            raise ValueError("warm_up needs a concrete device (device='auto' follows the frames)")
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValueError(f"batch must be an integer >= 1, got {batch!r}")
        w, h = frame_size or self.input_size
        t0 = time.perf_counter()
        frame = torch.full((h, w, 3), 114, dtype=torch.uint8, device=self.device)
        sizes = [batch]
        if self.cuda_graph and self.device.startswith("cuda"):
            sizes = sorted({1 << k for k in range((batch - 1).bit_length() + 1) if 1 << k <= batch} | {batch})
        for n in sizes:
            self([frame] * n, "RGB", on_host=True)
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(self.device)
        seconds = time.perf_counter() - t0
        log.info("model %r warmed up on %s (%d x %dx%d) in %.3f s", spec_name(self.model), self.device, batch, w, h,
                 seconds)
        return seconds

    def release(self) -> None:
        """Let go of the model (a model no detector holds is freed) and of the buffers and graphs."""
        with BATCHERS_LOCK:
            batchers = list(BATCHERS.values())
        for b in batchers:  # a batcher whose batches ran on this detector runs them on the next caller's
            b.forget(self)
        self._graphs = Graphs(self)
        self._canvases = Canvases()
        self._pinned = Canvases(pinned=True)
        self.runner.release()

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
        """Frames (tensors or plane tuples as :func:`obbmeta.frames.pixels.to_rgb` takes them) -> a new model input
        batch on the model's device and the letterbox of each frame."""
        device = self._run_device(frames)
        with torch.no_grad():
            formats = _formats(pixel_format, len(frames))
            return self.pre.apply_frames(self._images(frames, formats, device), formats, self.input_size)

    # ---------------------------------------------------------------- the call

    @torch.inference_mode()
    def __call__(self, frames: Sequence[Any], pixel_format: Any = "RGB", *, on_host: bool = False,
                 params: DetectParams | None = None, outputs: list | None = None) -> list[OrientedBoxes]:
        """Detections of each frame, in that frame's pixels (``pixel_format``: one for all frames or one per frame),
        on the model's device, or with ``on_host`` on the CPU (what a metadata writer needs: on CUDA the raw
        YOLO-OBB path then decodes into fixed-size tables and copies them to pinned memory with one
        synchronisation for the batch). ``params``: this call's decode settings (default: :attr:`params`).
        ``outputs``: a list that gets one :class:`RawOutputs` per model call (the tensors behind the boxes)."""
        if not frames:
            return []
        p = params if params is not None else self.params
        formats = _formats(pixel_format, len(frames))
        batcher = self._batcher(frames, p, outputs)
        if batcher is not None:
            dets = self._gathered(batcher, frames, formats, p).result()
            return dets if on_host else [d.to(batcher.device) for d in dets]
        step = self.batch_size or len(frames)
        out: list[OrientedBoxes] = []
        for start in range(0, len(frames), step):
            out += self._call(frames[start:start + step], formats[start:start + step], on_host, p, outputs)
        return out

    @torch.inference_mode()
    def submit(self, frames: Sequence[Any], pixel_format: Any = "RGB", *, params: DetectParams | None = None,
               outputs: list | None = None) -> Pending:
        """Start a call whose boxes come later (:class:`Pending`; ``result()`` gives what ``__call__(...,
        on_host=True)`` gives): on CUDA the frames are prepared, the model and the fixed-size decode run and the
        results' copy to the host is queued, all on the current stream (with ``max_batch_wait_us``, in a batch with
        other callers' frames on the batcher's stream), and nothing waits for the device, so the caller does other
        work (the metadata of the previous batch) while the GPU runs. Elsewhere the call runs now. The frames must
        stay valid until the result is taken."""
        if not frames:
            return Done([])
        p = params if params is not None else self.params
        formats = _formats(pixel_format, len(frames))
        batcher = self._batcher(frames, p, outputs)
        if batcher is not None:
            return self._gathered(batcher, frames, formats, p)
        return self._submit(frames, formats, p, outputs)

    def _batcher(self, frames: Sequence[Any], p: DetectParams, outputs: list | None) -> Batcher | None:
        """The batcher this call joins (``max_batch_wait_us`` with a shared model file; not when the model's tensors
        are handed out), or None."""
        if not (self.max_batch_wait_us > 0 and self.share_model and isinstance(self.model, (str, os.PathLike))
                and outputs is None):
            return None
        device = self._run_device(frames)
        last = self._last_batcher  # the key (a repr of the settings) made once per parameters object and device
        if last is not None and last[0] is p and last[1] == device:
            return last[2]
        with BATCHERS_LOCK:  # per device the frames are on: device=auto pipelines on two GPUs batch apart
            key = self._batch_key(p, device)
            batcher = BATCHERS.get(key)
            if batcher is None:
                batcher = BATCHERS[key] = Batcher(device)
        self._last_batcher = (p, device, batcher)
        return batcher

    def _gathered(self, batcher: Batcher, frames: Sequence[Any], formats: list[str], p: DetectParams) -> Pending:
        return batcher.submit(self, frames, formats, self.max_batch_wait_us * 1e-6, self.batch_size or 32, p)

    def _submit(self, frames: Sequence[Any], formats: list[str], p: DetectParams, outputs: list | None) -> Pending:
        """:meth:`submit` of this call alone, in ``batch_size`` chunks."""
        step = self.batch_size or len(frames)
        parts: list[Pending] = []
        for start in range(0, len(frames), step):
            part, fmts = frames[start:start + step], formats[start:start + step]
            device = self._run_device(part)
            if device.type == "cuda" and self.output_format == "yolo-obb":
                images = self._images(part, fmts, device)
                sizes = frame_sizes(images, fmts)
                parts.append(self._submit_padded(images, fmts, sizes, device, p, outputs))
            else:
                parts.append(Done(self._call(part, fmts, True, p, outputs)))
        return parts[0] if len(parts) == 1 else Many(parts)

    def _batch_key(self, p: DetectParams, device: torch.device) -> tuple:
        """Everything that decides a call's result but the frames, and the device the call runs on (the frames'
        with ``device="auto"``): calls with equal keys may share a batch."""
        return (os.fspath(self.model), str(device), self.input_size, self.pre, self.precision, self.output_format,
                self.cuda_graph, self.compile, self.channels_last, self.input_order, p.graph_key(), repr(p))

    def _call(self, frames: Sequence[Any], pixel_format: Any, on_host: bool, p: DetectParams,
              outputs: list | None = None) -> list[OrientedBoxes]:
        device = self._run_device(frames)
        formats = _formats(pixel_format, len(frames))
        images = self._images(frames, formats, device)
        sizes = frame_sizes(images, formats)
        padded = self.output_format == "yolo-obb"  # the fixed-size decode serves per-class NMS thresholds too
        if device.type == "cuda" and padded and (on_host or self.cuda_graph):
            dets = self._call_padded(images, formats, sizes, device, p, outputs)
            return dets if on_host else [d.to(device) for d in dets]
        shape = self.pre.input_shape(sizes, self.input_size)
        canvas = self._canvases.take(shape, device)
        try:
            x, letterboxes = self.pre.apply_frames(images, formats, self.input_size, out=canvas)
            output = self.forward(x)  # its device checked by the runner
            if outputs is not None:
                outputs.append(RawOutputs(x, output_layers(output)))
            dets = self.decode(output, letterboxes, sizes, p, input_size=tuple(x.shape[2:]))
        finally:
            # Work queued on this thread's stream reads the canvas; the next taker queues after it on the same
            # stream, or (another thread's stream) the decode's read of the counts has already synchronised.
            self._canvases.give(canvas)
        return [d.to("cpu") for d in dets] if on_host else dets

    def _call_padded(self, images: list, formats: list, sizes: list, device: torch.device, p: DetectParams,
                     outputs: list | None) -> list[OrientedBoxes]:
        """CUDA, raw or end-to-end YOLO-OBB head: :meth:`_submit_padded`, then its result."""
        return self._submit_padded(images, formats, sizes, device, p, outputs).result()

    def _submit_padded(self, images: list, formats: list, sizes: list, device: torch.device, p: DetectParams,
                       outputs: list | None) -> "_PaddedPending":
        """Prepare, model, fixed-size decode (in a CUDA graph when ``cuda_graph``) and the copy of the tables to
        pinned memory, queued on the current stream with an event after them; nothing waits for the device. The
        frames and tensors must stay valid until the result is taken (the element holds the buffer). With
        :attr:`timings` a list, each call appends its phases in seconds (synchronising between them)."""
        shape = self.pre.input_shape(sizes, self.input_size)
        runner = self._graphs.runner(shape, device, p) if self.cuda_graph else None
        sink = self.timings if self.timings is not None else getattr(_PROFILE, "sink", None)
        clock = _Clock(device) if sink is not None else None
        canvas = None
        if runner is not None:
            with runner.lock:  # the graph's input and outputs are its own: one batch in them at a time, in stream order
                x, letterboxes = self.pre.apply_frames(images, formats, self.input_size, out=runner.input[:shape[0]])
                clock and clock.tick("prepare")
                tables = runner.replay()
                clock and clock.tick("model_decode")
                if outputs is not None:
                    outputs.append(RawOutputs(x, tuple((n, t[:shape[0]]) for n, t in runner.layers)))
                copies = self._copy_to_host(tables, shape[0])
        else:
            canvas = self._canvases.take(shape, device)
            x, letterboxes = self.pre.apply_frames(images, formats, self.input_size, out=canvas)
            clock and clock.tick("prepare")
            layers: list = []
            tables = self._forward_padded(x, p, layers)
            clock and clock.tick("model_decode")
            if outputs is not None:
                outputs.append(RawOutputs(x, tuple(layers)))
            copies = self._copy_to_host(tables, shape[0])
        def rerun() -> list[OrientedBoxes]:  # the sized decode, sized exactly (the pool was outgrown)
            x, lbs = self.pre.apply_frames(images, formats, self.input_size)
            return [b.to("cpu") for b in self._decode_yolo(self.forward(x), lbs, p, tuple(x.shape[2:]))]

        pending = _PaddedPending(self, copies, letterboxes, sizes, p, rerun, canvas)
        if clock:
            pending.wait()
            clock.tick("copy")
            sink.append(clock.phases)
        return pending

    def submit_prepared(self, x: torch.Tensor, params: DetectParams | None = None,
                        outputs: list | None = None) -> "Pending":
        """The model and decode on an input batch ``x`` prepared already (a secondary model's crops, (K, C, H, W)
        in the model's input pixels): a :class:`Pending` whose result is one :class:`OrientedBoxes` per row, in
        input pixels, on the host (post-decode class rules against the input size). On CUDA with the fixed-size
        decode (yolo-obb, per-class NMS thresholds included) it is queued, in a CUDA graph with ``cuda_graph`` (not
        when ``outputs`` takes the model's tensors), and nothing waits for the device; elsewhere it runs now (the
        decode :meth:`decode` runs). ``x`` must stay unchanged until the result is taken."""
        p = params if params is not None else self.params
        k = int(x.shape[0])
        ih, iw = int(x.shape[2]), int(x.shape[3])
        letterboxes, sizes = [Letterbox(1.0)] * k, [(iw, ih)] * k
        if k == 0:
            return Done([])
        if not (x.device.type == "cuda" and self.output_format == "yolo-obb"):
            output = self.forward(x)
            if outputs is not None:
                outputs.append(RawOutputs(x, output_layers(output)))
            return Done([d.to("cpu") for d in self.decode(output, letterboxes, sizes, p, input_size=(ih, iw))])
        # a graph's output layers are its own buffers, overwritten by the next replay: calls whose tensors are
        # handed out (``outputs``) run eagerly, so each keeps its own
        runner = self._graphs.runner(tuple(x.shape), x.device, p) if self.cuda_graph and outputs is None else None
        if runner is not None:
            with runner.lock:
                runner.input[:k].copy_(x)
                copies = self._copy_to_host(runner.replay(), k)
        else:
            layers: list = []
            tables = self._forward_padded(x, p, layers)
            if outputs is not None:
                outputs.append(RawOutputs(x, tuple(layers)))
            copies = self._copy_to_host(tables, k)

        def rerun() -> list[OrientedBoxes]:
            return [b.to("cpu") for b in self._decode_yolo(self.forward(x), letterboxes, p, (ih, iw))]

        return _PaddedPending(self, copies, letterboxes, sizes, p, rerun, None)

    def _forward_padded(self, x: torch.Tensor, p: DetectParams, layers: list | None = None) -> tuple:
        """Model and fixed-size decode in model-input pixels, no host synchronisation (what a graph captures).
        ``layers`` gets the model's output layers."""
        output = self.forward(x)
        if layers is not None:
            layers.extend(output_layers(output))
        if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
            output = output[0]
        if not isinstance(output, torch.Tensor):
            raise TypeError(f"output-format yolo-obb expects a tensor (B, 4+nc+1, N) or (B, K, 7); the model "
                            f"returned {type(output).__name__}")
        output, iou = self._head(output, tuple(x.shape[2:]), p)
        try:
            padded = decode.yolo_obb_padded(output, conf=p.conf, iou=iou, max_det=p.limit(_candidates(output)),
                                            class_iou=p.class_filter.iou or None,
                                            class_conf=_class_conf(p.class_filter))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"output-format yolo-obb: the model's output cannot be decoded: {exc}") from None
        # the counts and the status in one int64 table (B + 1,), made here so that a graph holds it: one copy back
        return padded.boxes, padded.scores, padded.labels, padded.counts_and_status()

    def _copy_to_host(self, tables: tuple, n: int) -> tuple:
        """The first ``n`` images' tables (boxes, scores, labels) and the whole counts + status table copied to
        pinned host buffers on the current stream, and an event recorded after the copies: (boxes, scores, labels,
        counts + status, event)."""
        boxes, scores, labels, flat = tables
        out = []
        for t in (boxes[:n], scores[:n], labels[:n], flat):
            buf = self._pinned.take(tuple(t.shape), t.device, dtype=t.dtype)
            buf.copy_(t, non_blocking=True)
            out.append(buf)
        event = torch.cuda.Event(blocking=True)  # the waiting thread sleeps instead of spinning a core
        event.record(torch.cuda.current_stream(boxes.device))
        return (*out, event)

    def forward(self, x: torch.Tensor) -> Any:
        """The model on a prepared input batch, in the configured precision and layout."""
        return self.runner(x)

    def decode(self, output: Any, letterboxes: Sequence[Letterbox],
               frame_sizes: Sequence[tuple[int, int]] | None = None, params: DetectParams | None = None, *,
               input_size: tuple[int, int] | None = None) -> list[OrientedBoxes]:
        """The model's output for a batch -> one :class:`OrientedBoxes` per frame, in frame pixels, after the class
        filter (its region offsets need ``frame_sizes``, (w, h) per frame; the boxes it removed are counted in
        :attr:`filtered`). ``input_size``: the model input's (height, width), which tells a per-anchor (B, N, 7)
        head (DeepStream-Yolo's export) from an end-to-end one."""
        p = params if params is not None else self.params
        n = len(letterboxes)
        if self.output_format == "yolo-obb":
            dets = self._decode_yolo(output, letterboxes, p, input_size)
        elif self.output_format == "mmrotate":
            dets = decode.mmrotate(output, score_thr=p.conf, iou=p.iou, max_det=p.max_det or None)
            dets = [d.rescale(lb) for d, lb in zip(self._check_count(dets, n), letterboxes)]
        else:
            dets = [output] if isinstance(output, OrientedBoxes) else list(output)
            for i, d in enumerate(dets):
                if not isinstance(d, OrientedBoxes):
                    raise TypeError(f"output-format boxes expects OrientedBoxes per frame; item {i} is "
                                    f"{type(d).__name__}")
            dets = [_filter(d, p.conf, p.max_det).rescale(lb) for d, lb in zip(self._check_count(dets, n), letterboxes)]
        if p.class_filter.filters_after_decode and (frame_sizes is None or len(frame_sizes) != n):
            raise ValueError("decode with a class filter needs frame_sizes, one (w, h) per frame")
        return self._filter_after_decode(dets, frame_sizes, p)

    def _filter_after_decode(self, dets: list[OrientedBoxes], frame_sizes, p: DetectParams) -> list[OrientedBoxes]:
        """The class filter's post-decode rules (sizes, ROI) per frame; the boxes they remove counted in
        ``filtered``."""
        if not p.class_filter.filters_after_decode:
            return dets
        kept = []
        for d, (_, h) in zip(dets, frame_sizes):
            d, gone = p.class_filter.apply(d, h)
            self.filtered += gone
            kept.append(d)
        return kept

    def _decode_yolo(self, output: Any, letterboxes: Sequence[Letterbox], p: DetectParams,
                     input_size: tuple[int, int] | None = None) -> list[OrientedBoxes]:
        if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
            output = output[0]  # Ultralytics-style (predictions, extras)
        if not isinstance(output, torch.Tensor):
            raise TypeError(f"output-format yolo-obb expects a tensor (B, 4+nc+1, N) or (B, K, 7); the model "
                            f"returned {type(output).__name__}")
        n = len(letterboxes)
        output, anchor_iou = self._head(output, input_size, p)
        if anchor_iou != p.iou:
            p = replace(p, iou=anchor_iou)
        cf = p.class_filter
        max_det = p.limit(_candidates(output))
        # One letterbox for the batch (frames of one size, a uniform scale): undone inside the decode.
        same = all(lb == letterboxes[0] for lb in letterboxes) and letterboxes[0].is_uniform
        try:  # per-class thresholds (pre-cluster- / nms-iou-threshold of class-attrs-N) in the same decode
            dets = decode.yolo_obb(output, conf=p.conf, iou=p.iou, max_det=max_det, class_iou=cf.iou or None,
                                   class_conf=_class_conf(cf), letterbox=letterboxes[0] if same else None)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"output-format yolo-obb: the model's output cannot be decoded: {exc}") from None
        dets = self._check_count(dets, n)
        return dets if same else [d.rescale(lb) for d, lb in zip(dets, letterboxes)]

    def _head(self, output: torch.Tensor, input_size: tuple[int, int] | None, p: DetectParams
              ) -> tuple[torch.Tensor, float]:
        """The head as the decodes take it, and the NMS IoU for it: DeepStream-Yolo's per-anchor export (B, N, 7)
        = [cx, cy, w, h, score, class, angle] for every anchor, suppressed by its C++ parser, becomes the raw head
        it was made from (one-hot scores) and gets rotated NMS; a raw head tells the class count."""
        if input_size is not None and per_anchor_rows(output, input_size):
            nc = self._classes_given
            if nc is None:  # one host read, eager paths only (a CUDA graph asks num_classes up front)
                nc = int(output[..., 5].max().round().clamp(min=0).item()) + 1
            self.num_classes = nc
            return rows_to_raw(output, nc), (p.anchor_iou if p.anchor_iou is not None else p.iou)
        if output.dim() == 3 and not (output.shape[-1] == 7 and output.shape[1] != 7) and output.shape[1] > 5:
            self.num_classes = int(output.shape[1]) - 5
        return output, p.iou

    @torch.inference_mode()
    def run_raw(self, frames: Sequence[Any], pixel_format: Any = "RGB") -> list[RawOutputs]:
        """The model's tensors of each model call (``batch_size`` frames each), without decoding: nvinfer's
        network-type=100, whose output only reaches tensor metadata."""
        formats = _formats(pixel_format, len(frames))
        step = self.batch_size or len(frames)
        out = []
        for start in range(0, len(frames), step):
            part, fmts = frames[start:start + step], formats[start:start + step]
            x, _ = self.pre.apply_frames(self._images(part, fmts, self._run_device(part)), fmts, self.input_size)
            out.append(RawOutputs(x, output_layers(self.forward(x))))
        return out

    @staticmethod
    def _check_count(dets: list, n: int) -> list:
        if len(dets) != n:
            raise ValueError(f"the model returned detections for {len(dets)} frames, but {n} frames went in")
        return dets

    def with_params(self, params: DetectParams) -> "Detector":
        """A detector of these decode settings sharing this one's model (a new one; this one is unchanged)."""
        return replace(self, conf=params.conf, iou=params.iou, max_det=params.max_det,
                       class_filter=params.class_filter)


STRIDES = ((8, 16, 32), (8, 16, 32, 64))  # YOLO's detection strides (P3-P5, and P6 models)


def per_anchor_rows(output: torch.Tensor, input_size: tuple[int, int]) -> bool:
    """Whether a (B, K, 7) head has one row per anchor of an (H, W) input (DeepStream-Yolo's ONNX export, before
    any suppression) rather than the K best rows of an end-to-end head."""
    if output.dim() != 3 or output.shape[-1] != 7 or output.shape[1] == 7:
        return False
    h, w = input_size
    k = int(output.shape[1])
    return any(k == sum(-(-h // s) * -(-w // s) for s in strides) for strides in STRIDES)


def rows_to_raw(rows: torch.Tensor, nc: int) -> torch.Tensor:
    """(B, N, 7) [cx, cy, w, h, score, class, angle] rows -> the raw head (B, 4 + nc + 1, N) with each row's score
    at its class (no host synchronisation)."""
    b, n, _ = rows.shape
    cls = rows[..., 5].round().clamp(0, nc - 1).long()
    scores = torch.zeros(b, n, nc, dtype=rows.dtype, device=rows.device)
    scores.scatter_(2, cls[..., None], rows[..., 4:5])
    return torch.cat((rows[..., :4], scores, rows[..., 6:7]), dim=2).transpose(1, 2)


class _PaddedPending(Pending):
    """The fixed-size tables of one CUDA call on their way to pinned memory."""

    def __init__(self, detector: "Detector", copies: tuple, letterboxes: list, sizes: list, params: DetectParams,
                 rerun: Any, canvas: Any):
        self.detector, self.copies, self.letterboxes, self.sizes = detector, copies, letterboxes, sizes
        self.params, self.rerun, self.canvas = params, rerun, canvas  # rerun: the sized decode, when overflowed
        self.dets: list[OrientedBoxes] | None = None

    def wait(self) -> None:
        self.copies[-1].synchronize()  # torch releases the GIL while it waits

    def result(self) -> list[OrientedBoxes]:
        if self.dets is not None:
            return self.dets
        d = self.detector
        self.wait()
        boxes, scores, labels, flat, _ = self.copies
        try:
            values = flat.tolist()  # every image's count of the call (a graph's bucket may hold more), the status
            counts, status = values[:len(self.sizes)], values[-1]
            if not status:  # every image's kept rows, read out of the pinned tables (handed back below) at once
                boxes, scores, labels = _kept_rows((boxes, scores, labels), counts)
        finally:
            for buf in self.copies[:4]:
                d._pinned.give(buf)
            if self.canvas is not None:
                d._canvases.give(self.canvas)
                self.canvas = None
        p = self.params
        if status & STATUS_OVERFLOW:  # the pool was outgrown: the sized decode sizes it exactly (rare; never silent)
            self.dets = d._filter_after_decode(self.rerun(), self.sizes, p)
            self.rerun = None
            return self.dets
        if status:
            from ..decode.yolo_padded import padded_status_error

            raise padded_status_error(status)
        # every frame's rows mapped back to its source frame at once (rows_to_source), then one view per frame
        x = rows_to_source(boxes, self.letterboxes, counts)
        dets = [OrientedBoxes._checked_elsewhere(*t) for t in zip(x.split(counts), scores.split(counts),
                                                                   labels.split(counts))]
        self.dets = d._filter_after_decode(dets, self.sizes, p)
        self.rerun = None
        return self.dets


def _kept_rows(tables: tuple, counts: list[int]) -> tuple:
    """The first ``counts[i]`` rows of image ``i`` of each (B, K, ...) table, concatenated in image order: one
    index_select a table with a flat index made on the host (a boolean mask's indexing cost about 4x as much on a
    CPU, and needed a copy of each table first)."""
    k = int(tables[0].shape[1])
    n = np.asarray(counts, dtype=np.int64)
    starts = np.cumsum(n) - n  # where each image's rows begin in the result
    flat = torch.from_numpy(np.arange(int(n.sum()), dtype=np.int64) + np.repeat(np.arange(len(n)) * k - starts, n))
    return tuple(t.reshape(-1, *t.shape[2:]).index_select(0, flat) for t in tables)


def _candidates(output: torch.Tensor) -> int:
    """The rows a YOLO-OBB head can give per image: its anchors (raw) or its rows (end-to-end)."""
    if output.dim() == 3 and output.shape[-1] == 7 and output.shape[1] != 7:
        return int(output.shape[1])
    return int(output.shape[-1])


def output_layers(output: Any) -> tuple[tuple[str, torch.Tensor], ...]:
    """The model's output tensors as named layers (``output0``, ``output1``, ...: the names Ultralytics' exports
    give); a non-tensor output (mmrotate results, OrientedBoxes) has none."""
    if isinstance(output, torch.Tensor):
        return (("output0", output),)
    if isinstance(output, (tuple, list)):
        return tuple((f"output{i}", t) for i, t in enumerate(output) if isinstance(t, torch.Tensor))
    if isinstance(output, dict):
        return tuple((str(k), v) for k, v in output.items() if isinstance(v, torch.Tensor))
    return ()


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


def _class_conf(cf) -> dict[int, float] | None:
    """nvinfer's per-class pre-cluster thresholds (class-attrs-N, N >= 0) as the decodes take them, or None."""
    return {int(c): float(t) for c, t in cf.pre_threshold.items() if c >= 0} or None

def _filter(boxes: OrientedBoxes, conf: float, max_det: int) -> OrientedBoxes:
    boxes = boxes[boxes.scores > conf]
    order = torch.argsort(boxes.scores, descending=True, stable=True)
    return boxes[order[:max_det] if max_det > 0 else order]


__all__ = ["Detector", "RawOutputs", "OUTPUT_FORMATS", "PAD_VALUE", "default_threads", "profile_phases",
           "letterbox_batch", "ANTIALIASED"]
