"""What nvinfer does with a batch's raw tensors besides parsing them: ``output-tensor-meta`` (an
``NvDsInferTensorMeta`` per frame or object), ``raw-output-file-write`` (every layer to a file) and
``raw-output-generated-callback`` (a C function called with every layer).

:class:`TensorOutputs` does the three for one element, from the :class:`~obbmeta.infer.RawOutputs` a detector call
gave. Host copies are made once per model call. Device addresses in a tensor meta point into a copy of the output
that is kept alive until DeepStream has released every meta of it (:func:`obbmeta.nvds.tensors.released_handles`).
"""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Sequence

import numpy as np
import torch

from ..nvds import tensors as nvds_tensors

# nvinfer's gst_nvinfer_raw_output_generated_callback: (GstBuffer *buf, NvDsInferNetworkInfo *network_info,
# NvDsInferLayerInfo *layers_info, guint num_layers, guint batch_size, gpointer user_data)
RAW_OUTPUT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(nvds_tensors.NetworkInfo),
                                       ctypes.POINTER(nvds_tensors.LayerInfo), ctypes.c_uint, ctypes.c_uint,
                                       ctypes.c_void_p)
FILE_NAME = "gstnvdsinfer_uid-{uid:02d}_layer-{layer}_batch-{batch:010d}_batchsize-{size:02d}.bin"
_SAFE = {torch.float32, torch.float16, torch.int8, torch.int32, torch.int64, torch.uint8}
# The device copies tensor metas point into, by handle (one registry for the process: DeepStream hands the released
# handles of every element back through one queue): handle -> [targets still holding it, copies].
_KEEP: dict[int, list] = {}
_KEEP_LOCK = threading.Lock()
_NEXT = [1]


def drop_released() -> None:
    """Let go of the device copies whose every tensor meta DeepStream has released."""
    for handle in nvds_tensors.released_handles():
        with _KEEP_LOCK:
            entry = _KEEP.get(handle)
            if entry is not None:
                entry[0] -= 1
                if entry[0] <= 0:
                    del _KEEP[handle]


def kept_copies() -> int:
    """Device copies still held for tensor metas DeepStream has not released (a leak check)."""
    drop_released()
    with _KEEP_LOCK:
        return len(_KEEP)


def host_array(t: torch.Tensor) -> np.ndarray:
    """A tensor on the host as one of NvDsInferDataType's dtypes (bool as uint8, other floats as float32)."""
    if t.dtype == torch.bool:
        t = t.to(torch.uint8)
    elif t.dtype not in _SAFE:
        t = t.float()
    return t.detach().to("cpu").contiguous().numpy()


class TensorOutputs:
    """One element's tensor outputs, as nvinfer's (the settings it needs are read at construction)."""

    def __init__(self, *, unique_id: int, gpu_id: int, maintain_aspect_ratio: bool, symmetric_padding: bool,
                 attach: bool, write_files: bool, callback: int | None = None, userdata: int | None = None,
                 folder: str = "."):
        self.unique_id, self.gpu_id = unique_id, gpu_id
        self.maintain, self.symmetric = maintain_aspect_ratio, symmetric_padding
        self.attach, self.write_files = attach, write_files
        self.callback = RAW_OUTPUT_CALLBACK(callback) if callback else None
        self.userdata = userdata
        self.folder = folder
        self.file_batch = 0  # nvinfer's file_write_batch_num: one per inferred batch, from 0 at start

    @property
    def active(self) -> bool:
        return self.attach or self.write_files or self.callback is not None

    def handle(self, batch: Any, targets: Sequence[Any], raws: Sequence[Any], *, to_objects: bool = False,
               buffer_address: int = 0, want_input: bool = False) -> list[dict]:
        """Attach / write / call back for ``raws`` (one :class:`~obbmeta.infer.RawOutputs` per model call; call
        ``k`` covers the next ``raws[k].input.shape[0]`` of ``targets``). Returns, per call, the host layers
        (``{"input": (name, array or None), "outputs": [(name, array), ...], "network": (w, h, c), "batch_size":
        n}``; the input's array when ``want_input``, a file or the callback needs it) for Python listeners."""
        drop_released()
        out, start = [], 0
        for raw in raws:
            n = int(raw.input.shape[0])
            part = list(targets[start:start + n])
            start += n
            x = raw.input
            network = (int(x.shape[3]), int(x.shape[2]), int(x.shape[1])) if x.dim() == 4 else (0, 0, 0)
            layers = [(name, host_array(t)) for name, t in raw.outputs]
            host_input = host_array(x) if (self.write_files or self.callback is not None or want_input) else None
            if self.attach and layers and part:
                dev, handle = self._device_copies(raw.outputs, n)
                nvds_tensors.attach_tensor_outputs(
                    batch, part, layers, unique_id=self.unique_id, network=network, to_objects=to_objects,
                    gpu_id=self.gpu_id, maintain_aspect_ratio=self.maintain, symmetric_padding=self.symmetric,
                    device_addresses=dev, handle=handle)
            named_input = ("input", host_input)
            if self.write_files:
                self._write(named_input, layers, n)
            if self.callback is not None:
                self._call(buffer_address, network, named_input, layers, n)
            out.append({"input": named_input, "outputs": layers, "network": network, "batch_size": n})
            self.file_batch += 1
        return out

    def _device_copies(self, outputs: Sequence[tuple[str, torch.Tensor]], n: int) -> tuple[list | None, int]:
        """Per unit, the device address of its slice of every output, in copies kept until DeepStream releases
        the metas (a CUDA graph's outputs are overwritten by the next replay)."""
        if not any(t.is_cuda for _, t in outputs):
            return None, 0
        copies = [t.detach().contiguous().clone() if t.is_cuda else None for _, t in outputs]
        with _KEEP_LOCK:
            handle = _NEXT[0]
            _NEXT[0] += 1
            _KEEP[handle] = [n, copies]
        dev = []
        for j in range(n):
            dev.append([c.data_ptr() + j * (c[0].numel() * c.element_size()) if c is not None else 0
                        for c in copies])
        return dev, handle

    def _layer_infos(self, named_input: tuple, layers: list) -> tuple[Any, list]:
        """NvDsInferLayerInfo of every bound layer (the input first, as binding 0), buffers = whole-batch host
        data; and the arrays to keep alive during the call."""
        everything = [(named_input[0], named_input[1], True)] + [(n, a, False) for n, a in layers]
        arrays = [np.ascontiguousarray(a) for _, a, _ in everything]
        infos = (nvds_tensors.LayerInfo * len(everything))(*[
            nvds_tensors.layer_info(name.encode(), a[0] if a.ndim else a, i, is_input, a.ctypes.data)
            for i, ((name, _, is_input), a) in enumerate(zip(everything, arrays))])
        return infos, arrays

    def _call(self, buffer_address: int, network: tuple, named_input: tuple, layers: list, n: int) -> None:
        infos, keep = self._layer_infos(named_input, layers)
        net = nvds_tensors.NetworkInfo(*network)
        self.callback(buffer_address or None, ctypes.byref(net), infos, len(keep), n, self.userdata)

    def _write(self, named_input: tuple, layers: list, n: int) -> None:
        for name, a in [named_input] + list(layers):
            file = FILE_NAME.format(uid=self.unique_id, layer=name.replace("/", "_"), batch=self.file_batch, size=n)
            with open(os.path.join(self.folder, file[:255]), "wb") as f:
                f.write(np.ascontiguousarray(a).tobytes())


__all__ = ["TensorOutputs", "RAW_OUTPUT_CALLBACK", "FILE_NAME", "host_array", "drop_released", "kept_copies"]
