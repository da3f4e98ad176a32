"""The run-time state of obbmeta.nvds: NVIDIA's libraries, the detected layout, and our C writer wired to them."""
from __future__ import annotations

import ctypes
import threading
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_uint32,
    c_uint64,
    c_void_p,
)
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from .._native import NativeLibrary
from . import _library, layouts


class ApiTable(Structure):
    """``obbmeta_nvds_api`` (kernels/nvds_meta.h): addresses of NVIDIA's and glib's functions."""
    _fields_ = [(name, c_void_p) for name in (
        "acquire_obj_meta", "add_obj_meta_to_frame", "acquire_user_meta", "add_user_meta_to_obj",
        "acquire_meta_lock", "release_meta_lock", "get_user_meta_type", "g_malloc", "g_free",
        "acquire_display_meta", "add_display_meta_to_frame", "remove_display_meta_from_frame",
        "remove_obj_meta_from_frame")]


class WriteParams(Structure):
    _fields_ = [("xywhr", c_void_p), ("scores", c_void_p), ("labels", c_void_p), ("n", c_int64),
                ("label_text", POINTER(c_char_p)), ("num_labels", c_int64), ("palette", POINTER(c_double)),
                ("num_colors", c_int64), ("component_id", c_int32), ("border_width", c_uint32),
                ("flags", c_int32), ("component_ids", c_void_p), ("frames", c_void_p), ("offsets", c_void_p),
                ("frame_sizes", c_void_p), ("num_frames", c_int64), ("frame", c_void_p), ("frame_width", c_double),
                ("frame_height", c_double), ("written_mask", c_void_p), ("addresses", c_void_p),
                ("n_filtered", c_int64), ("bad_index", c_int64), ("osd_limit", c_int64), ("parents", c_void_p),
                ("regions", c_void_p)]


class OverlayParams(Structure):
    """``obbmeta_overlay_params`` (kernels/nvds_meta.h): one frame's OBB overlay, inputs then counts."""
    _fields_ = [("palette", c_void_p), ("num_colors", c_int64), ("line_width", c_uint32), ("flags", c_int32),
                ("frame_width", c_double), ("frame_height", c_double)] + [
        (name, c_int64) for name in ("objects", "drawn", "skipped", "outside", "lines", "rects", "display_metas",
                                     "removed", "labels", "hidden")]


class ReadRow(Structure):
    _fields_ = [("address", c_uint64), ("object_id", c_uint64), ("class_id", c_int32), ("component_id", c_int32),
                ("confidence", c_float), ("tracker_confidence", c_float), ("rect", c_float * 4),
                ("detector_bbox", c_float * 4), ("rotation_angle", c_float), ("source", c_int32),
                ("xywhr", c_float * 5), ("corners", c_float * 8), ("obb_flags", c_uint32),
                ("num_user_meta", c_int32), ("label", c_char * layouts.MAX_LABEL_SIZE),
                ("tracker_bbox", c_float * 4), ("parent", c_uint64)]


class UpdateParams(Structure):
    """``obbmeta_update_params`` (kernels/nvds_meta.h): track results onto objects already in frames."""
    _fields_ = [("objects", c_void_p), ("xywhr", c_void_p), ("obb_flags", c_void_p), ("object_ids", c_void_p),
                ("confidence", c_void_p), ("tracker_confidence", c_void_p), ("rotation_angle", c_void_p),
                ("n", c_int64), ("flags", c_int32), ("added", c_int64), ("bad_index", c_int64)]


WRITE_ROTATION = 1
WRITE_TEXT = 2
WRITE_OSD_LIMIT = 4
WRITE_KEEP_INFER_DONE = 8
WRITE_NO_DETECTOR_BBOX = 16
OVERLAY_LABEL, OVERLAY_HIDE_AABB, OVERLAY_NATIVE, OVERLAY_REMOVE_ONLY = 1, 2, 4, 8
OVERLAY_MARK = 0x4F42424D4F564C31  # "OBBMOVL1" in misc_osd_data[3] of obbmeta's overlay display metas
OVERLAY_MARK_SLOT = 3
UPDATE_OBB, UPDATE_OBJECT_ID, UPDATE_RECT, UPDATE_CONFIDENCE, UPDATE_TRACKER_CONFIDENCE = 1, 2, 4, 8, 16
UPDATE_ROTATION = 32


class WriterError(IntEnum):
    """The C writer's negative return codes (``OBBMETA_ERR_*`` in kernels/nvds_meta.c, checked at load)."""
    NOT_READY = -1
    LAYOUT = -2
    INVALID_BOX = -3
    POOL_MISMATCH = -4
    LABEL = -5
    ARGUMENT = -6
    FOREIGN_FRAME = -7

    @property
    def reason(self) -> str:
        return _REASONS[self]


_REASONS = {
    WriterError.NOT_READY: "the C writer is not initialised",
    WriterError.LAYOUT: "unknown layout, or rotation mode on a layout without rotation_angle",
    WriterError.INVALID_BOX: "a box is not finite or has w <= 0 or h <= 0",
    WriterError.POOL_MISMATCH: "the batch's pools do not hold elements of the detected layout (a batch from another "
                               "DeepStream version?)",
    WriterError.LABEL: "a label is negative or has no class name",
    WriterError.ARGUMENT: "bad argument",
    WriterError.FOREIGN_FRAME: "the frame meta belongs to another batch meta (its objects would go back to the wrong "
                               "pools)",
}


def error_reason(code: int) -> str:
    """What a negative C writer return code means (the number itself when it is none of WriterError's)."""
    try:
        return WriterError(code).reason
    except ValueError:
        return str(code)


# What an entry the C side names (bad_index) is, per code, when the caller has nothing more precise to say.
_ENTRY_WORDS = {
    WriterError.INVALID_BOX: "is not finite or has w <= 0 or h <= 0",
    WriterError.LABEL: "is negative or has no class name",
    WriterError.FOREIGN_FRAME: "is not an object meta of this batch",
}


def writer_error(code: int, writer: str, argument: str | None = None, index: int = -1, value: Any = None,
                 detail: str | None = None, layout: layouts.MetaLayout | None = None) -> Exception:
    """The exception for a negative return code of one of the C writer's entry points: one wording per code.

    - ``writer``: which one, as the message names it ("writer", "reader", "overlay writer", ...);
    - ``argument``, ``index``, ``value``: the caller's argument the code is about, the entry the C side named
      (its ``bad_index``; -1: none) and what the caller holds there (shown as ``argument[index] = value``);
    - ``detail``: what the caller can say about that entry (the rest of the sentence, e.g. ``"is listed twice"``;
      one starting with ``:`` or ``;`` follows the value directly); without it the code's own words are used.

    An entry the C side named is a ValueError (INVALID_BOX, LABEL, FOREIGN_FRAME; ARGUMENT only with a
    ``detail``, as that code has many causes); LAYOUT with an ``argument`` on a layout without
    ``NvOSD_RectParams.rotation_angle`` is a ValueError naming that argument (``layout``: the detected one, default
    :func:`get`'s); everything else is a RuntimeError with the code's reason."""
    code = int(code)
    if code == WriterError.LAYOUT and argument is not None:
        layout = layout if layout is not None else get().layout
        if not layout.has_rotation_angle:
            return ValueError(f"{argument}=True needs the DeepStream 9 layout (NvOSD_RectParams.rotation_angle); the "
                              f"loaded library has {layout.name}" + (f"; {detail}" if detail else ""))
    words = detail or _ENTRY_WORDS.get(code)
    if argument is not None and index >= 0 and words and code in (WriterError.INVALID_BOX, WriterError.LABEL,
                                                                   WriterError.FOREIGN_FRAME, WriterError.ARGUMENT):
        shown = f"{argument}[{index}]" + ("" if value is None else f" = {value}")
        return ValueError(shown + ("" if words[0] in ":;" else " ") + words)
    where = f" ({argument}[{index}])" if argument is not None and index >= 0 else ""
    return RuntimeError(f"obbmeta's C {writer} failed: {error_reason(code)}{where}")


def check_error_codes_against_c(c: ctypes.CDLL) -> None:
    """The C library and WriterError must list the same codes in the same order."""
    out = (c_int32 * 32)()
    count = c.obbmeta_nvds_error_codes(out, 32)
    got, want = list(out[:count]), [int(e) for e in WriterError]
    if got != want:
        raise layouts.LayoutError(f"C and Python disagree on the writer's error codes: C {got}, Python {want}")


@dataclass
class Core:
    libs: _library.Libraries
    layout: layouts.MetaLayout
    evidence: dict
    c: ctypes.CDLL
    obb_meta_type: int
    api: ApiTable


_lock = threading.Lock()
_core: Core | None = None


def check_layout_against_c(c: ctypes.CDLL, layout: layouts.MetaLayout) -> None:
    """The ctypes mirror and the C compiler must agree on every offset the writer uses."""
    out = (c_int64 * 28)()
    if c.obbmeta_nvds_layout_info(layout.id, out, 28) != 0:
        raise layouts.LayoutError(f"the C writer does not know layout {layout.name}")
    t = layout.object_meta
    want = [ctypes.sizeof(t)] + [getattr(t, f).offset for f in (
        "parent", "unique_component_id", "class_id", "object_id", "detector_bbox_info", "confidence",
        "rect_params")]
    want += [t.rect_params.offset + layout.rect_params.border_width.offset,
             t.rect_params.offset + layout.rect_params.border_color.offset]
    want += [getattr(t, f).offset for f in ("mask_params", "text_params", "obj_label", "classifier_meta_list",
                                            "obj_user_meta_list", "misc_obj_info")]
    want += [t.rect_params.offset + layout.rect_params.rotation_angle.offset if layout.has_rotation_angle else -1]
    want += [ctypes.sizeof(layouts.FrameMetaHead), ctypes.sizeof(layouts.UserMeta),
             ctypes.sizeof(layouts.ObbPayloadV1)]
    d = layout.display_meta
    want += [ctypes.sizeof(d), d.num_lines.offset, d.line_params.offset, ctypes.sizeof(layouts.LineParams)]
    want += [d.num_rects.offset, d.rect_params.offset, ctypes.sizeof(layout.rect_params), d.misc_osd_data.offset]
    got = list(out)
    if got != want:
        raise layouts.LayoutError(f"C and ctypes disagree on layout {layout.name}: C {got}, ctypes {want}")


def get() -> Core:
    """Load everything once (raises NvdsUnavailableError / LayoutError with the reason)."""
    global _core
    with _lock:
        if _core is not None:
            return _core
        libs = _library.load()
        layout, evidence = layouts.detect(libs.meta)
        c = NVDS_META.load()
        check_layout_against_c(c, layout)
        check_error_codes_against_c(c)
        addr = lambda lib, name: ctypes.cast(getattr(lib, name), c_void_p).value  # noqa: E731
        m = libs.meta
        api = ApiTable(
            addr(m, "nvds_acquire_obj_meta_from_pool"), addr(m, "nvds_add_obj_meta_to_frame"),
            addr(m, "nvds_acquire_user_meta_from_pool"), addr(m, "nvds_add_user_meta_to_obj"),
            addr(m, "nvds_acquire_meta_lock"), addr(m, "nvds_release_meta_lock"),
            addr(m, "nvds_get_user_meta_type"), addr(libs.glib, "g_malloc"), addr(libs.glib, "g_free"),
            addr(m, "nvds_acquire_display_meta_from_pool"), addr(m, "nvds_add_display_meta_to_frame"),
            addr(m, "nvds_remove_display_meta_from_frame"), addr(m, "nvds_remove_obj_meta_from_frame"))
        meta_type = c.obbmeta_nvds_init(ctypes.byref(api))
        if meta_type < layouts.NVDS_START_USER_META:
            raise layouts.LayoutError(f"nvds_get_user_meta_type returned {meta_type}, below NVDS_START_USER_META")
        _core = Core(libs, layout, evidence, c, meta_type, api)
        return _core


# ---------------------------------------------------------------- classifier metadata (obbmeta.nvds.classifier)

class ClassifierApiTable(Structure):
    """``obbmeta_classifier_api`` (kernels/nvds_meta.h): NVIDIA's classifier / label-info functions."""
    _fields_ = [(name, c_void_p) for name in (
        "acquire_classifier_meta", "add_classifier_meta_to_object", "acquire_label_info",
        "add_label_info_to_classifier")]


class ClassifyParams(Structure):
    """``obbmeta_classify_params`` (kernels/nvds_meta.h): objects, their labels as flat arrays, then counts."""
    _fields_ = [("objects", c_void_p), ("n", c_int64), ("label_offsets", c_void_p), ("label_ids", c_void_p),
                ("class_ids", c_void_p), ("probs", c_void_p), ("num_classes", c_void_p), ("text", c_void_p),
                ("text_start", c_void_p), ("text_len", c_void_p), ("cut_len", c_void_p), ("num_labels", c_int64),
                ("component_id", c_int32), ("classifier_type", c_void_p), ("flags", c_int32)] + [
        (name, c_int64) for name in ("classifier_metas", "labels", "long_labels", "frames", "bad_index")]


CLASSIFY_TEXT = 1


# ---------------------------------------------------------------- the C writer library (kernels/nvds_meta.c)

_vp = c_void_p
NVDS_META = NativeLibrary(
    "nvds._nvdsmeta", "C DeepStream metadata writer", abi=9, abi_function="obbmeta_nvds_abi_version",
    functions={
        "obbmeta_nvds_init": (c_int32, [POINTER(ApiTable)]),
        "obbmeta_nvds_obb_meta_type": (c_int32, []),
        "obbmeta_nvds_live_payloads": (c_int64, []),
        "obbmeta_nvds_layout_info": (c_int, [c_int, POINTER(c_int64), c_int]),
        "obbmeta_nvds_attach": (c_int64, [c_int, _vp, _vp]),
        "obbmeta_nvds_add_lines": (c_int64, [c_int, _vp, _vp, _vp, c_int64, _vp, c_int64, c_uint32, c_double,
                                             c_double, POINTER(c_int64)]),
        "obbmeta_nvds_overlay": (c_int64, [c_int, _vp, _vp, _vp]),
        "obbmeta_nvds_read": (c_int64, [c_int, _vp, c_int64, POINTER(ReadRow), c_int64, _vp]),
        "obbmeta_nvds_columns": (c_int64, [_vp, c_int64, c_int64, c_int64, _vp, _vp, _vp]),
        "obbmeta_nvds_update_objects": (c_int64, [c_int, _vp, _vp, _vp, c_int64, _vp, _vp]),
        "obbmeta_nvds_remove_objects": (c_int64, [c_int, _vp, _vp, _vp, c_int64, _vp, POINTER(c_int64)]),
        "obbmeta_nvds_error_codes": (c_int, [POINTER(c_int32), c_int]),
        "obbmeta_nvds_classifier_layout_info": (c_int, [POINTER(c_int64), c_int]),
        "obbmeta_nvds_init_classifier": (c_int32, [POINTER(ClassifierApiTable)]),
        "obbmeta_nvds_classify": (c_int64, [c_int, _vp, _vp]),
    },
    structs={"obbmeta_nvds_api": ApiTable, "obbmeta_write_params": WriteParams,
             "obbmeta_overlay_params": OverlayParams, "obbmeta_read_row": ReadRow,
             "obbmeta_update_params": UpdateParams, "obbmeta_classifier_api": ClassifierApiTable,
             "obbmeta_classify_params": ClassifyParams},
    constants={"OBBMETA_WRITE_ROTATION": WRITE_ROTATION, "OBBMETA_WRITE_TEXT": WRITE_TEXT,
               "OBBMETA_WRITE_OSD_LIMIT": WRITE_OSD_LIMIT, "OBBMETA_WRITE_KEEP_INFER_DONE": WRITE_KEEP_INFER_DONE,
               "OBBMETA_WRITE_NO_DETECTOR_BBOX": WRITE_NO_DETECTOR_BBOX, "OBBMETA_OVERLAY_LABEL": OVERLAY_LABEL,
               "OBBMETA_OVERLAY_HIDE_AABB": OVERLAY_HIDE_AABB, "OBBMETA_OVERLAY_NATIVE": OVERLAY_NATIVE,
               "OBBMETA_OVERLAY_REMOVE_ONLY": OVERLAY_REMOVE_ONLY, "OBBMETA_OVERLAY_MARK": OVERLAY_MARK,
               "OBBMETA_OVERLAY_MARK_SLOT": OVERLAY_MARK_SLOT, "OBBMETA_UPDATE_OBB": UPDATE_OBB,
               "OBBMETA_UPDATE_OBJECT_ID": UPDATE_OBJECT_ID, "OBBMETA_UPDATE_RECT": UPDATE_RECT,
               "OBBMETA_UPDATE_ROTATION": UPDATE_ROTATION,
               "OBBMETA_UPDATE_CONFIDENCE": UPDATE_CONFIDENCE,
               "OBBMETA_UPDATE_TRACKER_CONFIDENCE": UPDATE_TRACKER_CONFIDENCE, "OBBMETA_CLASSIFY_TEXT": CLASSIFY_TEXT,
               "OBBMETA_MAX_LABEL": layouts.MAX_LABEL_SIZE, "OBBMETA_OBB_VERSION": layouts.OBB_VERSION,
               "OBBMETA_OBB_RECT_CLIPPED": layouts.OBB_RECT_CLIPPED,
               "OBBMETA_OBB_RECT_ROTATED": layouts.OBB_RECT_ROTATED, "OBBMETA_OBB_PREDICTED": layouts.OBB_PREDICTED,
               "OBBMETA_OBB_TRACKED": layouts.OBB_TRACKED, "OBBMETA_SOURCE_USER_META": layouts.SOURCE_USER_META,
               "OBBMETA_SOURCE_ROTATION": layouts.SOURCE_ROTATION, "OBBMETA_SOURCE_AABB": layouts.SOURCE_AABB,
               "OBBMETA_SOURCE_PREDICTED": layouts.SOURCE_PREDICTED},
    table_function="obbmeta_nvds_abi_table",
    # short calls that take the batch lock: kept without a handoff of the interpreter lock where the caller holds
    # the batch lock already (obbmeta.nvds.batch.holds_lock). Not the removal, one call a batch: NVIDIA's removal
    # of each object looks it up in the batch pool's lists (the call puts what it removes first, but a tracker's
    # removals from a batch of thousands of objects still take a millisecond or more), so it runs without the lock.
    # obbmeta_nvds_columns takes no lock and only copies memory: always called _held.
    held=("obbmeta_nvds_attach", "obbmeta_nvds_read", "obbmeta_nvds_update_objects", "obbmeta_nvds_overlay",
          "obbmeta_nvds_add_lines", "obbmeta_nvds_columns"))

_classifier_lock = threading.Lock()
_classifier_core: Core | None = None
classifier_api: ClassifierApiTable | None = None


def check_classifier_layout_against_c(c: ctypes.CDLL) -> None:
    """The ctypes mirrors of NvDsClassifierMeta / NvDsLabelInfo and the C compiler must agree."""
    out = (c_int64 * 12)()
    if c.obbmeta_nvds_classifier_layout_info(out, 12) != 0:
        raise layouts.LayoutError("the C writer does not report the classifier layout")
    cm, li = layouts.ClassifierMeta, layouts.LabelInfo
    want = [ctypes.sizeof(cm)] + [getattr(cm, f).offset for f in (
        "num_labels", "unique_component_id", "label_info_list", "classifier_type")]
    want += [ctypes.sizeof(li)] + [getattr(li, f).offset for f in (
        "num_classes", "result_label", "pResult_label", "result_class_id", "label_id", "result_prob")]
    if list(out) != want:
        raise layouts.LayoutError(f"C and ctypes disagree on the classifier layout: C {list(out)}, ctypes {want}")


def get_classifier() -> Core:
    """:func:`get`, and on first use: the classifier pools' element sizes and the C / ctypes offsets checked
    (LayoutError otherwise), NVIDIA's classifier functions installed in the C core."""
    global _classifier_core, classifier_api
    if _classifier_core is not None:  # set once, never unset: no lock needed to read it
        return _classifier_core
    with _classifier_lock:
        if _classifier_core is not None:
            return _classifier_core
        core = get()
        layouts.check_classifier_sizes(core.evidence.get("element_size", {}))
        c = core.c
        check_classifier_layout_against_c(c)
        m = core.libs.meta
        api = ClassifierApiTable(*(ctypes.cast(getattr(m, name), c_void_p).value for name in (
            "nvds_acquire_classifier_meta_from_pool", "nvds_add_classifier_meta_to_object",
            "nvds_acquire_label_info_meta_from_pool", "nvds_add_label_info_meta_to_classifier")))
        if c.obbmeta_nvds_init_classifier(ctypes.byref(api)) != 0:
            raise layouts.LayoutError("libnvds_meta lacks one of the classifier functions")
        classifier_api = api  # what was installed (a test that installs another table puts this one back)
        _classifier_core = core
        return core
