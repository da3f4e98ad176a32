"""``obbinfer``: an oriented detector written in PyTorch as a pipeline element, in place of nvinfer.

Per buffer: the frames of the batch (system memory: one; after nvstreammux / nvvideoconvert in ``memory:NVMM``:
every filled surface, as zero-copy CUDA views) go through the model in one call, are decoded and suppressed on the
model's device (:class:`obbmeta.infer.Detector`) and written with ``attach_obbs_batch`` into the frame metas
(``frame_meta->batch_id`` picks the surface), as nvinfer writes detections: tight AABB in ``rect_params``,
``object_id = UNTRACKED_OBJECT_ID``, ``bInferDone``, plus the OBB user meta. With no NvDsBatchMeta on the buffer it
makes one as nvstreammux would. torch is imported when the element starts, not when GStreamer scans the plugin.
"""
from __future__ import annotations

import os
from typing import Any

from ._element import ObbmetaElement, batch_meta_for, one_of
from ._frames import mapped_frames, templates
from ._gi import GObject, Gst

RW = GObject.ParamFlags.READWRITE


def _check_model(value: Any) -> str:
    text = "" if value is None else str(value)
    if text and not os.path.exists(text):
        module, sep, attr = text.partition(":")
        if not (sep and module and attr):
            raise ValueError("expected 'package.module:callable', a TorchScript file or a torch.export file "
                             "(no such file)")
    return text


def _check_input_size(value: Any) -> str:
    from ..infer import parse_input_size

    w, h = parse_input_size(value)
    return f"{w}x{h}"


def _check_class_names(value: Any) -> str:
    from ..infer import parse_class_names

    parse_class_names(value or None)
    return value or ""


def _check_output_format(value: Any) -> str:
    from ..infer import OUTPUT_FORMATS

    return one_of(*OUTPUT_FORMATS)(value)


def _check_device(value: Any) -> str:
    from ..infer import parse_device

    return parse_device(value)


class ObbInfer(ObbmetaElement):
    __gtype_name__ = "GstObbInfer"
    __gstmetadata__ = (
        "obbmeta oriented-box inference", "Filter/Analyzer/Video",
        "Runs a PyTorch oriented-box detector on every frame of the batch and writes NvDsObjectMeta (the tight "
        "axis-aligned box) plus an OBB user meta (angle, polygon): nvinfer for oriented detectors",
        "obbmeta")
    __gsttemplates__ = templates()  # every format obbmeta.pixels reads, system memory and NVMM
    _specs = {
        "model": (str, "model", "'package.module:callable' (called with no arguments; returns a torch module or any "
                  "callable), a TorchScript file, or a torch.export file (.pt2)", "", RW),
        "input-size": (str, "input size", "model input: N (square) or WxH pixels", "640", RW),
        "conf": (float, "confidence", "score threshold", 0.0, 1.0, 0.25, RW),
        "iou": (float, "IoU", "greedy rotated NMS threshold (exact polygon IoU, class-aware)", 0.0, 1.0, 0.45, RW),
        "max-det": (int, "max detections", "boxes kept per frame", 1, 100000, 300, RW),
        "class-names": (str, "class names", "comma-separated names, or a file with one per line (obj_label)", "", RW),
        "unique-id": (int, "unique id", "unique_component_id of the objects (nvinfer's gie-unique-id)", 0,
                      2**31 - 1, 1, RW),
        "device": (str, "device", "where the model runs: auto (the frames' device), cpu, cuda, cuda:N", "auto", RW),
        "interval": (int, "interval", "batches to skip between inferences (as nvinfer's interval)", 0, 2**31 - 1,
                     0, RW),
        "output-format": (str, "output format", "yolo-obb (raw or end-to-end head), mmrotate (results list) or boxes "
                          "(OrientedBoxes per frame)", "yolo-obb", RW),
    }
    __gproperties__ = _specs
    _checks = {"model": _check_model, "input-size": _check_input_size, "class-names": _check_class_names,
               "output-format": _check_output_format, "device": _check_device}

    def __init__(self):
        super().__init__()
        self.detector = None
        self.class_names: list[str] | None = None
        self.batches = 0   # buffers seen (for interval)
        self.frames = 0    # frame_num of the batch metas this element creates
        self.inferred = 0  # batches that went through the model

    def property_changed(self, name: str) -> None:
        if name != "class-names":
            self.detector = None  # rebuilt at the next start (a running element keeps its model)

    def start(self) -> None:
        from ..infer import Detector, parse_class_names

        self.class_names = parse_class_names(self.prop("class-names") or None)
        if self.detector is None:
            if not self.prop("model"):
                raise ValueError("no model: set model='package.module:callable' or a TorchScript / torch.export file "
                                 "(or, from Python, assign element.detector = obbmeta.infer.Detector(...))")
            self.detector = Detector(self.prop("model"), input_size=self.prop("input-size"), conf=self.prop("conf"),
                                     iou=self.prop("iou"), max_det=self.prop("max-det"),
                                     output_format=self.prop("output-format"), device=self.prop("device"))
        self.batches = self.frames = self.inferred = 0

    def process(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        from .. import nvds

        video = self.video
        skip = self.batches % (self.prop("interval") + 1) != 0
        self.batches += 1
        with mapped_frames(buf, video, write=False) as views:
            batch = batch_meta_for(buf, len(views), video.width, video.height, self.frames)
            self.frames += 1
            if skip:
                return Gst.FlowReturn.OK
            frames = batch.frames
            chosen = []
            for f in frames:
                if not 0 <= f.batch_id < len(views):
                    raise ValueError(f"frame meta batch_id {f.batch_id} has no surface (the buffer holds "
                                     f"{len(views)})")
                chosen.append(views[f.batch_id])
            if not chosen:
                return Gst.FlowReturn.OK
            dets = self.detector([v.model_input for v in chosen], chosen[0].format)
            nvds.attach_obbs_batch(batch, dets, frames=frames, class_names=self.class_names,
                                   component_id=self.prop("unique-id"),
                                   frame_sizes=[(v.width, v.height) for v in chosen])
        self.inferred += 1
        return Gst.FlowReturn.OK


GObject.type_register(ObbInfer)
