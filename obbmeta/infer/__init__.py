"""A PyTorch oriented detector on video frames: load the model, prepare the frames as its framework did, one model
call per batch, decode + rotated NMS on the model's device, boxes back in frame pixels.

This is the weight behind the ``obbinfer`` GStreamer element, as plain Python any probe, pyservicemaker operator or
script can use::

    det = Detector("mypkg.models:build_obb_model", input_size=640, conf=0.25, iou=0.45)
    boxes = det([frame_a, frame_b], "RGBA")          # (H, W, 4) uint8 tensors, CPU or CUDA -> list[OrientedBoxes]

The model's input is what its training framework fed it (:mod:`obbmeta.frames.preprocess`; ``preprocess="ultralytics"``
by default: ``(B, 3, H_in, W_in)`` float32 RGB in [0, 1], each frame scaled uniformly to fit and centred on a grey
(114) canvas). Its output, per ``output_format``:

* ``"yolo-obb"``: the YOLO-OBB head, raw ``(B, 4+nc+1, N)`` or end-to-end ``(B, K, 7)`` (told apart by shape);
* ``"mmrotate"``: a list of mmrotate results (1.x ``DetDataSample`` / ``InstanceData``, 0.x per-class arrays);
* ``"boxes"``: a list of :class:`~obbmeta.OrientedBoxes` (or one, for a batch of one).

In every format the boxes are in model-input pixels; the letterbox is undone here.

The modules, one concern each: :mod:`.models` (loading the files users hold, the models shared in a process),
:mod:`.labels` (nvinfer's label files), :mod:`.params` (the immutable decode settings of a call and nvinfer's
per-class rules), :mod:`.runner` (the model on its device, precision and layout: shared by detectors and secondary
models), :mod:`.buffers`, :mod:`.graphs` (CUDA graphs), :mod:`.pending` (calls whose boxes are taken later),
:mod:`.batcher` (frames of several pipelines in one batch), :mod:`.detector`.

A :class:`Detector` may be called from several threads at once (pipelines sharing a model): each call prepares its
input in a buffer no other call holds. The library logs under the ``obbmeta`` logger (model loads, warm-up).
"""
from .detector import (
                       ANTIALIASED,
                       OUTPUT_FORMATS,
                       PAD_VALUE,
                       Detector,
                       RawOutputs,
                       default_threads,
                       letterbox_batch,
                       profile_phases,
)
from .labels import LabelFileError, Labels, parse_class_names, read_label_file
from .models import (
                       ModelInfo,
                       ModelInputError,
                       ModelLoadError,
                       ModelOutputError,
                       file_kind,
                       load_model,
                       model_class_names,
                       model_info,
                       shared_models,
)
from .params import ClassFilter, DetectParams, parse_device, parse_input_size, run_precision
from .pending import Pending
from .runner import PRECISIONS, ModelRunner

__all__ = ["Detector", "Pending", "DetectParams", "ClassFilter", "RawOutputs", "ModelRunner", "ModelInfo", "load_model",
           "model_info", "model_class_names", "file_kind", "shared_models", "ModelLoadError", "ModelInputError",
           "ModelOutputError", "LabelFileError", "Labels", "parse_class_names", "read_label_file", "parse_device",
           "parse_input_size", "run_precision", "default_threads", "profile_phases", "letterbox_batch", "ANTIALIASED",
           "OUTPUT_FORMATS", "PRECISIONS", "PAD_VALUE"]
