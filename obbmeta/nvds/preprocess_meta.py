"""The batch tensor nvdspreprocess attaches, as nvinfer's ``input-tensor-meta`` consumes it.

nvdspreprocess scales and normalises ROIs (whole frames, regions or objects) into one tensor and attaches a batch
user meta of type ``NVDS_PREPROCESS_BATCH_META`` whose ``GstNvDsPreProcessBatchMeta`` names the elements it is for
(``target_unique_ids``), the tensor (``NvDsPreProcessTensorMeta``: device buffer, shape, data type, name) and one
``NvDsRoiMeta`` per tensor row (the ROI rectangle, its frame and object, and how the ROI was scaled into the
tensor). These are C++ structs (``std::vector``, ``std::string``): their layouts here are those of NVIDIA's public
nvdspreprocess_meta.h / nvds_roi_meta.h with libstdc++'s containers on LP64 (a vector is three pointers, a string
a pointer, a length and a 16-byte buffer).
"""
from __future__ import annotations

import ctypes
import os
from ctypes import POINTER, Structure, c_char, c_double, c_int, c_size_t, c_uint, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any

from . import layouts
from ._inputs import batch_of

# NvDsMetaType of the batch meta: 28 in DeepStream 7.x - 9.1 (it moved with the enum: 19 in 6.2); override with
# OBBMETA_PREPROCESS_META_TYPE for another build.
NVDS_PREPROCESS_BATCH_META = 28
MAX_POLYGON_POINTS = 8  # DS_MAX_POLYGON_POINTS
# NvDsDataType of the tensor: FP32 0, UINT8 1, INT8 2, UINT32 3, INT32 4, INT64 5, UINT64 6, FP16 7
DATA_TYPES = {0: "float32", 1: "uint8", 2: "int8", 3: "uint32", 4: "int32", 5: "int64", 6: "uint64", 7: "float16"}


def preprocess_meta_type() -> int:
    text = os.environ.get("OBBMETA_PREPROCESS_META_TYPE", "")
    if not text:
        return NVDS_PREPROCESS_BATCH_META
    if not text.isdigit():
        raise ValueError(f"OBBMETA_PREPROCESS_META_TYPE must be an NvDsMetaType number, got {text!r}")
    return int(text)


class StdVector(Structure):
    """libstdc++'s ``std::vector<T>``: begin, end, end of storage."""
    _fields_ = [("begin", c_void_p), ("end", c_void_p), ("capacity_end", c_void_p)]

    def items(self, ctype: Any) -> list:
        if not self.begin or not self.end:
            return []
        n = (self.end - self.begin) // ctypes.sizeof(ctype)
        return list((ctype * n).from_address(self.begin))


class StdString(Structure):
    """libstdc++'s ``std::string`` (the C++11 ABI): data pointer, length, local buffer / capacity."""
    _fields_ = [("data", c_void_p), ("length", c_size_t), ("local", c_char * 16)]

    def text(self) -> str:
        return ctypes.string_at(self.data, self.length).decode("utf-8", "replace") if self.data else ""


class PreProcessTensorMeta(Structure):
    """``NvDsPreProcessTensorMeta``."""
    _fields_ = [("raw_tensor_buffer", c_void_p), ("buffer_size", c_uint64), ("tensor_shape", StdVector),
                ("data_type", c_int), ("tensor_name", StdString), ("gpu_id", c_uint), ("private_data", c_void_p),
                ("meta_id", c_uint), ("maintain_aspect_ratio", c_int)]


class PreProcessBatchMeta(Structure):
    """``GstNvDsPreProcessBatchMeta``."""
    _fields_ = [("target_unique_ids", StdVector), ("tensor_meta", POINTER(PreProcessTensorMeta)),
                ("roi_vector", StdVector), ("private_data", c_void_p)]


def roi_meta_type(rect: type) -> type:
    """``NvDsRoiMeta`` over the layout's ``NvOSD_RectParams`` (DeepStream 9 appended rotation_angle to it)."""
    return type(f"RoiMeta_{rect.__name__}", (Structure,), {"_fields_": [
        ("roi", rect), ("roi_polygon", (c_uint * 2) * MAX_POLYGON_POINTS), ("converted_buffer", c_void_p),
        ("frame_meta", c_void_p), ("scale_ratio_x", c_double), ("scale_ratio_y", c_double),
        ("offset_left", c_double), ("offset_top", c_double), ("classifier_meta_list", c_void_p),
        ("roi_user_meta_list", c_void_p), ("object_meta", c_void_p)]})


@dataclass(frozen=True)
class Roi:
    """One tensor row: the ROI (left, top, width, height) in its frame, the frame and object metas, and how it was
    put into the tensor: ``tensor = (roi - roi.left_top) * scale + offset``."""
    rect: tuple[float, float, float, float]
    frame: int
    object: int
    scale_x: float
    scale_y: float
    offset_left: float
    offset_top: float


@dataclass(frozen=True)
class PreprocessTensor:
    """A ``GstNvDsPreProcessBatchMeta``: the tensor's address, shape, data type, name, GPU, meta id and letterbox
    flag, the element ids it is for, and its rows."""
    address: int
    shape: tuple[int, ...]
    dtype: str
    name: str
    gpu_id: int
    meta_id: int
    maintain_aspect_ratio: bool
    target_unique_ids: tuple[int, ...]
    rois: tuple[Roi, ...]


def read_preprocess_tensors(batch: Any, unique_id: int | None = None) -> list[PreprocessTensor]:
    """The preprocess tensors on ``batch``'s ``batch_user_meta_list`` (for ``unique_id`` only, as nvinfer takes
    only those whose target_unique_ids holds its own), in list order."""
    b = batch_of(batch)
    kind = preprocess_meta_type()
    roi_type = roi_meta_type(b.layout.rect_params)
    head = layouts.BatchMetaHead.from_address(b.address)
    out = []
    node = head.batch_user_meta_list
    while node:
        um = layouts.UserMeta.from_address(node.contents.data)
        node = node.contents.next
        if um.base_meta.meta_type != kind or not um.user_meta_data:
            continue
        meta = PreProcessBatchMeta.from_address(um.user_meta_data)
        targets = tuple(int(v) for v in meta.target_unique_ids.items(c_uint64))
        if unique_id is not None and unique_id not in targets:
            continue
        if not meta.tensor_meta:
            continue
        t = meta.tensor_meta.contents
        rois = []
        for r in meta.roi_vector.items(roi_type):
            rect = r.roi
            rois.append(Roi((float(rect.left), float(rect.top), float(rect.width), float(rect.height)),
                            int(r.frame_meta or 0), int(r.object_meta or 0), float(r.scale_ratio_x),
                            float(r.scale_ratio_y), float(r.offset_left), float(r.offset_top)))
        dtype = DATA_TYPES.get(int(t.data_type))
        if dtype is None:
            raise ValueError(f"the preprocess tensor {t.tensor_name.text()!r} has NvDsDataType {t.data_type}, which "
                             "is not one of FP32, UINT8, INT8, UINT32, INT32, INT64, UINT64, FP16")
        out.append(PreprocessTensor(int(t.raw_tensor_buffer or 0), tuple(int(v) for v in t.tensor_shape.items(c_int)),
                                    dtype, t.tensor_name.text(), int(t.gpu_id), int(t.meta_id),
                                    bool(t.maintain_aspect_ratio), targets, tuple(rois)))
    return out


__all__ = ["read_preprocess_tensors", "PreprocessTensor", "Roi", "PreProcessBatchMeta", "PreProcessTensorMeta",
           "StdVector", "StdString", "roi_meta_type", "NVDS_PREPROCESS_BATCH_META", "preprocess_meta_type"]
