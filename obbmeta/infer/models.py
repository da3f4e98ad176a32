"""Loading the model a user holds, and the models shared in one process.

``load_model(spec, device)`` takes what a DeepStream / PyTorch user has:

* ``"package.module:factory"``: ``factory()`` is called with no arguments and returns a ``torch.nn.Module`` or any
  callable (``"package.module:attr.sub"`` reaches nested attributes); absolute module names only;
* a TorchScript file (``torch.jit.save``), a ``torch.export`` program (``torch.export.save``, usually ``.pt2``);
* an ONNX file (``.onnx``, what DeepStream-Yolo configs name as ``onnx-file``): converted to a PyTorch module by
  onnx2torch (the ``onnx`` extra), so it runs on the element's device, under autocast and in CUDA graphs like any
  PyTorch model;
* an Ultralytics checkpoint (``yolo11n-obb.pt``): loaded by Ultralytics when it is installed (never a dependency of
  obbmeta: AGPL-3.0), its class names, stride, input size and end-to-end flag taken from the checkpoint; without
  Ultralytics the error says what to install or how to export;
* a module or callable already.

What a file declares about itself (its input size, class names, whether its head is end-to-end) comes with it as a
:class:`ModelInfo` (:func:`model_info`). A model file is identified by its real path, size and modification time,
so replacing the file and setting the same path again loads the new weights; models no detector holds any more are
freed (the cache holds them weakly).
"""
from __future__ import annotations

import importlib
import logging
import os
import pickletools
import stat
import threading
import time
import weakref
import zipfile
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..config.settings import is_factory

log = logging.getLogger("obbmeta")


class ModelLoadError(RuntimeError):
    """The ``model`` spec could not be turned into a callable model."""


class ModelInputError(RuntimeError):
    """The model refused the input obbmeta fed it (e.g. a file exported for other input shapes)."""


class ModelOutputError(ValueError):
    """The model's output cannot be used as it is (e.g. it lies on another device than the input)."""


@dataclass(frozen=True)
class ModelInfo:
    """What a model file says about itself (None: it does not say). ``input_shape``: the exported input's (N, C, H,
    W) with None for a dynamic dimension; ``input_size``: its (width, height) when both are fixed, or the
    training size of an Ultralytics checkpoint; ``end_to_end``: the head returns (B, K, 7) rows after NMS."""
    kind: str
    input_shape: tuple | None = None
    input_size: tuple[int, int] | None = None
    class_names: tuple[str, ...] | None = None
    stride: int | None = None
    end_to_end: bool | None = None

    def describe_input(self) -> str:
        if not self.input_shape:
            return "its input shape"
        return "(" + ", ".join("*" if d is None else str(d) for d in self.input_shape) + ")"


# ---------------------------------------------------------------- one spec -> one model

def load_model(spec: Any, device: str | torch.device = "cpu") -> Callable:
    """A callable model from ``spec`` (see the module docstring), in eval mode on ``device`` where it is a module.
    Only regular files are read (a FIFO or a device such as /dev/zero is refused, never read). What the file declares
    is on the returned object as ``_obbmeta_info`` (:func:`model_info`)."""
    device = torch.device(device)
    if callable(spec) and not isinstance(spec, str):
        return ready(spec, device)
    if not isinstance(spec, (str, os.PathLike)) or not str(spec):
        raise ModelLoadError(f"model must be 'module:callable', a model file path (TorchScript, torch.export, ONNX, "
                             f"an Ultralytics checkpoint) or a callable; got {spec!r}")
    text = os.fspath(spec)
    if os.path.exists(text):
        if not stat.S_ISREG(os.stat(text).st_mode):
            raise ModelLoadError(f"model {text!r} is not a regular file (a directory, FIFO or device); give a model "
                                 "file or 'module:callable'")
        return ready(_load_file(text, device), device)
    if not is_factory(text):
        module_name = text.partition(":")[0]
        if ":" in text and not all(p.isidentifier() for p in module_name.split(".")):
            raise ModelLoadError(f"model {text!r}: {module_name!r} is not an absolute module name (like "
                                 "'mypkg.models'); a path must name an existing file")
        raise ModelLoadError(f"model {text!r} is neither an existing file nor of the form 'module:callable'")
    return ready(_call_factory(text), device)


def _call_factory(text: str) -> Any:
    module_name, _, attr = text.partition(":")
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
    return model


def file_kind(path: str) -> str:
    """What a model file is, from its bytes (not its name): ``onnx``, ``torchscript``, ``export`` (torch.export),
    ``ultralytics`` (a torch.save checkpoint of Ultralytics' classes), ``checkpoint`` (another torch.save pickle),
    or ``unknown``."""
    if path.endswith(".onnx"):
        return "onnx"
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            if any(n.endswith("serialized_exported_program.json") or n.endswith("/models/model.json")
                   or "/serialized_exported_program" in n for n in names) or any(n.endswith(".pt2") for n in names):
                return "export"
            if any("/code/" in n for n in names) and any(n.endswith("constants.pkl") for n in names):
                return "torchscript"
            pickles = [n for n in names if n.endswith("data.pkl")]
            if pickles:
                return "ultralytics" if _pickle_mentions(z.read(pickles[0]), "ultralytics") else "checkpoint"
    except (zipfile.BadZipFile, OSError):
        pass
    with open(path, "rb") as f:
        head = f.read(16)
    if head[:1] == b"\x08" or path.endswith(".onnx"):  # an ONNX protobuf starts with field 1 (ir_version)
        return "onnx"
    if head[:2] in (b"\x80\x02", b"\x80\x04", b"\x80\x05"):  # a legacy (non-zip) torch.save pickle
        return "checkpoint"
    return "unknown"


def _pickle_mentions(data: bytes, package: str) -> bool:
    """Whether a pickle references classes of ``package`` (read without unpickling: no code runs)."""
    try:
        for op, arg, _ in pickletools.genops(data):
            if op.name in ("GLOBAL", "STACK_GLOBAL", "SHORT_BINUNICODE", "BINUNICODE", "UNICODE") and \
                    isinstance(arg, str) and (arg == package or arg.startswith(package + ".")):
                return True
    except Exception:  # noqa: BLE001 - a damaged pickle: not Ultralytics' as far as we can tell
        return False
    return False


def _load_file(path: str, device: torch.device) -> Any:
    kind = file_kind(path)
    if kind == "onnx":
        return _load_onnx(path, device)
    if kind == "ultralytics":
        return _load_ultralytics(path)
    if kind == "checkpoint":
        raise ModelLoadError(f"model file {path!r} is a torch.save checkpoint (a pickle of weights or of a module), "
                             "not a TorchScript, torch.export or ONNX model: give 'module:callable' that builds the "
                             "model and loads it, or save it with torch.jit.save / torch.export.save")
    errors = []
    loaders = [("torch.export", lambda: _load_export(path)),
               ("TorchScript", lambda: _load_torchscript(path, device))]
    if kind == "torchscript" or (kind == "unknown" and not path.endswith(".pt2")):
        loaders.reverse()
    for name, load in loaders:
        try:
            return load()
        except Exception as exc:  # noqa: BLE001 - try the other format, then report both
            errors.append(f"as {name}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    raise ModelLoadError(f"model file {path!r} could not be loaded " + "; ".join(errors))


def _load_export(path: str) -> Any:
    program = torch.export.load(path)
    module = program.module()
    shapes = []
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in program.graph_signature.user_inputs:
            val = node.meta.get("val")
            if isinstance(val, torch.Tensor):
                shapes.append(tuple(int(d) if isinstance(d, int) else None for d in val.shape))
    _attach_info(module, _info("export", shapes[0] if shapes else None))
    return module


def _load_torchscript(path: str, device: torch.device) -> Any:
    """A TorchScript file, with what it says of itself: Ultralytics' exports carry ``config.txt`` (their metadata:
    imgsz, batch, names, stride, end2end), a file saved with ``_extra_files={"obbmeta.json": ...}`` carries
    ``{"input_shape": [N, C, H, W], "class_names": [...]}``; a saved trace keeps no input sizes of its own."""
    import json

    extra = {"config.txt": "", "obbmeta.json": ""}
    module = torch.jit.load(path, map_location=device, _extra_files=extra)
    shape = names = stride = end2end = None
    for key in ("obbmeta.json", "config.txt"):
        try:
            meta = json.loads(extra[key]) if extra[key] else None
        except (ValueError, TypeError):
            meta = None
        if not isinstance(meta, dict):
            continue
        if isinstance(meta.get("input_shape"), list) and len(meta["input_shape"]) == 4:
            shape = tuple(int(d) if d else None for d in meta["input_shape"])
        elif isinstance(meta.get("imgsz"), list) and len(meta["imgsz"]) == 2:
            batch = meta.get("batch") if isinstance(meta.get("batch"), int) and not meta.get("dynamic") else None
            shape = (batch, 3, int(meta["imgsz"][0]), int(meta["imgsz"][1]))
        found = meta.get("class_names") or meta.get("names")
        names = _names_from_metadata(repr(found)) if found else names
        stride = int(meta["stride"]) if isinstance(meta.get("stride"), int) else stride
        end2end = bool(meta["end2end"]) if "end2end" in meta else end2end
        break
    _attach_info(module, _info("torchscript", shape, class_names=names, stride=stride, end_to_end=end2end))
    if names:
        try:
            module.class_names = list(names)
        except (AttributeError, RuntimeError, TypeError):
            pass
    return module


def _info(kind: str, shape: tuple | None, **kw: Any) -> ModelInfo:
    size = None
    if shape is not None and len(shape) == 4 and shape[2] and shape[3]:
        size = (int(shape[3]), int(shape[2]))
    return ModelInfo(kind, shape, size, **kw)


def _attach_info(model: Any, info: ModelInfo) -> None:
    try:
        model._obbmeta_info = info
    except (AttributeError, TypeError, RuntimeError):  # a ScriptModule may refuse new attributes
        _INFOS[id(model)] = (weakref.ref(model), info)


_INFOS: dict[int, tuple] = {}


def model_info(model: Any) -> ModelInfo | None:
    """What the loaded model's file declared (:class:`ModelInfo`), or None (a factory's model)."""
    info = getattr(model, "_obbmeta_info", None)
    if info is None:
        entry = _INFOS.get(id(model))
        if entry is not None and entry[0]() is model:
            info = entry[1]
    return info


def _load_onnx(path: str, device: torch.device) -> Any:
    """An ONNX file as a callable model: :class:`~obbmeta.infer.onnx.OnnxModule` (PyTorch ops: CUDA, autocast, CUDA
    graphs), or onnxruntime on the CPU where it is installed (faster there; ``OBBMETA_ONNX_RUNNER=torch`` or
    ``=onnxruntime`` chooses)."""
    try:
        import onnx
    except ImportError:
        raise ModelLoadError(f"model {path!r} is an ONNX file: running it needs the onnx package (pip install "
                             "'obbmeta[onnx]')") from None
    from .onnx import OnnxError, OnnxModule, OnnxRuntimeModel, onnxruntime_available

    try:
        proto = onnx.load(path)
    except Exception as exc:  # noqa: BLE001 - a damaged or truncated file
        raise ModelLoadError(f"model {path!r} is not a readable ONNX file: {exc}") from None
    inits = {i.name for i in proto.graph.initializer}
    real_inputs = [i for i in proto.graph.input if i.name not in inits]
    if len(real_inputs) != 1:
        raise ModelLoadError(f"model {path!r}: the ONNX graph has {len(real_inputs)} inputs "
                             f"({', '.join(i.name for i in real_inputs)}); obbinfer feeds one image batch")
    dims = real_inputs[0].type.tensor_type.shape.dim
    shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in dims)
    meta = {p.key: p.value for p in proto.metadata_props}
    names = _names_from_metadata(meta.get("names"))
    stride = int(meta["stride"]) if meta.get("stride", "").isdigit() else None
    end2end = {"true": True, "false": False}.get(meta.get("end2end", "").lower())
    runner = os.environ.get("OBBMETA_ONNX_RUNNER", "auto")
    if runner not in ("auto", "torch", "onnxruntime"):
        raise ModelLoadError(f"OBBMETA_ONNX_RUNNER must be auto, torch or onnxruntime, got {runner!r}")
    use_ort = runner == "onnxruntime" or (runner == "auto" and device.type == "cpu" and onnxruntime_available())
    if use_ort and device.type != "cpu":
        raise ModelLoadError(f"OBBMETA_ONNX_RUNNER=onnxruntime runs ONNX models on the CPU, not on {device}")
    try:
        module = OnnxRuntimeModel(path) if use_ort else OnnxModule(proto)
    except OnnxError as exc:
        raise ModelLoadError(f"model {path!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - onnxruntime refusing the graph
        raise ModelLoadError(f"model {path!r}: {type(exc).__name__}: {exc}") from None
    _attach_info(module, _info("onnx", shape, class_names=names, stride=stride, end_to_end=end2end))
    if names:
        module.class_names = list(names)
    return module


def _names_from_metadata(text: str | None) -> tuple[str, ...] | None:
    """Ultralytics writes ``names`` into an ONNX file's metadata as a Python dict literal ``{0: 'plane', ...}``."""
    if not text:
        return None
    import ast

    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if isinstance(value, dict) and all(str(k).isdigit() for k in value):  # JSON gives the ids as strings
        value = {int(k): v for k, v in value.items()}
    if isinstance(value, dict) and sorted(value) == list(range(len(value))) and \
            all(isinstance(v, str) for v in value.values()):
        return tuple(value[k] for k in range(len(value)))
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _load_ultralytics(path: str) -> Any:
    try:
        import ultralytics  # noqa: F401 - its classes are what the checkpoint's pickle names
        from ultralytics.nn.tasks import load_checkpoint
    except ImportError:
        raise ModelLoadError(
            f"model {path!r} is an Ultralytics checkpoint: loading it needs Ultralytics (pip install ultralytics; "
            "AGPL-3.0, not a dependency of obbmeta), or export it once where Ultralytics is installed: "
            f"yolo export model={os.path.basename(path)} format=onnx (then onnx-file=... or model=....onnx), or "
            "format=torchscript") from None
    try:
        model, ckpt = load_checkpoint(path, device="cpu", fuse=True)
    except Exception as exc:  # noqa: BLE001 - a checkpoint of another Ultralytics version, a damaged file
        raise ModelLoadError(f"model {path!r}: Ultralytics could not load the checkpoint: {type(exc).__name__}: "
                             f"{exc}") from None
    model = model.float().eval()
    names = getattr(model, "names", None)
    if isinstance(names, dict):
        names = tuple(names[k] for k in sorted(names))
    args = (ckpt or {}).get("train_args") or {}
    imgsz = args.get("imgsz")
    size = (int(imgsz), int(imgsz)) if isinstance(imgsz, int) else \
        (int(imgsz[1]), int(imgsz[0])) if isinstance(imgsz, (list, tuple)) and len(imgsz) == 2 else None
    stride = int(max(model.stride)) if hasattr(model, "stride") else None
    end2end = bool(getattr(model, "end2end", False) or getattr(getattr(model, "model", [None])[-1], "end2end",
                                                                False))
    info = ModelInfo("ultralytics", None, size, tuple(names) if names else None, stride, end2end)
    wrapped = _UltralyticsHead(model)
    _attach_info(wrapped, info)
    return wrapped


class _UltralyticsHead(torch.nn.Module):
    """An Ultralytics model as a plain head: its first output (the raw (B, 4+nc+1, N) head, or the end-to-end (B, K,
    7) rows), in eval mode; ``names`` passed through."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model
        names = getattr(model, "names", None)
        self.names = dict(names) if isinstance(names, dict) else names

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.model(x)
        return y[0] if isinstance(y, (tuple, list)) else y


def ready(model: Any, device: torch.device) -> Any:
    """A module moved to ``device`` and in eval mode (a callable as it is)."""
    if isinstance(model, torch.nn.Module):
        info = model_info(model)
        try:
            model = model.to(device)
        except Exception as exc:  # noqa: BLE001 - e.g. an exported program bound to the device it was exported on
            if any(t.device != device for t in (*model.parameters(), *model.buffers())):
                raise ModelLoadError(f"the model cannot be moved to {device}: {exc}") from exc
        try:
            model.eval()
        except NotImplementedError:  # torch.export modules have no train/eval switch: exported as they are
            pass
        if info is not None and model_info(model) is None:
            _attach_info(model, info)
    return model


def model_class_names(model: Any) -> list[str] | None:
    """The class names a model carries, in class-id order: ``class_names`` (obbmeta's demo models), Ultralytics'
    ``names`` (a dict id -> name, or a list), mmrotate / mmdet's ``dataset_meta['classes']``, an ONNX or checkpoint
    file's own; None when it has none."""
    info = model_info(model)
    candidates = [getattr(model, "class_names", None), getattr(model, "names", None),
                  info.class_names if info else None]
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


def export_mismatch(fed: tuple, info: ModelInfo | None, what: str) -> str:
    """The one-line error for a model file exported for other input shapes than obbmeta fed it."""
    kind = {"export": "torch.export program", "torchscript": "TorchScript file", "onnx": "ONNX model"}.get(
        info.kind if info else "", "model file")
    if info is None or not info.input_shape:
        return (f"the {kind} refused input {tuple(fed)} ({what}): a traced or exported model runs only at the input "
                "shape it was made for; set input-size (and batch-size) to it, or export with dynamic shapes")
    want = info.describe_input()
    hint = ""
    if info and info.input_shape and len(info.input_shape) == 4:
        n, _, h, w = info.input_shape
        if h and w and (tuple(fed[2:]) != (h, w)):
            hint = f": set input-size={w}x{h}"
        if n and fed[0] != n:
            hint += f"{' and' if hint else ':'} batch-size={n} (or export with a dynamic batch dimension)"
    return f"the {kind} was exported for input {want} but obbinfer fed {tuple(fed)}{hint} ({what})"


# ---------------------------------------------------------------- the models shared in one process

def file_identity(spec: Any) -> tuple:
    """What a model spec is: a file by (real path, size, mtime); a factory by its name."""
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        if os.path.isfile(text):
            st = os.stat(text)
            return ("file", os.path.realpath(text), st.st_size, st.st_mtime_ns)
        return ("factory", text)
    return ("object", id(spec))


_SHARED: "weakref.WeakValueDictionary[tuple, Any]" = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


class _Holder:
    """A strong reference to a shared model: the cache keeps it weakly, so a model no detector holds is freed."""
    __slots__ = ("model", "__weakref__")

    def __init__(self, model: Any):
        self.model = model


def shared_model(spec: Any, device: str, options: tuple, load: Callable[[], Any]) -> _Holder:
    """The model for (what ``spec`` is, device, options), loaded once by ``load()`` and shared while anyone holds
    the returned holder."""
    key = (file_identity(spec), device, options)
    with _SHARED_LOCK:
        holder = _SHARED.get(key)
    if holder is not None:
        log.info("model %r on %s shared with another detector", spec_name(spec), device)
        return holder
    t0 = time.perf_counter()
    holder = _Holder(load())
    log.info("model %r loaded on %s in %.3f s", spec_name(spec), device, time.perf_counter() - t0)
    with _SHARED_LOCK:
        return _SHARED.setdefault(key, holder)


def shared_models() -> dict[tuple, Any]:
    """The models detectors share in this process now: (what the spec is, device, options) -> model."""
    with _SHARED_LOCK:
        return {k: h.model for k, h in _SHARED.items()}


def spec_name(model: Any) -> str:
    return os.fspath(model) if isinstance(model, (str, os.PathLike)) else type(model).__name__


__all__ = ["load_model", "model_info", "model_class_names", "ModelInfo", "ModelLoadError", "ModelInputError",
           "file_kind", "shared_model", "shared_models", "file_identity", "export_mismatch", "ready"]
