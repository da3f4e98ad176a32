"""Every offset obbmeta relies on, pinned against what NVIDIA's real libnvds_meta (DeepStream 9.1 build) does."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest

from obbmeta import nvds
from obbmeta.nvds import _core, layouts

from . import raw


def test_the_wheel_library_has_the_ds9_pool_element_sizes(lib):
    batch = lib.nvds_create_batch_meta(1)
    try:
        assert raw.pool_element_size(batch, "obj_pool") == raw.OBJ_SIZE == 552
        assert raw.pool_element_size(batch, "user_pool") == raw.USER_SIZE
        assert raw.pool_element_size(batch, "frame_pool") == 232
    finally:
        lib.nvds_destroy_batch_meta(batch)


def test_obbmeta_detects_the_ds9_layout_from_the_pools():
    core = _core.get()
    assert core.layout is layouts.DS9
    assert core.evidence["element_size"]["obj"] == 552
    assert "DeepStream 9" in nvds.describe()


def test_layout_matching_refuses_sizes_it_does_not_know():
    assert layouts.match(544, 48, 200) is layouts.DS6_8
    with pytest.raises(layouts.LayoutError, match="Refusing to write"):
        layouts.match(560, 48, 232)
    with pytest.raises(layouts.LayoutError, match="NvDsUserMeta of 56"):
        layouts.match(552, 56, 232)


def test_ctypes_mirror_agrees_with_the_hand_computed_offsets():
    t = layouts.ObjectMetaDS9
    assert ctypes.sizeof(t) == raw.OBJ_SIZE
    rect = t.rect_params.offset
    assert rect == raw.OBJ["rect_left"]
    assert rect + layouts.RectParamsDS9.rotation_angle.offset == raw.OBJ["rotation_angle"]
    assert t.mask_params.offset == raw.OBJ["mask_data"]
    assert t.text_params.offset == raw.OBJ["display_text"]
    assert t.obj_label.offset == raw.OBJ["obj_label"]
    assert t.obj_user_meta_list.offset == raw.OBJ["obj_user_meta_list"]
    assert ctypes.sizeof(layouts.ObjectMetaDS6_8) == 544
    assert ctypes.sizeof(layouts.DisplayMetaDS9) == 7040
    assert ctypes.sizeof(layouts.DisplayMetaDS6_8) == 6912
    assert layouts.FrameMetaHead.num_obj_meta.offset == raw.FRAME["num_obj_meta"]
    assert layouts.FrameMetaHead.pipeline_width.offset == raw.FRAME["pipeline_width"]


def test_the_c_writer_and_the_ctypes_mirror_agree_for_both_layouts():
    core = _core.get()
    for layout in layouts.LAYOUTS:
        _core.check_layout_against_c(core.c, layout)  # raises on any difference


def test_add_obj_meta_to_frame_prepends_sets_parent_and_counts(lib):
    batch = lib.nvds_create_batch_meta(1)
    try:
        frame = lib.nvds_acquire_frame_meta_from_pool(batch)
        lib.nvds_add_frame_meta_to_batch(batch, frame)
        first = lib.nvds_acquire_obj_meta_from_pool(batch)
        second = lib.nvds_acquire_obj_meta_from_pool(batch)
        lib.nvds_add_obj_meta_to_frame(frame, first, None)
        lib.nvds_add_obj_meta_to_frame(frame, second, first)
        assert raw.u32(frame + raw.FRAME["num_obj_meta"]) == 2
        assert raw.objects_of(frame) == [second, first]
        assert raw.ptr(second + raw.OBJ["parent"]) == first
        assert raw.ptr(first + raw.OBJ["parent"]) == 0
        assert raw.frames_of(batch) == [frame]
        # A fresh pool element is zeroed: object_id is 0, not UNTRACKED_OBJECT_ID (the writer must set it).
        assert raw.u64(first + raw.OBJ["object_id"]) == 0
        assert raw.i32(first + raw.BASE_TYPE) == raw.NVDS_OBJ_META
    finally:
        lib.nvds_destroy_batch_meta(batch)


def test_add_user_meta_to_obj_prepends_to_obj_user_meta_list(lib):
    batch = lib.nvds_create_batch_meta(1)
    try:
        obj = lib.nvds_acquire_obj_meta_from_pool(batch)
        a = lib.nvds_acquire_user_meta_from_pool(batch)
        b = lib.nvds_acquire_user_meta_from_pool(batch)
        lib.nvds_add_user_meta_to_obj(obj, a)
        lib.nvds_add_user_meta_to_obj(obj, b)
        assert raw.user_metas_of(obj) == [b, a]
        frame = lib.nvds_acquire_frame_meta_from_pool(batch)
        lib.nvds_add_frame_meta_to_batch(batch, frame)
        lib.nvds_add_obj_meta_to_frame(frame, obj, None)
    finally:
        lib.nvds_destroy_batch_meta(batch)


def test_copy_obj_meta_moves_every_field_at_our_offsets(lib, make_batch):
    """NVIDIA copies field by field (g_strdup for display_text, g_memdup2 for the mask): values written at our
    offsets arrive at the same offsets, and the heap fields become new pointers to equal bytes."""
    batch = make_batch()
    frame = batch.frames[0]
    nvds.attach_obbs(batch, frame, xywhr=np.array([[300, 200, 80, 40, 0.4]], np.float32),
                     scores=np.array([0.75], np.float32), labels=np.array([2]), class_names=["a", "b", "ship"],
                     component_id=7, rotation_angle=True)
    (src,) = raw.objects_of(frame.address)
    glib = _core.get().libs.glib
    mask = glib.g_malloc(16)
    ctypes.memmove(mask, b"0123456789abcdef", 16)
    ctypes.c_void_p.from_address(src + raw.OBJ["mask_data"]).value = mask
    ctypes.c_uint32.from_address(src + raw.OBJ["mask_size"]).value = 16
    dst = lib.nvds_acquire_obj_meta_from_pool(batch.address)
    lib.nvds_copy_obj_meta(src, dst)
    lib.nvds_add_obj_meta_to_frame(frame.address, dst, None)  # so the batch release frees it
    for name in ("unique_component_id", "class_id"):
        assert raw.i32(dst + raw.OBJ[name]) == raw.i32(src + raw.OBJ[name])
    assert raw.i32(dst + raw.OBJ["unique_component_id"]) == 7 and raw.i32(dst + raw.OBJ["class_id"]) == 2
    assert raw.u64(dst + raw.OBJ["object_id"]) == raw.UNTRACKED
    for name in ("det_left", "det_top", "det_width", "det_height", "confidence", "rect_left", "rect_top",
                 "rect_width", "rect_height", "rotation_angle"):
        assert raw.f32(dst + raw.OBJ[name]) == raw.f32(src + raw.OBJ[name]), name
    assert raw.f32(dst + raw.OBJ["rotation_angle"]) == pytest.approx(np.degrees(0.4), rel=1e-6)
    assert raw.f32(dst + raw.OBJ["confidence"]) == pytest.approx(0.75)
    assert raw.cstr(dst + raw.OBJ["obj_label"]) == b"ship"
    src_text, dst_text = raw.ptr(src + raw.OBJ["display_text"]), raw.ptr(dst + raw.OBJ["display_text"])
    assert src_text and dst_text and src_text != dst_text and raw.cstr(dst_text) == b"ship"
    dst_mask = raw.ptr(dst + raw.OBJ["mask_data"])
    assert dst_mask not in (0, mask) and ctypes.string_at(dst_mask, 16) == b"0123456789abcdef"
    # The user meta list is copied through our C copy_func: a new payload with equal bytes.
    (src_um,), (dst_um,) = raw.user_metas_of(src), raw.user_metas_of(dst)
    src_payload = raw.ptr(src_um + raw.USER["user_meta_data"])
    dst_payload = raw.ptr(dst_um + raw.USER["user_meta_data"])
    assert dst_payload != src_payload
    assert ctypes.string_at(dst_payload, raw.PAYLOAD_SIZE) == ctypes.string_at(src_payload, raw.PAYLOAD_SIZE)


def test_user_meta_type_is_nvidias_quark_of_the_descriptor_and_stable(lib):
    first = nvds.obb_meta_type()
    # Asking NVIDIA again, with a fresh buffer, returns the same type: the key interned by obbmeta is alive.
    again = lib.nvds_get_user_meta_type(ctypes.create_string_buffer(b"OBBMETA.OBB.V1"))
    assert first == again >= 4096 + 4096 + 1


def test_loader_does_not_import_the_wheels_python_module():
    code = ("import sys, os; from obbmeta import nvds; nvds.BatchMeta.create(1).destroy(); "
            "print('nvidia.deepstream_videodecode' in sys.modules, os.environ.get('GST_PLUGIN_PATH', ''))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != "GST_PLUGIN_PATH"}).stdout.split()
    assert out[0] == "False"


def test_environment_variable_overrides_and_a_wrong_one_is_an_error(tmp_path):
    code = "from obbmeta import nvds; print(nvds.describe())"
    env = dict(os.environ, OBBMETA_NVDS_LIB_DIR=str(raw.wheel_lib_dir()))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert "(from $OBBMETA_NVDS_LIB_DIR)" in out and "DeepStream 9" in out
    env = dict(os.environ, OBBMETA_NVDS_LIB_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert "unavailable" in out and f"no libnvds_meta.so in {tmp_path}" in out


DUMP = """
import ctypes, sys
import numpy as np
from obbmeta import nvds
from obbmeta.nvds import _core
batch = nvds.BatchMeta.create(1)
frame = batch.add_frame(source_id=7, width=1920, height=1080, frame_num=3, pad_index=5)
nvds.attach_obbs(batch, frame, xywhr=np.array([[400.5, 300.25, 100, 50, 0.0]], np.float32),
                 labels=np.array([42]), component_id=9)
meta = _core.get().libs.meta
meta.nvds_get_current_metadata_info.argtypes = [ctypes.c_void_p]
meta.nvds_get_current_metadata_info(batch.address)
batch.destroy()
"""


def test_nvidias_own_metadata_dump_shows_the_fields_we_wrote():
    """nvds_get_current_metadata_info prints (with NVIDIA's offsets) source_id, pad_index, component_id,
    class_id, object_id and rect_params: they must be what obbmeta wrote at its offsets."""
    out = subprocess.run([sys.executable, "-c", DUMP], capture_output=True, text=True, check=True).stdout
    assert "source_id = 7 port id = 5" in out
    assert ("component_id = 9,class_id = 42 object id = 18446744073709551615 "
            "x =350.500000, y =275.250000, w =100.000000, h = 50.000000") in out
