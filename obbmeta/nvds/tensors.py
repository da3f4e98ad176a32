"""A model's tensors as nvinfer attaches them (``output-tensor-meta``): ``NvDsInferTensorMeta`` user metas.

nvinfer attaches, for every frame (primary mode: ``frame_user_meta_list``) or object (secondary mode:
``obj_user_meta_list``) it inferred, one user meta of type ``NVDSINFER_TENSOR_OUTPUT_META`` whose
``NvDsInferTensorMeta`` lists the output layers (``NvDsInferLayerInfo``: data type, dims without the batch, name)
with a host copy of that frame's slice of each (``out_buf_ptrs_host``) and its device address
(``out_buf_ptrs_dev``). :func:`attach_tensor_outputs` writes exactly that (kernels/nvds_tensor.c: the data shared by
a meta and its copies, freed by the last release), so pyds' ``NvDsInferTensorMeta.cast`` and C probes read it
unchanged; :func:`read_tensor_outputs` reads them back. The layouts (:class:`LayerInfo`, :class:`TensorMeta`) are
those of NVIDIA's public gstnvdsinfer.h / nvdsinfer.h (DeepStream 7.0 - 9.1: ``symmetric_padding`` is last).

Device pointers stay valid while a meta of them lives: the caller passes a ``handle`` and keeps the device tensors
alive until :func:`released_handles` has returned it once for every target it was attached to (each frame's or
object's data is freed with the last release of its meta and its copies).
"""
from __future__ import annotations

import ctypes
import threading
from ctypes import POINTER, Structure, c_char_p, c_int32, c_int64, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .._native import NativeLibrary
from . import _library, layouts
from ._inputs import batch_of, frame_of

NVDSINFER_TENSOR_OUTPUT_META = 12  # NvDsMetaType (nvdsmeta.h, the same from 6.2 to 9.1)
MAX_DIMS = 8                       # NVDSINFER_MAX_DIMS
MAX_LAYERS = 64
# NvDsInferDataType: FLOAT 0, HALF 1, INT8 2, INT32 3, INT64 4, UINT8 5 (as numpy dtypes)
DATA_TYPES = {0: np.float32, 1: np.float16, 2: np.int8, 3: np.int32, 4: np.int64, 5: np.uint8}
_CODES = {np.dtype(v): k for k, v in DATA_TYPES.items()}


class Dims(Structure):
    """``NvDsInferDims``: the dims of one layer without the batch dimension."""
    _fields_ = [("numDims", c_uint32), ("d", c_uint32 * MAX_DIMS), ("numElements", c_uint32)]


class LayerInfo(Structure):
    """``NvDsInferLayerInfo``."""
    _fields_ = [("dataType", c_int32), ("inferDims", Dims), ("bindingIndex", c_int32), ("layerName", c_char_p),
                ("buffer", c_void_p), ("isInput", c_int32)]


class NetworkInfo(Structure):
    """``NvDsInferNetworkInfo``: the model input's width, height, channels."""
    _fields_ = [("width", c_uint32), ("height", c_uint32), ("channels", c_uint32)]


class TensorMeta(Structure):
    """``NvDsInferTensorMeta``."""
    _fields_ = [("unique_id", c_uint32), ("num_output_layers", c_uint32),
                ("output_layers_info", POINTER(LayerInfo)), ("out_buf_ptrs_host", POINTER(c_void_p)),
                ("out_buf_ptrs_dev", POINTER(c_void_p)), ("gpu_id", c_int32), ("priv_data", c_void_p),
                ("network_info", NetworkInfo), ("maintain_aspect_ratio", c_int32), ("symmetric_padding", c_int32)]


class _AttachIn(Structure):
    """``obbt_attach_in`` (kernels/nvds_tensor.c): one frame's or object's tensors for the C writer."""
    _fields_ = [("unique_id", c_uint32), ("gpu_id", c_int32), ("network_info", NetworkInfo),
                ("maintain_aspect_ratio", c_int32), ("symmetric_padding", c_int32), ("num_layers", c_uint32),
                ("layers", POINTER(LayerInfo)), ("dev", POINTER(c_uint64)), ("handle", c_uint64),
                ("meta_type", c_int32)]


class _Api(Structure):
    _fields_ = [(name, c_void_p) for name in ("acquire_user_meta", "add_user_meta_to_frame", "add_user_meta_to_obj",
                                              "acquire_meta_lock", "release_meta_lock", "g_malloc", "g_free")]


NVDS_TENSOR = NativeLibrary(
    "nvds._nvdstensor", "C DeepStream tensor-meta writer", abi=1, abi_function="obbmeta_tensor_abi_version",
    functions={
        "obbmeta_tensor_init": (c_int32, [POINTER(_Api)]),
        "obbmeta_tensor_attach": (c_void_p, [c_void_p, c_void_p, c_int32, POINTER(_AttachIn)]),
        "obbmeta_tensor_released": (c_int64, [POINTER(c_uint64), c_int64]),
        "obbmeta_tensor_live_metas": (c_int64, []),
        "obbmeta_tensor_live_shared": (c_int64, []),
    },
    structs={"obbt_api": _Api, "obbt_dims": Dims, "obbt_layer_info": LayerInfo, "obbt_network_info": NetworkInfo,
             "obbt_tensor_meta": TensorMeta, "obbt_attach_in": _AttachIn},
    constants={"OBBT_TENSOR_OUTPUT_META": NVDSINFER_TENSOR_OUTPUT_META, "OBBT_MAX_DIMS": MAX_DIMS,
               "OBBT_MAX_LAYERS": MAX_LAYERS},
    table_function="obbmeta_tensor_abi_table")

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        from . import _core

        core = _core.get()  # the NVIDIA library and glib the OBB writer uses
        lib = NVDS_TENSOR.load()
        m, g = core.libs.meta, core.libs.glib
        addr = lambda lib_, name: ctypes.cast(getattr(lib_, name), c_void_p).value  # noqa: E731
        api = _Api(addr(m, "nvds_acquire_user_meta_from_pool"), addr(m, "nvds_add_user_meta_to_frame"),
                   addr(m, "nvds_add_user_meta_to_obj"), addr(m, "nvds_acquire_meta_lock"),
                   addr(m, "nvds_release_meta_lock"), addr(g, "g_malloc"), addr(g, "g_free"))
        if lib.obbmeta_tensor_init(ctypes.byref(api)) != 0:
            raise RuntimeError("obbmeta's tensor-meta writer could not be initialised")
        _lib = lib
        return lib


@dataclass(frozen=True)
class Layer:
    """One layer of a unit's tensors: its name, (batch-less) array, ``bindingIndex`` and whether it is an
    input."""
    name: str
    data: np.ndarray
    binding_index: int = 0
    is_input: bool = False


def layer_info(name: bytes, array: np.ndarray, binding_index: int, is_input: bool, buffer: int) -> LayerInfo:
    """The ``NvDsInferLayerInfo`` of ``array`` (its shape without the batch), its data at ``buffer``."""
    code = _CODES.get(array.dtype)
    if code is None:
        raise TypeError(f"layer {name.decode(errors='replace')!r}: dtype {array.dtype} is no NvDsInferDataType "
                        f"(float32, float16, int8, int32, int64, uint8)")
    if array.ndim > MAX_DIMS:
        raise ValueError(f"layer {name.decode(errors='replace')!r} has {array.ndim} dims; NvDsInferDims holds "
                         f"{MAX_DIMS}")
    dims = Dims(array.ndim, (c_uint32 * MAX_DIMS)(*array.shape), int(array.size))
    return LayerInfo(code, dims, binding_index, name, buffer, int(is_input))


def attach_tensor_outputs(batch: Any, targets: Sequence[Any], layers: Sequence[tuple[str, np.ndarray]], *,
                          unique_id: int, network: tuple[int, int, int], to_objects: bool = False, gpu_id: int = 0,
                          maintain_aspect_ratio: bool = False, symmetric_padding: bool = False,
                          device_addresses: Sequence[Sequence[int]] | None = None, handle: int = 0) -> list[int]:
    """Attach one ``NvDsInferTensorMeta`` per target as nvinfer does: ``targets[j]`` (frame metas, or object
    metas with ``to_objects``) gets row ``j`` of every ``(name, (N, ...) array)`` in ``layers`` (host copies);
    ``network`` is the model input's (width, height, channels); ``device_addresses[j][i]``: the device address of
    target j's slice of layer i (0: none). Returns the user metas' addresses."""
    b = batch_of(batch)
    n = len(targets)
    if not layers or len(layers) > MAX_LAYERS:
        raise ValueError(f"layers must hold 1 to {MAX_LAYERS} (name, array) pairs, got {len(layers)}")
    arrays = []
    for name, a in layers:
        a = np.ascontiguousarray(a)
        if a.ndim < 1 or a.shape[0] != n:
            raise ValueError(f"layer {name!r} has shape {a.shape}; its first dimension must be the {n} targets")
        arrays.append((name.encode(), a))
    if device_addresses is not None and (len(device_addresses) != n or
                                         any(len(d) != len(arrays) for d in device_addresses)):
        raise ValueError("device_addresses must hold one address per layer for every target")
    lib = _c()
    w, h, c = (int(v) for v in network)
    out = []
    for j, target in enumerate(targets):
        address = target if isinstance(target, int) else (frame_of(target, b).address if not to_objects
                                                          else int(target))
        infos = (LayerInfo * len(arrays))(*[
            layer_info(name, a[j], i, False, a.ctypes.data + j * a[j].nbytes) for i, (name, a) in enumerate(arrays)])
        dev = (c_uint64 * len(arrays))(*(device_addresses[j] if device_addresses is not None else [0] * len(arrays)))
        params = _AttachIn(int(unique_id), int(gpu_id), NetworkInfo(w, h, c), int(maintain_aspect_ratio),
                           int(symmetric_padding), len(arrays), infos, dev, int(handle),
                           NVDSINFER_TENSOR_OUTPUT_META)
        um = lib.obbmeta_tensor_attach(b.address, address, int(to_objects), ctypes.byref(params))
        if not um:
            raise RuntimeError("obbmeta's tensor-meta writer failed (nvds_acquire_user_meta_from_pool returned NULL?)")
        out.append(int(um))
    return out


@dataclass(frozen=True)
class TensorOutput:
    """One ``NvDsInferTensorMeta`` as read back: its unique id, GPU, network input size, letterbox flags, and each
    output layer (a copy of the host data, shaped by its dims) with its device address."""
    unique_id: int
    gpu_id: int
    network: tuple[int, int, int]
    maintain_aspect_ratio: bool
    symmetric_padding: bool
    layers: tuple[Layer, ...]
    device_addresses: tuple[int, ...]


def _read(um_address: int) -> TensorOutput:
    um = layouts.UserMeta.from_address(um_address)
    m = TensorMeta.from_address(um.user_meta_data)
    layers, dev = [], []
    for i in range(m.num_output_layers):
        info = m.output_layers_info[i]
        dims = tuple(info.inferDims.d[:info.inferDims.numDims])
        dtype = DATA_TYPES[info.dataType]
        host = m.out_buf_ptrs_host[i]
        size = int(info.inferDims.numElements) * np.dtype(dtype).itemsize
        data = np.frombuffer(ctypes.string_at(host, size), dtype=dtype).reshape(dims) if host else np.zeros(0, dtype)
        layers.append(Layer(info.layerName.decode() if info.layerName else "", data, int(info.bindingIndex),
                            bool(info.isInput)))
        dev.append(int(m.out_buf_ptrs_dev[i] or 0))
    net = m.network_info
    return TensorOutput(int(m.unique_id), int(m.gpu_id), (int(net.width), int(net.height), int(net.channels)),
                        bool(m.maintain_aspect_ratio), bool(m.symmetric_padding), tuple(layers), tuple(dev))


def _user_metas(node: Any) -> list[int]:
    out = []
    while node:
        um = layouts.UserMeta.from_address(node.contents.data)
        if um.base_meta.meta_type == NVDSINFER_TENSOR_OUTPUT_META and um.user_meta_data:
            out.append(int(node.contents.data))
        node = node.contents.next
    return out


def read_tensor_outputs(frame: Any) -> list[TensorOutput]:
    """The ``NvDsInferTensorMeta`` user metas on a frame's ``frame_user_meta_list`` (primary mode), in list
    order."""
    from .batch import FrameMeta

    _library.load()
    head = layouts.FrameMetaHead.from_address(frame.address if isinstance(frame, FrameMeta) else int(frame))
    return [_read(a) for a in _user_metas(head.frame_user_meta_list)]


def read_object_tensor_outputs(batch: Any, obj: int) -> list[TensorOutput]:
    """The ``NvDsInferTensorMeta`` user metas on the ``obj_user_meta_list`` of object ``obj`` (an
    ``NvDsObjectMeta*`` of ``batch``; secondary mode), in list order."""
    meta = batch_of(batch).layout.object_meta.from_address(int(obj))
    return [_read(a) for a in _user_metas(meta.obj_user_meta_list)]


def released_handles() -> list[int]:
    """The handles of the targets whose last tensor meta (with every copy) was released since the last call: a
    handle attached to N targets comes back N times, the last time when its device tensors may go."""
    lib = _c()
    out = []
    while True:
        buf = (c_uint64 * 256)()
        n = lib.obbmeta_tensor_released(buf, 256)
        out.extend(buf[:n])
        if n < 256:
            return out


def live_tensor_metas() -> int:
    """Tensor metas written or copied and not yet released (a leak check)."""
    return int(_c().obbmeta_tensor_live_metas())


__all__ = ["attach_tensor_outputs", "read_tensor_outputs", "read_object_tensor_outputs", "released_handles",
           "live_tensor_metas", "TensorOutput", "Layer", "TensorMeta", "LayerInfo", "Dims", "NetworkInfo",
           "NVDSINFER_TENSOR_OUTPUT_META", "DATA_TYPES", "NVDS_TENSOR", "layer_info"]
