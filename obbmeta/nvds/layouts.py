"""ctypes mirrors of the DeepStream metadata structs obbmeta reads, per layout, and run-time layout detection.

Our own definitions, written from NVIDIA's public headers (DeepStream 9.1 ``nvdsmeta.h`` / ``nvll_osd_struct.h``):

* ``DS6_8`` (DeepStream 6.x - 8.0): ``NvOSD_RectParams`` ends at ``color_id`` (104 bytes); ``NvDsObjectMeta`` is 544.
* ``DS9`` (DeepStream 9.x): ``float rotation_angle`` appended to ``NvOSD_RectParams`` (112 bytes); every later field
  of ``NvDsObjectMeta`` moved by 8 bytes (552 bytes) and ``NvDsDisplayMeta`` grew from 6912 to 7040 bytes.

The layout is never assumed from a version string: :func:`detect` reads the pools' ``element_size`` and checks the
library's own initialisation of freshly acquired elements on a private batch.
"""
from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, c_char, c_double, c_float, c_int, c_int64, c_uint, c_uint64, c_void_p
from dataclasses import dataclass

NVDS_FRAME_META = 2
NVDS_OBJ_META = 3
NVDS_CLASSIFIER_META = 5
NVDS_LABEL_INFO_META = 6
NVDS_USER_META = 7
NVDS_EVENT_MSG_META = 9  # the 9th NvDsMetaType member from DeepStream 4.0 to 9.1
NVDS_BATCH_GST_META = 4096 + 1
NVDS_START_USER_META = 4096 + 4096 + 1
UNTRACKED_OBJECT_ID = 0xFFFFFFFFFFFFFFFF
MAX_LABEL_SIZE = 128
MAX_ELEMENTS_IN_DISPLAY_META = 16

# The wire constants of obbmeta's OBB payload and reader (kernels/nvds_meta.h), compared with the compiled library's
# table when it loads (obbmeta/nvds/_core.py): the payload's version, its flag bits, where a read box came from.
OBB_VERSION = 1
OBB_RECT_CLIPPED = 1  # rect_params was clipped to the frame
OBB_RECT_ROTATED = 2  # DS 9 mode: rect_params is the un-rotated box + rotation_angle
OBB_PREDICTED = 4     # obbmeta.track predicted it from the object's track: no detector OBB on this frame
OBB_TRACKED = 8       # obbmeta.track moved / smoothed the detector's OBB along the object's track
SOURCE_USER_META, SOURCE_ROTATION, SOURCE_AABB, SOURCE_PREDICTED = 0, 1, 2, 3
SOURCES = {SOURCE_USER_META: "user_meta", SOURCE_ROTATION: "rotation_angle", SOURCE_AABB: "aabb",
           SOURCE_PREDICTED: "predicted"}


class GList(Structure):
    pass


GList._fields_ = [("data", c_void_p), ("next", POINTER(GList)), ("prev", POINTER(GList))]


class BaseMeta(Structure):
    _fields_ = [("batch_meta", c_void_p), ("meta_type", c_int), ("uContext", c_void_p),
                ("copy_func", c_void_p), ("release_func", c_void_p)]


class MetaPool(Structure):
    _fields_ = [("meta_type", c_int), ("max_elements_in_pool", c_uint), ("element_size", c_uint),
                ("num_empty_elements", c_uint), ("num_full_elements", c_uint),
                ("empty_list", POINTER(GList)), ("full_list", POINTER(GList)),
                ("copy_func", c_void_p), ("release_func", c_void_p)]


class BatchMetaHead(Structure):
    """NvDsBatchMeta up to its lists (the GRecMutex after them is only used through NVIDIA's lock functions)."""
    _fields_ = [("base_meta", BaseMeta), ("max_frames_in_batch", c_uint), ("num_frames_in_batch", c_uint),
                ("frame_meta_pool", POINTER(MetaPool)), ("obj_meta_pool", POINTER(MetaPool)),
                ("classifier_meta_pool", POINTER(MetaPool)), ("display_meta_pool", POINTER(MetaPool)),
                ("user_meta_pool", POINTER(MetaPool)), ("label_info_meta_pool", POINTER(MetaPool)),
                ("frame_meta_list", POINTER(GList)), ("batch_user_meta_list", POINTER(GList))]


class FrameMetaHead(Structure):
    """NvDsFrameMeta up to pipeline_height: the same in DeepStream 6.x - 9.x."""
    _fields_ = [("base_meta", BaseMeta), ("pad_index", c_uint), ("batch_id", c_uint), ("frame_num", c_int),
                ("buf_pts", c_uint64), ("ntp_timestamp", c_uint64), ("source_id", c_uint),
                ("num_surfaces_per_frame", c_int), ("source_frame_width", c_uint),
                ("source_frame_height", c_uint), ("surface_type", c_uint), ("surface_index", c_uint),
                ("num_obj_meta", c_uint), ("bInferDone", c_int), ("obj_meta_list", POINTER(GList)),
                ("display_meta_list", POINTER(GList)), ("frame_user_meta_list", POINTER(GList)),
                ("misc_frame_info", c_int64 * 4), ("pipeline_width", c_uint), ("pipeline_height", c_uint)]


class ColorParams(Structure):
    _fields_ = [("red", c_double), ("green", c_double), ("blue", c_double), ("alpha", c_double)]


class BboxCoords(Structure):
    _fields_ = [("left", c_float), ("top", c_float), ("width", c_float), ("height", c_float)]


class FontParams(Structure):
    _fields_ = [("font_name", c_void_p), ("font_size", c_uint), ("font_color", ColorParams)]


class TextParams(Structure):
    _fields_ = [("display_text", c_void_p), ("x_offset", c_uint), ("y_offset", c_uint),
                ("font_params", FontParams), ("set_bg_clr", c_int), ("text_bg_clr", ColorParams)]


class MaskParams(Structure):
    _fields_ = [("data", c_void_p), ("size", c_uint), ("threshold", c_float), ("width", c_uint),
                ("height", c_uint)]


_RECT_COMMON = [("left", c_float), ("top", c_float), ("width", c_float), ("height", c_float),
                ("border_width", c_uint), ("border_color", ColorParams), ("has_bg_color", c_uint),
                ("reserved", c_uint), ("bg_color", ColorParams), ("has_color_info", c_int), ("color_id", c_int)]


class RectParamsDS6_8(Structure):
    _fields_ = _RECT_COMMON


class RectParamsDS9(Structure):
    _fields_ = _RECT_COMMON + [("rotation_angle", c_float)]


class LineParams(Structure):
    _fields_ = [("x1", c_uint), ("y1", c_uint), ("x2", c_uint), ("y2", c_uint), ("line_width", c_uint),
                ("line_color", ColorParams)]


class ArrowParams(Structure):
    _fields_ = [("x1", c_uint), ("y1", c_uint), ("x2", c_uint), ("y2", c_uint), ("arrow_width", c_uint),
                ("arrow_head", c_int), ("arrow_color", ColorParams), ("reserved", c_uint)]


class CircleParams(Structure):
    _fields_ = [("xc", c_uint), ("yc", c_uint), ("radius", c_uint), ("circle_color", ColorParams),
                ("has_bg_color", c_uint), ("bg_color", ColorParams), ("circle_width", c_uint),
                ("reserved", c_uint)]


def _object_meta(name: str, rect: type) -> type:
    return type(name, (Structure,), {"_fields_": [
        ("base_meta", BaseMeta), ("parent", c_void_p), ("unique_component_id", c_int), ("class_id", c_int),
        ("object_id", c_uint64), ("detector_bbox_info", BboxCoords), ("tracker_bbox_info", BboxCoords),
        ("confidence", c_float), ("tracker_confidence", c_float), ("rect_params", rect),
        ("mask_params", MaskParams), ("text_params", TextParams), ("obj_label", c_char * MAX_LABEL_SIZE),
        ("classifier_meta_list", POINTER(GList)), ("obj_user_meta_list", POINTER(GList)),
        ("misc_obj_info", c_int64 * 4), ("reserved", c_int64 * 4)]})


def _display_meta(name: str, rect: type) -> type:
    n = MAX_ELEMENTS_IN_DISPLAY_META
    return type(name, (Structure,), {"_fields_": [
        ("base_meta", BaseMeta), ("num_rects", c_uint), ("num_labels", c_uint), ("num_lines", c_uint),
        ("num_arrows", c_uint), ("num_circles", c_uint), ("rect_params", rect * n), ("text_params", TextParams * n),
        ("line_params", LineParams * n), ("arrow_params", ArrowParams * n), ("circle_params", CircleParams * n),
        ("misc_osd_data", c_int64 * 4), ("reserved", c_int64 * 4)]})


ObjectMetaDS6_8 = _object_meta("ObjectMetaDS6_8", RectParamsDS6_8)
ObjectMetaDS9 = _object_meta("ObjectMetaDS9", RectParamsDS9)
DisplayMetaDS6_8 = _display_meta("DisplayMetaDS6_8", RectParamsDS6_8)
DisplayMetaDS9 = _display_meta("DisplayMetaDS9", RectParamsDS9)


class UserMeta(Structure):
    _fields_ = [("base_meta", BaseMeta), ("user_meta_data", c_void_p)]


class ObjectSignature(Structure):
    """``NvDsObjectSignature``: ``size`` doubles at ``signature`` (16 bytes with padding)."""
    _fields_ = [("signature", POINTER(c_double)), ("size", c_uint)]


class EventMsgMetaHead(Structure):
    """``NvDsEventMsgMeta`` (nvdsmeta_schema.h) up to ``sensorStr``: the same members in DeepStream 7.0 - 9.1 (API
    reference field lists of 7.0 / 7.1 / 8.0 / 9.1, the 8.0 header, the v9.0.0 / v9.1.0 tags); offsets measured with
    offsetof() on the v9.1.0 header and asserted in kernels/nvds_message.c. ``bbox`` is NvDsRect: top, left, width,
    height in that order. Later members differ by version and are never read here."""
    _fields_ = [("type", c_int), ("objType", c_int), ("bbox", c_float * 4), ("location", c_double * 3),
                ("coordinate", c_double * 3), ("objSignature", ObjectSignature),
                ("objClassId", c_int), ("sensorId", c_int), ("moduleId", c_int), ("placeId", c_int),
                ("componentId", c_int), ("frameId", c_int), ("confidence", c_double), ("trackingId", c_uint64),
                ("ts", ctypes.c_char_p), ("objectId", ctypes.c_char_p), ("sensorStr", ctypes.c_char_p)]


class ObbPayloadV1(Structure):
    """The OBB object user meta payload (``obbmeta_obb_v1`` in kernels/nvds_meta.h)."""
    _fields_ = [("version", c_uint), ("struct_size", c_uint), ("cx", c_float), ("cy", c_float), ("w", c_float),
                ("h", c_float), ("angle", c_float), ("corners", c_float * 8), ("flags", c_uint)]


class ClassifierMeta(Structure):
    """``NvDsClassifierMeta``: the same members from DeepStream 6.0 (which added ``classifier_type``; 5.x had 56
    bytes) through 7.1, 8.0 and 9.1 (the API references of 6.0 - 9.1, the 6.x headers, the v9.0.0 / v9.1.0 tags);
    64 bytes."""
    _fields_ = [("base_meta", BaseMeta), ("num_labels", c_uint), ("unique_component_id", c_int),
                ("label_info_list", POINTER(GList)), ("classifier_type", c_void_p)]


class LabelInfo(Structure):
    """``NvDsLabelInfo``: unchanged from DeepStream 4.0 to 9.1; 200 bytes. ``pResult_label`` holds the whole label
    when it does not fit ``result_label`` (NVIDIA's release ``g_free``s it, NVIDIA's copy ``g_strdup``s it)."""
    _fields_ = [("base_meta", BaseMeta), ("num_classes", c_uint), ("result_label", c_char * MAX_LABEL_SIZE),
                ("pResult_label", c_void_p), ("result_class_id", c_uint), ("label_id", c_uint),
                ("result_prob", c_float)]


def check_classifier_sizes(sizes: dict) -> None:
    """LayoutError unless the classifier and label-info pools (``sizes``: detect()'s element sizes) hold the
    structs above: classifier metadata is neither written nor read in a layout obbmeta cannot verify."""
    want = {"classifier": ctypes.sizeof(ClassifierMeta), "label_info": ctypes.sizeof(LabelInfo)}
    got = {k: sizes.get(k) for k in want}
    if got != want:
        raise LayoutError(
            f"libnvds_meta's pools hold NvDsClassifierMeta of {got['classifier']} bytes and NvDsLabelInfo of "
            f"{got['label_info']}; obbmeta knows {want['classifier']} and {want['label_info']} (DeepStream 6.0 - "
            "9.x). Refusing to write or read classifier metadata in a layout it cannot verify.")


@dataclass(frozen=True)
class MetaLayout:
    """One layout of DeepStream's metadata structs (object, rect, display meta). ``id`` is the C writer's
    OBBMETA_LAYOUT_* value. (``obbmeta.frames.SurfaceLayout`` is the other kind: NvBufSurface's.)"""
    name: str
    id: int
    object_meta: type
    rect_params: type
    display_meta: type
    has_rotation_angle: bool

    @property
    def object_meta_size(self) -> int:
        return ctypes.sizeof(self.object_meta)


DS6_8 = MetaLayout("DeepStream 6.x-8.0 (NvOSD_RectParams without rotation_angle)", 1, ObjectMetaDS6_8, RectParamsDS6_8,
               DisplayMetaDS6_8, False)
DS9 = MetaLayout("DeepStream 9.x (NvOSD_RectParams.rotation_angle)", 2, ObjectMetaDS9, RectParamsDS9, DisplayMetaDS9,
             True)
LAYOUTS = (DS9, DS6_8)


class LayoutError(RuntimeError):
    """The loaded libnvds_meta.so has struct sizes that match no layout obbmeta knows: nothing is written."""


def match(obj_size: int, user_size: int, frame_size: int) -> MetaLayout:
    """The layout whose NvDsObjectMeta size is ``obj_size``; LayoutError (saying what was seen) otherwise."""
    for layout in LAYOUTS:
        if (obj_size == layout.object_meta_size and user_size == ctypes.sizeof(UserMeta)
                and frame_size >= ctypes.sizeof(FrameMetaHead)):
            return layout
    known = ", ".join(f"{lay.object_meta_size} ({lay.name})" for lay in LAYOUTS)
    raise LayoutError(
        f"libnvds_meta's pools hold NvDsObjectMeta of {obj_size} bytes, NvDsUserMeta of {user_size} and "
        f"NvDsFrameMeta of {frame_size}; obbmeta knows NvDsObjectMeta sizes {known} with NvDsUserMeta "
        f"{ctypes.sizeof(UserMeta)} and NvDsFrameMeta >= {ctypes.sizeof(FrameMetaHead)}. Refusing to write "
        "metadata into a layout it cannot verify.")


def detect(meta_lib: ctypes.CDLL) -> tuple[MetaLayout, dict]:
    """Detect the layout of ``meta_lib`` on a private batch; returns (layout, evidence for describe())."""
    batch = meta_lib.nvds_create_batch_meta(1)
    if not batch:
        raise LayoutError("nvds_create_batch_meta(1) returned NULL")
    try:
        head = BatchMetaHead.from_address(batch)
        sizes = {name: getattr(head, name + "_meta_pool").contents.element_size
                 for name in ("frame", "obj", "user", "display", "classifier", "label_info")}
        layout = match(sizes["obj"], sizes["user"], sizes["frame"])
        # The library's own initialisation of fresh elements, read through our offsets.
        frame = meta_lib.nvds_acquire_frame_meta_from_pool(batch)
        obj = meta_lib.nvds_acquire_obj_meta_from_pool(batch)
        fm = FrameMetaHead.from_address(frame)
        om = layout.object_meta.from_address(obj)
        problems = []
        if fm.base_meta.meta_type != NVDS_FRAME_META or fm.base_meta.batch_meta != batch:
            problems.append("a fresh frame meta's base_meta is not (batch, NVDS_FRAME_META)")
        if om.base_meta.meta_type != NVDS_OBJ_META or om.base_meta.batch_meta != batch or not om.base_meta.release_func:
            problems.append("a fresh object meta's base_meta is not (batch, NVDS_OBJ_META, release_func)")
        raw = ctypes.string_at(obj + ctypes.sizeof(BaseMeta), layout.object_meta_size - ctypes.sizeof(BaseMeta))
        if raw.count(0) != len(raw):
            problems.append("a fresh object meta is not zeroed after base_meta")
        meta_lib.nvds_add_frame_meta_to_batch(batch, frame)
        meta_lib.nvds_add_obj_meta_to_frame(frame, obj, None)
        if head.num_frames_in_batch != 1 or not head.frame_meta_list or head.frame_meta_list.contents.data != frame:
            problems.append("nvds_add_frame_meta_to_batch did not update num_frames_in_batch / frame_meta_list")
        if fm.num_obj_meta != 1 or not fm.obj_meta_list or fm.obj_meta_list.contents.data != obj:
            problems.append("nvds_add_obj_meta_to_frame did not update num_obj_meta / obj_meta_list")
        if om.parent:
            problems.append("nvds_add_obj_meta_to_frame(frame, obj, NULL) left a parent")
        if problems:
            raise LayoutError(f"layout {layout.name} matched by size but not by behaviour: " + "; ".join(problems))
        return layout, {"element_size": sizes}
    finally:
        meta_lib.nvds_destroy_batch_meta(batch)

