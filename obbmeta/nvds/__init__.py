"""obbmeta.nvds: oriented boxes as native DeepStream metadata, on NVIDIA's real libnvds_meta.

Public names: :class:`BatchMeta`, :class:`FrameMeta`, :func:`attach_obbs`, :func:`attach_obbs_batch`,
:func:`read_boxes` (a frame's objects as one OrientedBoxes, NumPy-backed and torch-free unless a device is asked
for, the objects' other fields in its ``data``: :data:`DATA_COLUMNS`), :func:`read_boxes_batch` (several frames in
one call), :func:`is_tracked` / :func:`label_strings` (two of those columns read),
:class:`AttachResult`, :func:`describe`, :func:`obb_meta_type`,
:func:`add_display_lines` (bulk nvdsosd lines), :func:`live_payloads`, :func:`update_objects` /
:func:`update_objects_batch` / :func:`remove_objects` / :func:`remove_objects_batch` (what a tracker does to a
frame's objects),
:func:`attach_classifications` / :func:`read_classifications` with :class:`Label`, :class:`Classification`,
:class:`ClassificationResult` (secondary results as NvDsClassifierMeta / NvDsLabelInfo). NVIDIA's library is
loaded on first use (not at import), from
``$OBBMETA_NVDS_LIB_DIR``, a copy already loaded in the process, ``/opt/nvidia/deepstream/deepstream/lib`` or the
``nvidia-deepstream-videodecode-cu13`` wheel, in that order. No GStreamer import here.
"""
from __future__ import annotations

from ._library import ENV_VAR, NvdsUnavailableError
from ._tables import cut_label
from .batch import BatchMeta, FrameMeta
from .classifier import (
    TEXT_CLASS_ID,
    Classification,
    ClassificationResult,
    Label,
    attach_classifications,
    read_classifications,
)
from .display import add_display_lines, read_display_lines
from .layouts import UNTRACKED_OBJECT_ID, LayoutError
from .obbs import (
    OBB_PREDICTED,
    OBB_RECT_CLIPPED,
    OBB_RECT_ROTATED,
    OBB_TRACKED,
    AttachResult,
    attach_obbs,
    attach_obbs_batch,
)
from .objects import UpdateResult, remove_objects, remove_objects_batch, update_objects, update_objects_batch
from .reader import DATA_COLUMNS, is_tracked, label_strings, read_boxes, read_boxes_batch

OBB_META_DESCRIPTOR = "OBBMETA.OBB.V1"

__all__ = [
    "BatchMeta", "FrameMeta", "attach_obbs", "attach_obbs_batch", "read_boxes", "read_boxes_batch", "DATA_COLUMNS",
    "is_tracked", "label_strings", "AttachResult", "describe", "obb_meta_type", "available", "live_payloads", "ENV_VAR",
    "OBB_META_DESCRIPTOR",
    "UNTRACKED_OBJECT_ID", "NvdsUnavailableError", "LayoutError", "cut_label", "add_display_lines",
    "read_display_lines", "update_objects", "update_objects_batch", "remove_objects", "remove_objects_batch",
    "UpdateResult",
    "OBB_RECT_CLIPPED", "OBB_RECT_ROTATED", "OBB_PREDICTED", "OBB_TRACKED", "attach_classifications",
    "read_classifications", "Label", "Classification",
    "ClassificationResult", "TEXT_CLASS_ID", "native_libraries",
]


def native_libraries() -> tuple:
    """obbmeta.nvds's compiled libraries (writers and readers, the message blob, tensor metas), for ``obbmeta
    doctor``; each ``status()`` says whether it is built and matches this Python code."""
    from . import _core, messages, tensors

    return (_core.NVDS_META, messages.NVDS_MESSAGE, tensors.NVDS_TENSOR)


def obb_meta_type() -> int:
    """The NvDsMetaType of obbmeta's OBB object user meta: ``nvds_get_user_meta_type("OBBMETA.OBB.V1")``."""
    from . import _core

    return _core.get().obb_meta_type


def live_payloads() -> int:
    """OBB payloads written or copied and not yet released by DeepStream: returns to its old value once every
    buffer / batch carrying obbmeta's user meta is freed (a leak check for pipelines and tests)."""
    from . import _core

    return int(_core.get().c.obbmeta_nvds_live_payloads())


def available() -> bool:
    """True when NVIDIA's libnvds_meta was found and its layout recognised."""
    from . import _core

    try:
        _core.get()
        return True
    except (ImportError, LayoutError):
        return False


def describe() -> str:
    """A report for ``obbmeta doctor``: where obbmeta looked, what it loaded, the detected layout, or why not."""
    from . import _core, _library

    lines = ["obbmeta.nvds (DeepStream metadata)"]
    for c in _library.candidates():
        mark = "found" if c.found else "-"
        lines.append(f"  [{mark:5}] {c.source}: {c.folder if c.found else c.note}")
    try:
        core = _core.get()
    except (ImportError, LayoutError, OSError) as exc:
        lines.append(f"  unavailable: {exc}")
        return "\n".join(lines)
    libs = core.libs
    lines.append(f"  libnvds_meta:    {libs.meta_path} (from {libs.source})")
    lines.append(f"  libnvdsgst_meta: {libs.gst_meta_path or 'unavailable: ' + libs.gst_meta_error}"
                 + ("" if libs.gst_meta_path is None or libs._gst_tried else " (loaded on first Gst.Buffer use)"))
    sizes = core.evidence.get("element_size", {})
    lines.append(f"  layout:          {core.layout.name}")
    lines.append("  pool element sizes: " + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    lines.append(f"  OBB user meta:   type {core.obb_meta_type} = nvds_get_user_meta_type(\"{OBB_META_DESCRIPTOR}\")")
    lines.append(f"  rotation_angle mode: {'available' if core.layout.has_rotation_angle else 'not in this layout'}")
    return "\n".join(lines)

