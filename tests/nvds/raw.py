"""The tests' own view of NVIDIA's DeepStream 9.1 structs: byte offsets worked out by hand from the public headers
(`nvdsmeta.h`, `nvll_osd_struct.h`, LP64), read and written as raw memory.

Deliberately a different representation from obbmeta.nvds.layouts (ctypes Structures): the tests assert what
NVIDIA's own functions do through these numbers, so a mistake in either one shows up as a disagreement.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

# NvDsBaseMeta: batch_meta 0, meta_type 8, uContext 16, copy_func 24, release_func 32 (40 bytes).
BASE_BATCH, BASE_TYPE, BASE_COPY, BASE_RELEASE = 0, 8, 24, 32

BATCH = dict(max_frames_in_batch=40, num_frames_in_batch=44, frame_pool=48, obj_pool=56, classifier_pool=64,
             display_pool=72, user_pool=80, label_pool=88, frame_meta_list=96, batch_user_meta_list=104)
POOL = dict(meta_type=0, max_elements=4, element_size=8, num_empty=12, num_full=16, empty_list=24, full_list=32)

FRAME = dict(pad_index=40, batch_id=44, frame_num=48, buf_pts=56, source_id=72, source_frame_width=80,
             source_frame_height=84, num_obj_meta=96, bInferDone=100, obj_meta_list=104, display_meta_list=112,
             frame_user_meta_list=120, pipeline_width=160, pipeline_height=164)

# NvDsObjectMeta, DeepStream 9.x (NvOSD_RectParams is 112 bytes with rotation_angle at +104).
OBJ = dict(parent=40, unique_component_id=48, class_id=52, object_id=56, det_left=64, det_top=68, det_width=72,
           det_height=76, trk_left=80, confidence=96, tracker_confidence=100,
           rect_left=104, rect_top=108, rect_width=112, rect_height=116, border_width=120, border_color=128,
           has_bg_color=160, bg_color=168, has_color_info=200, color_id=204, rotation_angle=208,
           mask_data=216, mask_size=224, display_text=240, text_x=248, text_y=252, font_name=256, font_size=264,
           font_color=272, set_bg_clr=304, text_bg_clr=312, obj_label=344, classifier_meta_list=472,
           obj_user_meta_list=480, misc_obj_info=488, reserved=520)
OBJ_SIZE = 552

# NvDsDisplayMeta, DeepStream 9.x: 5 counters after base_meta, then 16 rects (112 bytes each), 16 texts (104),
# 16 lines (56: x1, y1, x2, y2, line_width as uint32, line_color 4 doubles at +24); 7040 bytes.
# Then 16 arrows (64 bytes: 6 uint32, line colour at +24, reserved at +56, padded) and 16 circles (96 bytes: 3
# uint32, colour at +16, has_bg_color +48, bg_color +56, circle_width +88, reserved +92): misc_osd_data[4] (int64)
# at 64 + 16 * (112 + 104 + 56 + 64 + 96) = 6976, reserved[4] at 7008.
DISPLAY = dict(num_rects=40, num_labels=44, num_lines=48, num_arrows=52, num_circles=56, rect_params=64,
               text_params=64 + 16 * 112, line_params=64 + 16 * 112 + 16 * 104, misc_osd_data=6976, reserved=7008)
DISPLAY_SIZE = 7040
LINE_SIZE = 56
# NvOSD_RectParams (DS 9) inside a display meta: left 0, top 4, width 8, height 12, border_width 16,
# border_color 24 (4 doubles), has_bg_color 56, bg_color 64, has_color_info 96, color_id 100, rotation_angle 104.
RECT = dict(left=0, top=4, width=8, height=12, border_width=16, border_color=24, has_bg_color=56,
            rotation_angle=104)
RECT_SIZE = 112

USER = dict(user_meta_data=40)
USER_SIZE = 48

# obbmeta's payload obbmeta_obb_v1 (docs/nvds.md): version, struct_size, cx, cy, w, h, angle, corners[8], flags.
PAYLOAD = dict(version=0, struct_size=4, cx=8, cy=12, w=16, h=20, angle=24, corners=28, flags=60)
PAYLOAD_SIZE = 64

NVDS_FRAME_META, NVDS_OBJ_META, NVDS_USER_META = 2, 3, 7
UNTRACKED = 0xFFFFFFFFFFFFFFFF


def u32(addr: int) -> int:
    return ctypes.c_uint32.from_address(addr).value


def i32(addr: int) -> int:
    return ctypes.c_int32.from_address(addr).value


def u64(addr: int) -> int:
    return ctypes.c_uint64.from_address(addr).value


def f32(addr: int) -> float:
    return ctypes.c_float.from_address(addr).value


def f64(addr: int) -> float:
    return ctypes.c_double.from_address(addr).value


def ptr(addr: int) -> int:
    return ctypes.c_void_p.from_address(addr).value or 0


def cstr(addr: int) -> bytes:
    return ctypes.string_at(addr)


def glist(head: int) -> list[int]:
    """The data pointers of a GList (data at 0, next at 8)."""
    out = []
    node = head
    while node:
        out.append(ptr(node))
        node = ptr(node + 8)
    return out


def frames_of(batch: int) -> list[int]:
    return glist(ptr(batch + BATCH["frame_meta_list"]))


def objects_of(frame: int) -> list[int]:
    return glist(ptr(frame + FRAME["obj_meta_list"]))


def display_metas_of(frame: int) -> list[int]:
    return glist(ptr(frame + FRAME["display_meta_list"]))


def lines_of(display: int, offsets: dict | None = None) -> list[tuple]:
    """(x1, y1, x2, y2, line_width, (r, g, b, a)) of a display meta's lines; `offsets`: DISPLAY (DS 9, default) or
    DISPLAY_DS8."""
    offsets = DISPLAY if offsets is None else offsets
    out = []
    for k in range(u32(display + offsets["num_lines"])):
        a = display + offsets["line_params"] + k * LINE_SIZE
        out.append((u32(a), u32(a + 4), u32(a + 8), u32(a + 12), u32(a + 16),
                    tuple(f64(a + 24 + 8 * i) for i in range(4))))
    return out


def rects_of(display: int) -> list[tuple]:
    """(left, top, width, height, border_width, (r, g, b, a), rotation_angle) of a display meta's rects."""
    out = []
    for k in range(u32(display + DISPLAY["num_rects"])):
        a = display + DISPLAY["rect_params"] + k * RECT_SIZE
        out.append((f32(a), f32(a + 4), f32(a + 8), f32(a + 12), u32(a + RECT["border_width"]),
                    tuple(f64(a + RECT["border_color"] + 8 * i) for i in range(4)), f32(a + RECT["rotation_angle"])))
    return out


def pool_counts(batch: int, pool: str) -> tuple[int, int]:
    """(num_full_elements, num_empty_elements) of one of the batch's pools."""
    p = ptr(batch + BATCH[pool])
    return u32(p + POOL["num_full"]), u32(p + POOL["num_empty"])


def user_metas_of(obj: int) -> list[int]:
    return glist(ptr(obj + OBJ["obj_user_meta_list"]))


def pool_element_size(batch: int, pool: str) -> int:
    return u32(ptr(batch + BATCH[pool]) + POOL["element_size"])


def load_nvds_meta() -> ctypes.CDLL:
    """NVIDIA's library from the wheel, opened by the tests themselves (the same file obbmeta loads)."""
    from obbmeta.nvds import _library

    lib = ctypes.CDLL(str(_library.load().meta_path))
    vp = ctypes.c_void_p
    for name, args, res in (
        ("nvds_create_batch_meta", [ctypes.c_uint], vp), ("nvds_destroy_batch_meta", [vp], ctypes.c_int),
        ("nvds_acquire_frame_meta_from_pool", [vp], vp), ("nvds_add_frame_meta_to_batch", [vp, vp], None),
        ("nvds_acquire_obj_meta_from_pool", [vp], vp), ("nvds_add_obj_meta_to_frame", [vp, vp, vp], None),
        ("nvds_acquire_user_meta_from_pool", [vp], vp), ("nvds_add_user_meta_to_obj", [vp, vp], None),
        ("nvds_copy_obj_meta", [vp, vp], None), ("nvds_batch_meta_copy_func", [vp, vp], vp),
        ("nvds_batch_meta_release_func", [vp, vp], None), ("nvds_clear_obj_meta_list", [vp, vp], None),
        ("nvds_get_user_meta_type", [ctypes.c_char_p], ctypes.c_int),
        ("nvds_acquire_classifier_meta_from_pool", [vp], vp), ("nvds_add_classifier_meta_to_object", [vp, vp], None),
        ("nvds_acquire_label_info_meta_from_pool", [vp], vp),
        ("nvds_add_label_info_meta_to_classifier", [vp, vp], None),
        ("nvds_remove_obj_meta_from_frame", [vp, vp], None), ("nvds_remove_classifier_meta_from_obj", [vp, vp], None),
    ):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


def wheel_lib_dir() -> Path:
    from obbmeta.nvds import _library

    return _library.load().meta_path.parent


# ---------------------------------------------------------------- DeepStream 6.x - 8.0 (no rotation_angle)
# The same structs as above without the trailing `float rotation_angle` of NvOSD_RectParams, worked out by hand
# from the facts in NVIDIA's headers (LP64, natural alignment):
# NvOSD_RectParams: left 0, top 4, width 8, height 12, border_width 16, (4 padding) border_color 24 (4 doubles),
# has_bg_color 56, reserved 60, bg_color 64 (4 doubles), has_color_info 96, color_id 100: 104 bytes, a multiple of
# its 8-byte alignment, so no tail padding.
RECT_DS8 = dict(left=0, top=4, width=8, height=12, border_width=16, border_color=24, has_bg_color=56, reserved=60,
                bg_color=64, has_color_info=96, color_id=100)
RECT_SIZE_DS8 = 104

# NvDsObjectMeta, DeepStream 6.x - 8.0: identical to DS 9 up to rect_params (104), which ends at 208. Then
# NvOSD_MaskParams at 208 (data 8, size 4, threshold 4, width 4, height 4 -> 24 bytes), NvOSD_TextParams at 232
# (display_text 232, x_offset 240, y_offset 244, font_params 248 = {font_name 248, font_size 256, font_color 264},
# set_bg_clr 296, text_bg_clr 304 -> 104 bytes), obj_label[128] at 336, classifier_meta_list 464,
# obj_user_meta_list 472, misc_obj_info[4] 480, reserved[4] 512: 544 bytes.
OBJ_DS8 = dict(parent=40, unique_component_id=48, class_id=52, object_id=56, det_left=64, det_top=68, det_width=72,
               det_height=76, trk_left=80, confidence=96, tracker_confidence=100,
               rect_left=104, rect_top=108, rect_width=112, rect_height=116, border_width=120, border_color=128,
               has_bg_color=160, bg_color=168, has_color_info=200, color_id=204,
               mask_data=208, mask_size=216, display_text=232, text_x=240, text_y=244, font_name=248,
               font_size=256, font_color=264, set_bg_clr=296, text_bg_clr=304, obj_label=336,
               classifier_meta_list=464, obj_user_meta_list=472, misc_obj_info=480, reserved=512)
OBJ_SIZE_DS8 = 544

# NvDsDisplayMeta, DeepStream 6.x - 8.0: base 0, 5 counters 40..60, (4 padding) then 16 rects of 104 bytes at 64,
# 16 texts of 104 at 1728, 16 lines of 56 at 3392, 16 arrows of 64 at 4288, 16 circles of 96 at 5312,
# misc_osd_data[4] at 6848, reserved[4] at 6880: 6912 bytes.
DISPLAY_DS8 = dict(num_rects=40, num_labels=44, num_lines=48, num_arrows=52, num_circles=56, rect_params=64,
                   text_params=64 + 16 * 104, line_params=64 + 16 * 104 + 16 * 104,
                   arrow_params=64 + 16 * 104 + 16 * 104 + 16 * 56,
                   circle_params=64 + 16 * 104 + 16 * 104 + 16 * 56 + 16 * 64,
                   misc_osd_data=6848, reserved=6880)
DISPLAY_SIZE_DS8 = 6912

NVDS_BATCH_META, NVDS_DISPLAY_META = 1, 4


def lines_of_ds8(display: int) -> list[tuple]:
    """:func:`lines_of` at the DS 6-8 offsets."""
    return lines_of(display, DISPLAY_DS8)


def user_metas_of_ds8(obj: int) -> list[int]:
    return glist(ptr(obj + OBJ_DS8["obj_user_meta_list"]))


# ---------------------------------------------------------------- classifier metadata (DeepStream 6.0 - 9.x)
# NvDsClassifierMeta: base_meta 0..40, num_labels (guint) 40, unique_component_id (gint) 44, label_info_list 48,
# classifier_type (const gchar *) 56: 64 bytes.
CLASSIFIER = dict(num_labels=40, unique_component_id=44, label_info_list=48, classifier_type=56)
CLASSIFIER_SIZE = 64
# NvDsLabelInfo: base_meta 0..40, num_classes (guint) 40, result_label[128] 44..172, (4 padding) pResult_label
# 176, result_class_id 184, label_id 188, result_prob (float) 192, (4 padding to the 8-byte alignment): 200 bytes.
LABEL = dict(num_classes=40, result_label=44, pResult_label=176, result_class_id=184, label_id=188, result_prob=192)
LABEL_SIZE = 200
NVDS_CLASSIFIER_META, NVDS_LABEL_INFO_META = 5, 6


def classifier_metas_of(obj: int, offsets: dict | None = None) -> list[int]:
    """An object's classifier_meta_list; `offsets`: OBJ (DS 9, default) or OBJ_DS8."""
    return glist(ptr(obj + (OBJ if offsets is None else offsets)["classifier_meta_list"]))


def label_infos_of(classifier: int) -> list[int]:
    return glist(ptr(classifier + CLASSIFIER["label_info_list"]))


def label_fields(label: int) -> dict:
    """Every field of one NvDsLabelInfo; result_label as its 128 raw bytes, pResult_label as bytes or None."""
    long = ptr(label + LABEL["pResult_label"])
    return dict(meta_type=i32(label + BASE_TYPE), batch=ptr(label + BASE_BATCH),
                num_classes=u32(label + LABEL["num_classes"]),
                result_label=ctypes.string_at(label + LABEL["result_label"], 128),
                pResult_label=cstr(long) if long else None, pResult_address=long,
                result_class_id=u32(label + LABEL["result_class_id"]), label_id=u32(label + LABEL["label_id"]),
                result_prob=f32(label + LABEL["result_prob"]))


def classifier_fields(classifier: int) -> dict:
    kind = ptr(classifier + CLASSIFIER["classifier_type"])
    return dict(meta_type=i32(classifier + BASE_TYPE), batch=ptr(classifier + BASE_BATCH),
                num_labels=u32(classifier + CLASSIFIER["num_labels"]),
                unique_component_id=i32(classifier + CLASSIFIER["unique_component_id"]),
                classifier_type=cstr(kind) if kind else None, classifier_type_address=kind,
                labels=[label_fields(li) for li in label_infos_of(classifier)])
