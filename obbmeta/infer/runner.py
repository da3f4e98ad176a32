"""The model on its device, called the way it was configured: what a detector and a secondary model share.

A :class:`ModelRunner` loads its model once per device (shared with every runner of the same model file, device and
options in the process while any of them holds it), and calls it in the configured precision (``torch.autocast``),
memory format and input layout, turning a file's refusal of an input shape it was not exported for into one line
that names the exported dims.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import Any

import torch

from .models import (
    ModelInputError,
    ModelOutputError,
    export_mismatch,
    load_model,
    model_class_names,
    model_info,
    shared_model,
)
from .params import run_precision

log = logging.getLogger("obbmeta")
PRECISIONS = ("fp32", "fp16", "bf16", "int8", "best")


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


def _first_tensor(y: Any) -> torch.Tensor | None:
    """The tensor the decoders read: ``y`` itself, or the first tensor of a tuple / list / dict (depth first)."""
    if isinstance(y, torch.Tensor):
        return y
    for v in (y.values() if isinstance(y, dict) else y if isinstance(y, (tuple, list)) else ()):
        t = _first_tensor(v)
        if t is not None:
            return t
    return None


def check_output_device(y: Any, device: torch.device) -> None:
    """Raise :class:`ModelOutputError` when the tensor the decoders read from the model's output ``y`` lies on
    another device than its input: a model traced or exported on one device keeps tensors it made
    (``torch.zeros(..., device=x.device)``, anchors) on that device, and running it on another would fail later, in
    the decode, with torch's words. (Other outputs, such as a host tensor of sizes, are not the decoders'.)"""
    t = _first_tensor(y)
    if t is not None and t.device != device:
        raise ModelOutputError(
            f"the model returned output on {t.device} for an input on {device}: a TorchScript or exported model keeps "
            f"the device it was traced on; trace or export it on {device} (or run the element with device={t.device})")


class ModelRunner:
    """A model spec (anything :func:`~obbmeta.infer.load_model` takes) run on a device.

    Args:
        model: the spec; file and factory specs are shared between runners (``share``).
        precision: ``fp32``, ``fp16``, ``bf16`` (``torch.autocast``), or nvinfer's ``int8`` / ``best`` (fp16 on
            CUDA, fp32 on the CPU: :func:`~obbmeta.infer.params.run_precision`).
        channels_last, compile: memory format and ``torch.compile``.
        input_order: ``nchw`` (PyTorch's), or ``nhwc`` (the input permuted, as nvinfer's network-input-order=1).
    """

    def __init__(self, model: Any, *, precision: str = "fp32", channels_last: bool = False, compile: bool = False,
                 input_order: str = "nchw", share: bool = True):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}")
        if input_order not in ("nchw", "nhwc"):
            raise ValueError(f"input_order must be nchw or nhwc, got {input_order!r}")
        self.spec = model
        self.precision = precision
        self.channels_last = channels_last
        self.compile = compile
        self.input_order = input_order
        self.share = share and isinstance(model, (str, os.PathLike))
        self._models: dict[str, Any] = {}
        self._holders: dict[str, Any] = {}
        self._lock = threading.Lock()

    def model_on(self, device: torch.device | str) -> Any:
        """The model loaded for ``device`` (loaded once per device, also when threads ask at once)."""
        key = str(torch.device(device))
        model = self._models.get(key)
        if model is None:
            with self._lock:
                model = self._models.get(key)
                if model is None:
                    model = self._models[key] = self._load(key)
        return model

    def _load(self, device: str) -> Any:
        def load() -> Any:
            m = load_model(self.spec, device)
            if self.channels_last and isinstance(m, torch.nn.Module):
                m = m.to(memory_format=torch.channels_last)
            return _Compiled(m) if self.compile else m

        if not self.share:
            return load()
        holder = shared_model(self.spec, device, (self.channels_last, self.compile), load)
        self._holders[device] = holder  # the runner keeps the shared model alive while it lives
        return holder.model

    @property
    def loaded(self) -> list[Any]:
        return list(self._models.values())

    @property
    def info(self) -> Any:
        """What the model file declared (:class:`~obbmeta.infer.models.ModelInfo`; None before loading or for a
        factory's model)."""
        for model in self._models.values():
            return model_info(getattr(model, "eager", model))
        return None

    @property
    def class_names(self) -> list[str] | None:
        for model in self._models.values():
            return model_class_names(getattr(model, "eager", model))
        return model_class_names(self.spec) if not isinstance(self.spec, (str, os.PathLike)) else None

    def precision_on(self, device: Any) -> str:
        return run_precision(self.precision, device)

    def __call__(self, x: torch.Tensor) -> Any:
        """The model on a prepared (N, C, H, W) batch, in the configured precision and layout."""
        model = self.model_on(x.device)
        fed = tuple(x.shape)
        if self.input_order == "nhwc" and x.dim() == 4:
            x = x.permute(0, 2, 3, 1).contiguous()
        elif self.channels_last and x.dim() == 4:
            x = x.contiguous(memory_format=torch.channels_last)
        precision = self.precision_on(x.device)
        try:
            if precision == "fp32":
                y = model(x)
            else:
                dtype = torch.float16 if precision == "fp16" else torch.bfloat16
                with torch.autocast(x.device.type, dtype=dtype):
                    y = model(x)
        except (AssertionError, RuntimeError) as exc:
            info = model_info(getattr(model, "eager", model))
            if info is not None and info.kind in ("export", "torchscript", "onnx") and _shape_refusal(exc, info, fed):
                raise ModelInputError(export_mismatch(fed, info, _first_line(exc))) from None
            raise
        check_output_device(y, x.device)
        return y

    def release(self) -> None:
        """Drop this runner's hold on its models (a shared model is freed when no runner holds it)."""
        with self._lock:
            self._models.clear()
            self._holders.clear()


def _first_line(exc: BaseException) -> str:
    """The line of an exception that says what went wrong: TorchScript's interpreter puts its own traceback first and
    the error last."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if not lines:
        return type(exc).__name__
    line = lines[-1] if "TorchScript" in lines[0] or lines[0].startswith("Traceback") else lines[0]
    return line[:240] if ":" in line.split(" ")[0] else f"{type(exc).__name__}: {line[:240]}"


def _shape_refusal(exc: BaseException, info: Any, fed: tuple) -> bool:
    """Whether ``exc`` is a model file refusing an input of another shape than it was exported for: the file fixes
    a dimension that the input does not have (a guard, a traced view or reshape, a convolution's size check)."""
    shape = info.input_shape
    if shape and len(shape) == len(fed) and all(d is None or d == f for d, f in zip(shape, fed)):
        return False  # the shape matches what the file declares: some other failure
    if shape:
        return True
    text = str(exc)
    return "Guard failed" in text or "shape" in text or "size" in text


__all__ = ["ModelRunner", "PRECISIONS"]
