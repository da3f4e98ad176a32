"""Secondary results as NVIDIA's NvDsClassifierMeta / NvDsLabelInfo (obbmeta.nvds.classifier), on NVIDIA's real
libnvds_meta: everything written is read back by walking NVIDIA's lists at the tests' own hand-computed offsets
(tests/nvds/raw.py), not through the writer's bookkeeping; then through NVIDIA's copy (nvds_batch_meta_copy_func,
the GstBuffer copy a tee makes), NVIDIA's release and pool reuse, NVIDIA's nvmsgconv (when built), and the C
writer's DeepStream 6.x - 8.0 path in a fake DS 8 world."""
from __future__ import annotations

import ctypes
import os
from ctypes import c_void_p
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from obbmeta import OrientedBoxes, nvds
from obbmeta.nvds import _core, classifier, layouts
from obbmeta.nvds.classifier import Classification, ClassificationResult, Label

from . import raw

ROOT = Path(__file__).resolve().parents[2]
MSGCONV_LIB = Path(os.environ.get("OBBMETA_MSGCONV_LIB") or ROOT / ".msgconv" / "libnvds_msgconv.so")
if MSGCONV_LIB.is_file():  # NVIDIA's converter, built by tests/nvds/msgconv/build.sh (its fixtures, see there)
    from .test_nvmsgconv import NVDS_PAYLOAD_DEEPSTREAM, NVDS_PAYLOAD_DEEPSTREAM_MINIMAL, converter, msgconv, newapi  # noqa: F401,E501

W, H = 1920, 1080


def boxes(batch, frame, n: int, names=("car",)) -> np.ndarray:
    """n objects written by attach_obbs; their addresses in obj_meta_list order (read_obbs' order)."""
    width, height = frame.size
    x = np.column_stack([np.linspace(0.1, 0.8, n) * width, np.linspace(0.1, 0.8, n) * height, np.full(n, 40.0),
                         np.full(n, 20.0), np.linspace(-1, 1, n)]).astype(np.float32)
    nvds.attach_obbs(batch, frame, xywhr=x, labels=np.zeros(n, np.int64), class_names=list(names))
    return nvds.read_boxes(frame)["address"]


def plain_object(lib, batch, frame, rect=(100.0, 200.0, 50.0, 40.0)) -> int:
    """An object as a plain detector writes it: rect_params only, no display_text."""
    o = lib.nvds_acquire_obj_meta_from_pool(batch.address)
    for name, value in zip(("rect_left", "rect_top", "rect_width", "rect_height"), rect):
        ctypes.c_float.from_address(o + raw.OBJ[name]).value = value
    lib.nvds_add_obj_meta_to_frame(frame.address, o, None)
    return o


def label_text(fields: dict) -> bytes:
    """result_label up to its NUL (and nothing but zeros after it)."""
    text, _, rest = fields["result_label"].partition(b"\0")
    assert rest == bytes(len(rest)), "result_label holds bytes after its NUL"
    return text


def labels_of(obj: int) -> list[list[tuple]]:
    """Per classifier meta (list order), per label (list order): label_id, class id, prob, result_label."""
    return [[(lab["label_id"], lab["result_class_id"], lab["result_prob"], label_text(lab))
             for lab in raw.classifier_fields(c)["labels"]] for c in raw.classifier_metas_of(obj)]


def reference_cut(text: bytes) -> bytes:
    """The longest prefix of at most 127 bytes made of whole UTF-8 characters."""
    for k in range(min(len(text), 127), -1, -1):
        try:
            text[:k].decode("utf-8")
            return text[:k]
        except UnicodeDecodeError:
            continue
    raise AssertionError("unreachable")


# ---------------------------------------------------------------- layout

def test_the_wheel_pools_hold_classifier_metas_and_label_infos_of_the_sizes_the_tests_computed(lib):
    batch = lib.nvds_create_batch_meta(1)
    try:
        assert raw.pool_element_size(batch, "classifier_pool") == raw.CLASSIFIER_SIZE
        assert raw.pool_element_size(batch, "label_pool") == raw.LABEL_SIZE
        assert raw.i32(raw.ptr(batch + raw.BATCH["classifier_pool"]) + raw.POOL["meta_type"]) == \
            raw.NVDS_CLASSIFIER_META
        assert raw.i32(raw.ptr(batch + raw.BATCH["label_pool"]) + raw.POOL["meta_type"]) == raw.NVDS_LABEL_INFO_META
    finally:
        lib.nvds_destroy_batch_meta(batch)
    assert ctypes.sizeof(layouts.ClassifierMeta) == raw.CLASSIFIER_SIZE
    assert ctypes.sizeof(layouts.LabelInfo) == raw.LABEL_SIZE
    assert {k: getattr(layouts.ClassifierMeta, k).offset for k in raw.CLASSIFIER} == raw.CLASSIFIER
    assert {k: getattr(layouts.LabelInfo, k).offset for k in raw.LABEL} == raw.LABEL
    assert _core.get_classifier().evidence["element_size"]["label_info"] == raw.LABEL_SIZE


def test_unknown_classifier_pool_sizes_are_refused_with_the_sizes_seen():
    with pytest.raises(layouts.LayoutError, match="NvDsClassifierMeta of 56 bytes"):
        layouts.check_classifier_sizes({"classifier": 56, "label_info": 200})


# ---------------------------------------------------------------- what is written where

def test_class_ids_give_one_classifier_meta_per_object_and_one_label_info_per_output(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    objs = boxes(batch, frame, 3)
    r = nvds.attach_classifications(
        batch, objs, class_ids=np.array([[2, 0], [-1, 1], [-1, -1]]),
        probs=np.array([[0.75, 0.5], [0.0, 0.25], [0.0, 0.0]], np.float32),
        class_names=[["car", "truck", "bus"], ["red", "blue"]], component_id=7, classifier_type="vehicle")
    assert r == ClassificationResult(classified=2, labels=3, long_labels=0, skipped=1)
    (c0,) = raw.classifier_metas_of(int(objs[0]))
    f = raw.classifier_fields(c0)
    assert (f["meta_type"], f["batch"]) == (raw.NVDS_CLASSIFIER_META, batch.address)
    assert (f["unique_component_id"], f["num_labels"], f["classifier_type"]) == (7, 2, b"vehicle")
    # nvinfer adds the outputs in order with NVIDIA's add function, which prepends: the last output comes first.
    assert labels_of(int(objs[0])) == [[(1, 0, 0.5, b"red"), (0, 2, 0.75, b"bus")]]
    assert labels_of(int(objs[1])) == [[(1, 1, 0.25, b"blue")]]
    assert raw.classifier_metas_of(int(objs[2])) == []  # nothing passed: nothing attached, as nvinfer
    for lab in f["labels"]:
        assert (lab["meta_type"], lab["batch"], lab["num_classes"], lab["pResult_label"]) == \
            (raw.NVDS_LABEL_INFO_META, batch.address, 0, None)


def test_the_reader_gives_back_what_was_written_sorted_by_output(make_batch):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 2)
    nvds.attach_classifications(batch, objs, class_ids=np.array([[2, 0], [-1, 1]]),
                                probs=np.array([[0.75, 0.5], [0.0, 0.25]], np.float32),
                                class_names=[["car", "truck", "bus"], ["red", "blue"]], component_id=7,
                                classifier_type="vehicle")
    (c,) = nvds.read_classifications(int(objs[0]))
    assert c == Classification(7, "vehicle", (Label(2, 0.75, "bus", 0, 0), Label(0, 0.5, "red", 1, 0)), 2,
                               raw.classifier_metas_of(int(objs[0]))[0])
    read = nvds.read_boxes(batch.frames[0])
    one = read[read["address"] == objs[1]]  # one object read back
    assert nvds.read_classifications(one)[0].labels == (Label(1, 0.25, "blue", 1, 0),)
    with pytest.raises(ValueError, match=r"obj must be one object: OrientedBoxes of 2 rows given"):
        nvds.read_classifications(read)


def test_texts_are_recognised_strings_with_nvidias_licence_plate_ids(make_batch):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 3)
    r = nvds.attach_classifications(batch, objs, texts=["ABC 123", None, ""], probs=[0.5, 0.1, 0.25],
                                    component_id=3)
    assert r == ClassificationResult(2, 2, 0, 1)
    assert labels_of(int(objs[0])) == [[(0, nvds.TEXT_CLASS_ID, 0.5, b"ABC 123")]]
    assert nvds.TEXT_CLASS_ID == 1
    assert raw.classifier_metas_of(int(objs[1])) == []
    assert labels_of(int(objs[2])) == [[(0, 1, 0.25, b"")]]
    assert raw.classifier_fields(raw.classifier_metas_of(int(objs[0]))[0])["classifier_type"] is None


def test_results_entries_take_every_documented_form(make_batch):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 5)
    results = [None, "plate", Label(4, 0.5, "x", label_id=9, num_classes=12), (3, 0.25),
               [(1, 0.5, "red"), Label(2, 0.75, "big"), "text"]]
    r = nvds.attach_classifications(batch, objs, results, component_id=11, classifier_type="t")
    assert r == ClassificationResult(4, 6, 0, 1)
    assert raw.classifier_metas_of(int(objs[0])) == []
    assert labels_of(int(objs[1])) == [[(0, 1, 1.0, b"plate")]]
    assert labels_of(int(objs[2])) == [[(9, 4, 0.5, b"x")]]
    assert raw.classifier_fields(raw.classifier_metas_of(int(objs[2]))[0])["labels"][0]["num_classes"] == 12
    assert labels_of(int(objs[3])) == [[(0, 3, 0.25, b"")]]
    # a list: label_id defaults to the position in it
    assert labels_of(int(objs[4])) == [[(2, 1, 1.0, b"text"), (1, 2, 0.75, b"big"), (0, 1, 0.5, b"red")]]


def test_numpy_scalars_are_accepted_in_results(make_batch):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 1)
    nvds.attach_classifications(batch, objs, [(np.int64(3), np.float32(0.5))])
    assert labels_of(int(objs[0])) == [[(0, 3, 0.5, b"")]]


def test_a_frame_means_its_objects_in_read_boxes_order_and_ints_are_told_apart_by_meta_type(make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    objs = boxes(batch, frame, 3)
    nvds.attach_classifications(batch, frame, texts=["a", "b", "c"])
    assert [labels_of(int(o))[0][0][3] for o in objs] == [b"a", b"b", b"c"]
    nvds.attach_classifications(batch, frame.address, texts=["d", "e", "f"], component_id=4)  # NvDsFrameMeta*
    nvds.attach_classifications(batch, int(objs[1]), texts=["g"], component_id=5)  # one NvDsObjectMeta*
    nvds.attach_classifications(batch, nvds.read_boxes(frame)[2], texts=["h"], component_id=6)  # one read back
    assert [lab[0][3] for lab in labels_of(int(objs[1]))] == [b"g", b"e", b"b"]  # newest first
    assert [lab[0][3] for lab in labels_of(int(objs[2]))] == [b"h", b"f", b"c"]


def test_objects_of_several_frames_go_in_one_call_and_every_frame_is_marked_inferred(lib, make_batch):
    batch = make_batch(max_frames=3, frames=3)
    f0, f1, f2 = batch.frames
    a = boxes(batch, f0, 2)
    b = np.array([plain_object(lib, batch, f1), plain_object(lib, batch, f1)], np.uint64)
    c = np.array([plain_object(lib, batch, f2)], np.uint64)
    assert raw.i32(f1.address + raw.FRAME["bInferDone"]) == 0
    objs = np.concatenate([a, b, c])
    r = nvds.attach_classifications(batch, objs, class_ids=np.array([0, 1, -1, 2, -1]))
    assert r == ClassificationResult(3, 3, 0, 2)
    assert [len(raw.classifier_metas_of(int(o))) for o in objs] == [1, 1, 0, 1, 0]
    # nvinfer marks the frame of every object it processed, whether a label passed or not
    assert [raw.i32(f.address + raw.FRAME["bInferDone"]) for f in (f0, f1, f2)] == [1, 1, 1]


# ---------------------------------------------------------------- strings

TEXTS = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=160),
    st.builds(lambda c, n: c * n, st.sampled_from(["a", "é", "船", "😀", "a船"]), st.integers(0, 140)))


@settings(max_examples=150, deadline=None)
@given(text=TEXTS)
def test_a_label_is_cut_on_a_character_boundary_and_kept_whole_in_presult_label(text):
    with nvds.BatchMeta.create(1) as batch:
        frame = batch.add_frame(0, W, H)
        objs = boxes(batch, frame, 1)
        r = nvds.attach_classifications(batch, objs, texts=[text])
        encoded = text.encode("utf-8")
        (lab,) = raw.classifier_fields(raw.classifier_metas_of(int(objs[0]))[0])["labels"]
        assert label_text(lab) == reference_cut(encoded)
        if len(encoded) > 127:
            assert lab["pResult_label"] == encoded and r.long_labels == 1
        else:
            assert lab["pResult_label"] is None and r.long_labels == 0
        assert nvds.read_classifications(int(objs[0]))[0].labels[0].label == text


@pytest.mark.parametrize("text, short", [
    ("a" * 127, "a" * 127), ("a" * 128, "a" * 127), ("é" * 64, "é" * 63), ("a" + "船" * 42, "a" + "船" * 42),
    ("船" * 43, "船" * 42), ("😀" * 32, "😀" * 31), ("ab" + "😀" * 32, "ab" + "😀" * 31)])
def test_the_127_byte_boundary(make_batch, text, short):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 1)
    nvds.attach_classifications(batch, objs, texts=[text])
    (lab,) = raw.classifier_fields(raw.classifier_metas_of(int(objs[0]))[0])["labels"]
    assert label_text(lab) == short.encode()
    assert lab["pResult_label"] == (None if len(text.encode()) <= 127 else text.encode())


def test_long_class_names_are_cut_in_result_label_and_whole_in_presult_label(make_batch):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 2)
    names = ["short", "é" * 100]
    r = nvds.attach_classifications(batch, objs, class_ids=np.array([1, 0]), class_names=names)
    assert r.long_labels == 1
    lab0 = raw.classifier_fields(raw.classifier_metas_of(int(objs[0]))[0])["labels"][0]
    assert label_text(lab0) == ("é" * 63).encode() and lab0["pResult_label"] == ("é" * 100).encode()
    assert raw.classifier_fields(raw.classifier_metas_of(int(objs[1]))[0])["labels"][0]["pResult_label"] is None


# ---------------------------------------------------------------- display text (nvdsosd)

def test_labels_are_appended_to_display_text_as_nvinfer_does(lib, make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    detected = boxes(batch, frame, 1)  # attach_obbs wrote display_text = "car"
    plain = plain_object(lib, batch, frame, rect=(100.0, 200.0, 50.0, 40.0))
    top = plain_object(lib, batch, frame, rect=(30.0, 4.0, 10.0, 10.0))
    objs = np.array([int(detected[0]), plain, top], np.uint64)
    nvds.attach_classifications(batch, objs, [[(0, 0.5, "red"), (1, 0.5, "sedan")], "ABC", "X"])
    text = lambda o: raw.cstr(raw.ptr(o + raw.OBJ["display_text"]))  # noqa: E731
    # prepended labels: the last output is first in the list, the text keeps output order
    assert text(int(detected[0])) == b"car red sedan"
    # no text before: nvinfer's (an empty string, then " " + labels), above the rect's corner, Serif 11 on black
    assert text(plain) == b" ABC"
    assert (raw.u32(plain + raw.OBJ["text_x"]), raw.u32(plain + raw.OBJ["text_y"])) == (100, 190)
    assert raw.cstr(raw.ptr(plain + raw.OBJ["font_name"])) == b"Serif"
    assert raw.u32(plain + raw.OBJ["font_size"]) == 11 and raw.i32(plain + raw.OBJ["set_bg_clr"]) == 1
    assert [raw.f64(plain + raw.OBJ["font_color"] + 8 * k) for k in range(4)] == [1.0] * 4
    assert [raw.f64(plain + raw.OBJ["text_bg_clr"] + 8 * k) for k in range(4)] == [0.0, 0.0, 0.0, 1.0]
    assert raw.u32(top + raw.OBJ["text_y"]) == 0  # 4 - 10 is above the frame: clamped, never wrapped
    nvds.attach_classifications(batch, objs[:1], ["more"], component_id=3)
    assert text(int(detected[0])) == b"car red sedan more"


def test_display_text_is_left_alone_on_request_and_for_labels_without_text(lib, make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    detected = boxes(batch, frame, 1)
    plain = plain_object(lib, batch, frame)
    nvds.attach_classifications(batch, detected, texts=["XYZ"], display_text=False)
    nvds.attach_classifications(batch, np.array([int(detected[0]), plain], np.uint64), class_ids=np.array([1, 2]))
    assert raw.cstr(raw.ptr(int(detected[0]) + raw.OBJ["display_text"])) == b"car"
    assert raw.ptr(plain + raw.OBJ["display_text"]) == 0


def test_a_long_label_goes_whole_into_display_text(make_batch):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 1)
    nvds.attach_classifications(batch, objs, texts=["船" * 60])
    assert raw.cstr(raw.ptr(int(objs[0]) + raw.OBJ["display_text"])) == ("car " + "船" * 60).encode()


# ---------------------------------------------------------------- classifier_type

def test_classifier_type_strings_live_as_long_as_the_process():
    a = classifier._classifier_type_address("".join(["colo", "ur1"]))  # built at run time: not an interned literal
    assert classifier._classifier_type_address("colour1") == a
    assert classifier._classifier_type_address("make") != a
    assert classifier._classifier_type_address(None) is None
    assert ctypes.string_at(a) == b"colour1"


def test_too_many_distinct_classifier_types_are_refused(monkeypatch):
    monkeypatch.setattr(classifier, "_TYPES", {})
    monkeypatch.setattr(classifier, "MAX_CLASSIFIER_TYPES", 2)
    classifier._classifier_type_address("a")
    classifier._classifier_type_address("b")
    classifier._classifier_type_address("a")
    with pytest.raises(ValueError, match="more than 2 distinct classifier_type"):
        classifier._classifier_type_address("c")


# ---------------------------------------------------------------- NVIDIA's copy and release

def write_sample(batch, frame) -> np.ndarray:
    objs = boxes(batch, frame, 3)
    nvds.attach_classifications(batch, objs, class_ids=np.array([[0, 1], [1, -1], [-1, 0]]),
                                probs=np.array([[0.5, 0.25], [0.75, 0], [0, 0.125]], np.float32),
                                class_names=[["red", "船" * 50], ["x", "y"]], component_id=2,
                                classifier_type="colour")
    nvds.attach_classifications(batch, objs, texts=["plate " + "é" * 80, None, "AB"], probs=[0.5, 0, 0.25],
                                component_id=3)
    return objs


def snapshot(frame: int) -> list:
    """Per object (sorted by label), per classifier meta and label, every field but addresses, read raw."""
    out = []
    for o in raw.objects_of(frame):
        metas = []
        for c in raw.classifier_metas_of(o):
            f = raw.classifier_fields(c)
            labels = sorted((lab["label_id"], lab["result_class_id"], lab["result_prob"], lab["result_label"],
                             lab["pResult_label"], lab["num_classes"], lab["meta_type"]) for lab in f["labels"])
            metas.append((f["unique_component_id"], f["num_labels"], f["meta_type"], labels))
        out.append(sorted(metas))
    return out


def test_nvidias_batch_copy_keeps_every_label_field_and_copies_long_labels(lib, make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    objs = write_sample(batch, frame)
    copy = lib.nvds_batch_meta_copy_func(batch.address, None)
    try:
        (copied_frame,) = raw.frames_of(copy)
        assert sorted(map(repr, snapshot(copied_frame))) == sorted(map(repr, snapshot(frame.address)))
        original_long = {lab["pResult_address"] for o in objs for c in raw.classifier_metas_of(int(o))
                         for lab in raw.classifier_fields(c)["labels"] if lab["pResult_address"]}
        copied = [raw.classifier_fields(c) for o in raw.objects_of(copied_frame) for c in raw.classifier_metas_of(o)]
        copied_long = {lab["pResult_address"] for c in copied for lab in c["labels"] if lab["pResult_address"]}
        assert len(copied_long) == len(original_long) == 2 and copied_long.isdisjoint(original_long)
        # NVIDIA's copy (DeepStream 9.1) does not copy classifier_type: the copy's is NULL.
        assert {c["classifier_type"] for c in copied} == {None}
        assert all(c["batch"] == copy for c in copied)
        # The reader sees the same results in the copy (lists reversed by the copy, sorted by the reader).
        mine = [nvds.read_classifications(int(o)) for o in objs]
        theirs = [nvds.read_classifications(o) for o in raw.objects_of(copied_frame)][::-1]
        strip = lambda cs: [(c.component_id, c.labels, c.num_labels) for c in cs]  # noqa: E731
        assert [strip(c) for c in theirs] == [strip(c) for c in mine]
        # Releasing the original leaves the copy's strings intact.
        batch.destroy()
        assert [strip(nvds.read_classifications(o)) for o in raw.objects_of(copied_frame)][::-1] == \
            [strip(c) for c in mine]
    finally:
        lib.nvds_batch_meta_release_func(copy, None)


def test_a_gst_buffer_copy_as_a_tee_makes_carries_the_classifier_metas(make_batch):
    gst = _gst()
    buf = gst.gst_buffer_new()
    batch = nvds.BatchMeta.create(1)
    frame = batch.add_frame(0, W, H)
    write_sample(batch, frame)
    before = snapshot(frame.address)
    batch.attach_to_gst_buffer(buf)
    copy = gst.gst_buffer_copy_deep(buf)
    try:
        a, b = nvds.BatchMeta.from_gst_buffer(buf), nvds.BatchMeta.from_gst_buffer(copy)
        assert a.address != b.address
        assert sorted(map(repr, snapshot(b.frames[0].address))) == sorted(map(repr, before))
    finally:
        gst.gst_mini_object_unref(copy)
        gst.gst_mini_object_unref(buf)


def _gst() -> ctypes.CDLL:
    try:
        gst = ctypes.CDLL("libgstreamer-1.0.so.0")
    except OSError:
        pytest.skip("libgstreamer-1.0 is not installed")
    gst.gst_init.argtypes = [c_void_p, c_void_p]
    gst.gst_buffer_new.restype = c_void_p
    gst.gst_buffer_copy_deep.argtypes, gst.gst_buffer_copy_deep.restype = [c_void_p], c_void_p
    gst.gst_mini_object_unref.argtypes = [c_void_p]
    gst.gst_init(None, None)
    return gst


def test_nvidias_release_returns_every_classifier_meta_and_label_to_the_pools(lib, make_batch):
    batch = make_batch()
    frame = batch.frames[0]
    before = raw.pool_counts(batch.address, "classifier_pool")[0], raw.pool_counts(batch.address, "label_pool")[0]
    objs = write_sample(batch, frame)
    assert raw.pool_counts(batch.address, "classifier_pool")[0] == before[0] + 5
    assert raw.pool_counts(batch.address, "label_pool")[0] == before[1] + 6
    labels = [li for o in objs for c in raw.classifier_metas_of(int(o)) for li in raw.label_infos_of(c)]
    nvds.remove_objects(batch, frame, objs)  # nvds_remove_obj_meta_from_frame: NVIDIA's release chain
    assert raw.pool_counts(batch.address, "classifier_pool")[0] == before[0]
    assert raw.pool_counts(batch.address, "label_pool")[0] == before[1]
    # NVIDIA's release zeroes a label info after base_meta (and g_frees pResult_label first): a reused element
    # never carries a stale pointer into the next write.
    for li in labels:
        assert raw.ptr(li + raw.LABEL["pResult_label"]) == 0
        assert ctypes.string_at(li + 40, raw.LABEL_SIZE - 40) == bytes(raw.LABEL_SIZE - 40)
    again = boxes(batch, frame, 3)
    nvds.attach_classifications(batch, again, texts=["a", "b", "c"])
    reused = {li for o in again for c in raw.classifier_metas_of(int(o)) for li in raw.label_infos_of(c)}
    assert reused & set(labels)
    assert all(raw.label_fields(li)["pResult_label"] is None for li in reused)


def test_nvidias_remove_of_one_classifier_meta_releases_its_labels(lib, make_batch):
    batch = make_batch()
    objs = write_sample(batch, batch.frames[0])
    o = int(objs[0])
    first, second = raw.classifier_metas_of(o)
    lib.nvds_remove_classifier_meta_from_obj(o, first)
    assert raw.classifier_metas_of(o) == [second]
    assert [c.component_id for c in nvds.read_classifications(o)] == [2]


# ---------------------------------------------------------------- reading what others wrote

def test_the_reader_reads_classifier_metas_written_by_someone_else(lib, make_batch):
    """As nvinfer writes them (NVIDIA's functions, labels in reverse output order, classifier_type its own string),
    with a pResult_label from glib and a result_label without text."""
    batch = make_batch()
    frame = batch.frames[0]
    o = plain_object(lib, batch, frame)
    glib = ctypes.CDLL(_core.get().libs.glib._name)
    glib.g_strdup.argtypes, glib.g_strdup.restype = [ctypes.c_char_p], c_void_p
    kind = ctypes.create_string_buffer(b"make")
    cm = lib.nvds_acquire_classifier_meta_from_pool(batch.address)
    ctypes.c_int32.from_address(cm + raw.CLASSIFIER["unique_component_id"]).value = 9
    ctypes.c_void_p.from_address(cm + raw.CLASSIFIER["classifier_type"]).value = ctypes.addressof(kind)
    for label_id, class_id, prob, text, long in ((0, 4, 0.5, b"audi", None), (1, 2, 0.25, b"", b"x" * 300)):
        li = lib.nvds_acquire_label_info_meta_from_pool(batch.address)
        ctypes.memmove(li + raw.LABEL["result_label"], text, len(text))
        for field, value in (("label_id", label_id), ("result_class_id", class_id), ("num_classes", 7)):
            ctypes.c_uint32.from_address(li + raw.LABEL[field]).value = value
        ctypes.c_float.from_address(li + raw.LABEL["result_prob"]).value = prob
        if long:
            ctypes.c_void_p.from_address(li + raw.LABEL["pResult_label"]).value = glib.g_strdup(long)
        lib.nvds_add_label_info_meta_to_classifier(cm, li)
    lib.nvds_add_classifier_meta_to_object(o, cm)
    (c,) = nvds.read_classifications(o)
    assert (c.component_id, c.classifier_type, c.num_labels) == (9, "make", 2)
    assert c.labels == (Label(4, 0.5, "audi", 0, 7), Label(2, 0.25, "x" * 300, 1, 7))
    ctypes.c_void_p.from_address(cm + raw.CLASSIFIER["classifier_type"]).value = None  # before kind goes away


def test_an_object_without_classifier_metas_reads_as_an_empty_list(make_batch):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 1)
    assert nvds.read_classifications(int(objs[0])) == []


def test_a_result_label_that_fills_all_128_bytes_is_read_without_running_past_it(lib, make_batch):
    """pyds' result_label setter copies without a NUL: a full array must not be read beyond its end."""
    batch = make_batch()
    o = plain_object(lib, batch, batch.frames[0])
    cm = lib.nvds_acquire_classifier_meta_from_pool(batch.address)
    li = lib.nvds_acquire_label_info_meta_from_pool(batch.address)
    ctypes.memmove(li + raw.LABEL["result_label"], b"z" * 128, 128)
    ctypes.c_uint32.from_address(li + raw.LABEL["result_class_id"]).value = 0xFFFFFFFF  # right after it
    lib.nvds_add_label_info_meta_to_classifier(cm, li)
    lib.nvds_add_classifier_meta_to_object(o, cm)
    (lab,) = nvds.read_classifications(o)[0].labels
    assert lab.label == "z" * 128 and lab.class_id == 0xFFFFFFFF


# ---------------------------------------------------------------- bad input

def bad_cases():
    k = 3
    ok = dict(texts=["a", "b", "c"])
    return [
        (dict(), TypeError, "exactly one of results=, class_ids= or texts="),
        (dict(texts=["a"] * k, class_ids=np.zeros(k, np.int64)), TypeError, "got class_ids, texts"),
        (dict(class_ids=np.zeros(k + 1, np.int64)), ValueError, r"class_ids must have shape \(3,\) or \(3, H\)"),
        (dict(class_ids=np.zeros(k, np.float32)), TypeError, "class_ids must be an integer array"),
        (dict(class_ids=np.array([0, -2, 0])), ValueError, r"class_ids\[1\] = -2"),
        (dict(class_ids=np.array([[0], [2**32], [0]])), ValueError, r"class_ids\[1, 0\] = 4294967296"),
        (dict(class_ids=np.array([0, 5, 0]), class_names=["a", "b"]), ValueError,
         r"class_ids\[1\] = 5 has no entry in class_names \(len 2\)"),
        (dict(class_ids=np.array([[0, 3], [0, 0], [0, 0]]), class_names=[["a"], ["b"]]), ValueError,
         r"class_ids\[0, 1\] = 3 has no entry in class_names\[1\]"),
        (dict(class_ids=np.zeros((k, 2), np.int64), class_names=["a", "b"]), ValueError, "one sequence of names per"),
        (dict(class_ids=np.zeros(k, np.int64), class_names="ab"), TypeError, "class_names must be a sequence"),
        (dict(class_ids=np.zeros(k, np.int64), class_names=["a\x00"]), ValueError, "NUL"),
        (dict(class_ids=np.zeros(k, np.int64), probs=[0.5, float("nan"), 0.5]), ValueError, r"probs\[1\]"),
        (dict(class_ids=np.zeros(k, np.int64), probs=[1e39, 0.5, 0.5]), ValueError, r"probs\[0\].*float32"),
        (dict(class_ids=np.zeros(k, np.int64), probs=[0.5]), ValueError, r"probs must have shape \(3,\)"),
        (dict(texts=["a", 1, "c"]), TypeError, r"texts\[1\] must be a str"),
        (dict(texts=["a\x00b", "b", "c"]), ValueError, r"texts\[0\] = .* NUL"),
        (dict(texts=["\ud800", "b", "c"]), ValueError, r"texts\[0\] = .* UTF-8"),
        (dict(texts=["a"]), ValueError, "texts has 1 entries but there are 3 objects"),
        (dict(texts="abc"), TypeError, "texts must be a sequence"),
        (dict(texts=["a", "b", "c"], class_names=["x"]), TypeError, "class_names goes with class_ids"),
        (dict(results=["a", "b", "c"], probs=[1, 1, 1]), TypeError, "probs goes with class_ids= or texts="),
        (dict(results=["a", "b"]), ValueError, "results has 2 entries but there are 3 objects"),
        (dict(results=[1, None, None]), TypeError, r"results\[0\] must be None, a str"),
        (dict(results=[None, [(1, 0.5), 7], None]), TypeError, r"results\[1\]\[1\] must be None"),
        (dict(results=[(-1, 0.5), None, None]), ValueError, r"results\[0\].class_id must be an int in 0..2\*\*32-1"),
        (dict(results=[None, Label(1, float("inf")), None]), ValueError, r"results\[1\].prob must be a finite"),
        (dict(results=[None, None, Label(1, 0.5, "a\x00")]), ValueError, r"results\[2\].label = .* NUL"),
        (dict(results=[Label(1, 0.5, b"bytes"), None, None]), TypeError, r"results\[0\].label must be a str"),
        (dict(results=[Label(1, 0.5, label_id=-3), None, None]), ValueError, r"results\[0\].label_id"),
        (dict(ok, component_id=-1), ValueError, "component_id must be an int in 0..2\\*\\*31-1"),
        (dict(ok, classifier_type=3), TypeError, "classifier_type must be a str"),
        (dict(ok, classifier_type="a\x00"), ValueError, "classifier_type = .* NUL"),
    ]


@pytest.mark.parametrize("kwargs, error, message", bad_cases())
def test_bad_input_is_refused_naming_the_argument_and_nothing_is_written(make_batch, kwargs, error, message):
    batch = make_batch()
    objs = boxes(batch, batch.frames[0], 3)
    with pytest.raises(error, match=message):
        nvds.attach_classifications(batch, objs, **kwargs)
    assert all(raw.classifier_metas_of(int(o)) == [] for o in objs)
    assert raw.pool_counts(batch.address, "label_pool")[0] == 0


def test_objects_are_refused_when_listed_twice_or_not_in_the_batch(make_batch):
    batch, other = make_batch(), make_batch()
    objs = boxes(batch, batch.frames[0], 2)
    foreign = boxes(other, other.frames[0], 1)
    with pytest.raises(ValueError, match=rf"objects_or_frame\[2\] = 0x{int(objs[0]):x} is listed twice"):
        nvds.attach_classifications(batch, np.array([objs[0], objs[1], objs[0]]), texts=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"objects_or_frame\[2\] = .* is not an object meta in a frame of this batch"):
        nvds.attach_classifications(batch, np.concatenate([objs, foreign]), texts=["a", "b", "c"])
    nvds.remove_objects(batch, batch.frames[0], objs[:1])  # back in the pool: no longer in any frame
    with pytest.raises(ValueError, match=r"objects_or_frame\[0\] = .* is not an object meta"):
        nvds.attach_classifications(batch, objs[:1], texts=["a"])
    assert all(raw.classifier_metas_of(int(o)) == [] for o in list(objs[1:]) + list(foreign))
    with pytest.raises(ValueError, match="is not a frame of the batch meta"):
        nvds.attach_classifications(batch, other.frames[0].address, texts=["a"])


@pytest.mark.parametrize("objects, error, message", [
    ("objs", TypeError, "objects_or_frame must be a FrameMeta"),
    (None, TypeError, "objects_or_frame must be a FrameMeta"),
    (np.zeros((2, 2), np.uint64), ValueError, "must be 1-d NvDsObjectMeta"),
    (np.array([-5]), ValueError, "NULL or negative"),
    (8, ValueError, "does not point to readable memory"),
    ([1.5], TypeError, r"objects_or_frame\[0\] must be an NvDsObjectMeta\* int or one object read back"),
    ("unread", ValueError, r"objects_or_frame is an OrientedBoxes without data\['address'\]"),
])
def test_objects_of_the_wrong_form_are_refused(make_batch, objects, error, message):
    batch = make_batch()
    if isinstance(objects, str) and objects == "unread":  # boxes that were never metadata
        objects = OrientedBoxes(np.zeros((1, 5), np.float32), [0.5], [0])
    with pytest.raises(error, match=message):
        nvds.attach_classifications(batch, objects, texts=["a"])


def test_an_int_that_is_neither_a_frame_nor_an_object_is_refused(make_batch):
    batch = make_batch()
    with pytest.raises(ValueError, match="neither an NvDsFrameMeta nor an NvDsObjectMeta"):
        nvds.attach_classifications(batch, batch.address, texts=["a"])


def test_read_classifications_refuses_what_is_not_an_object(make_batch):
    batch = make_batch()
    with pytest.raises(TypeError, match=r"obj must be an NvDsObjectMeta\* int or one object read back"):
        nvds.read_classifications("obj")
    with pytest.raises(ValueError, match="does not point to an NvDsObjectMeta"):
        nvds.read_classifications(batch.frames[0].address)
    with pytest.raises(ValueError, match="does not point to readable memory"):
        nvds.read_classifications(16)


def test_no_objects_write_nothing(make_batch):
    batch = make_batch()
    assert nvds.attach_classifications(batch, batch.frames[0], texts=[]) == ClassificationResult(0, 0, 0, 0)
    assert nvds.attach_classifications(batch, np.zeros(0, np.uint64), class_ids=np.zeros((0, 2), np.int64)) == \
        ClassificationResult(0, 0, 0, 0)


# ---------------------------------------------------------------- NVIDIA's nvmsgconv on these metas

@pytest.mark.skipif(not MSGCONV_LIB.is_file(), reason="NVIDIA's libnvds_msgconv.so is not built "
                                                        "(tests/nvds/msgconv/build.sh)")
def test_nvmsgconv_puts_the_label_under_the_classifier_type_in_its_payloads(msgconv, converter, make_batch):  # noqa: F811
    batch = make_batch(width=640, height=480)
    frame = batch.frames[0]
    objs = boxes(batch, frame, 2, names=("car",))
    nvds.attach_classifications(batch, objs, class_ids=np.array([1, 0]), probs=np.array([0.5, 0.75], np.float32),
                                class_names=["red", "blue"], classifier_type="colour")
    nvds.attach_classifications(batch, objs, texts=["AB12", "CD34"], component_id=3, classifier_type="plate")
    ctx = converter(NVDS_PAYLOAD_DEEPSTREAM)
    full = {o: newapi(msgconv, ctx, frame.address, o) for o in raw.objects_of(frame.address)}
    assert full[int(objs[0])]["object"]["car"] == {"confidence": pytest.approx(1.0), "colour": "blue",
                                                   "plate": "AB12"}
    assert full[int(objs[1])]["object"]["car"]["colour"] == "red"
    # minimal schema: "<id>|left|top|right|bottom|<label>|#|<every result_label, list order>|<confidence>"
    minimal = newapi(msgconv, converter(NVDS_PAYLOAD_DEEPSTREAM_MINIMAL), frame.address, None)
    tails = [line.split("|#|")[1] for line in minimal["objects"]]
    assert tails == ["AB12|blue|1", "CD34|red|1"]  # obj_meta_list order; newest classifier meta first


# ---------------------------------------------------------------- the DeepStream 6.x - 8.0 object layout

def _ds8():
    from .test_ds8_layout import ACQUIRE, ADD2, FAKE_OBB_TYPE, FakeDs8, _glib, _real_frame_size

    class FakeDs8Classifier(FakeDs8):
        """The DS 8 world of test_ds8_layout with NVIDIA's classifier functions: elements from the classifier and
        label pools (64 / 200 bytes, as in DS 6.0 - 9.x), prepended as NVIDIA's add functions do."""

        def __init__(self, glib, frame_size):
            super().__init__(glib, frame_size)
            self.cls_callbacks = dict(
                acquire_classifier_meta=ACQUIRE(self._acquire_classifier),
                add_classifier_meta_to_object=ADD2(self._add_classifier),
                acquire_label_info=ACQUIRE(self._acquire_label), add_label_info_to_classifier=ADD2(self._add_label))
            self.cls_api = _core.ClassifierApiTable(
                **{k: ctypes.cast(v, c_void_p).value for k, v in self.cls_callbacks.items()})

        def _acquire_classifier(self, batch):
            self._check("acquire_classifier_meta", batch)
            return self._element("classifier_pool", "classifier")

        def _acquire_label(self, batch):
            self._check("acquire_label_info", batch)
            return self._element("label_pool", "label")

        def _add_classifier(self, obj, cm):
            self._check("add_classifier_meta_to_object")
            if self.kind.get(obj) != "obj" or self.kind.get(cm) != "classifier":
                self.errors.append("add_classifier_meta_to_object: not (object, classifier meta)")
                return
            head = obj + raw.OBJ_DS8["classifier_meta_list"]
            ctypes.c_void_p.from_address(head).value = self.g.g_list_prepend(raw.ptr(head) or None, cm)

        def _add_label(self, cm, li):
            self._check("add_label_info_to_classifier")
            if self.kind.get(cm) != "classifier" or self.kind.get(li) != "label":
                self.errors.append("add_label_info_to_classifier: not (classifier meta, label info)")
                return
            head = cm + raw.CLASSIFIER["label_info_list"]
            ctypes.c_void_p.from_address(head).value = self.g.g_list_prepend(raw.ptr(head) or None, li)
            count = ctypes.c_uint32.from_address(cm + raw.CLASSIFIER["num_labels"])
            count.value += 1

        def close(self):
            """What NVIDIA's release does for classifier metas: g_free each pResult_label, free the lists."""
            for f in self.frames:
                for o in raw.glist(raw.ptr(f + raw.FRAME["obj_meta_list"])):
                    head = o + raw.OBJ_DS8["classifier_meta_list"]
                    for cm in raw.glist(raw.ptr(head)):
                        labels = cm + raw.CLASSIFIER["label_info_list"]
                        for li in raw.glist(raw.ptr(labels)):
                            long = raw.ptr(li + raw.LABEL["pResult_label"])
                            if long:
                                self._free(long)
                        self.g.g_list_free(raw.ptr(labels) or None)
                    self.g.g_list_free(raw.ptr(head) or None)
                    ctypes.c_void_p.from_address(head).value = None
            super().close()

    return FakeDs8Classifier, _glib, _real_frame_size, FAKE_OBB_TYPE


@pytest.fixture
def ds8_world():
    """The fake DS 8 world installed as both C function tables; the real ones are re-installed afterwards."""
    fake, glib, frame_size, fake_type = _ds8()
    core = _core.get_classifier()
    c = core.c
    w = fake(glib(), frame_size())
    assert c.obbmeta_nvds_init(ctypes.byref(w.api)) == fake_type
    assert c.obbmeta_nvds_init_classifier(ctypes.byref(w.cls_api)) == 0
    try:
        yield w
        assert w.errors == [] and w.depth == 0 and w.canaries_intact() == []
    finally:
        try:
            w.close()
        finally:
            assert c.obbmeta_nvds_init(ctypes.byref(core.api)) == core.obb_meta_type
            assert c.obbmeta_nvds_init_classifier(ctypes.byref(_core.classifier_api)) == 0
    assert w.errors == [], "while releasing"
    assert w.live_malloc == {}, "every g_malloc of the classifier writer was g_free'd by the release path"


DS6_8, DS9 = 1, 2  # OBBMETA_LAYOUT_* (kernels/nvds_meta.h)


def test_the_ds6_8_writer_puts_classifier_list_and_text_at_the_ds8_offsets(ds8_world):
    w = ds8_world
    c = _core.get_classifier().c
    f = w.add_frame()
    o1 = w.add_plain_object(f, (100, 200, 50, 40))
    o2 = w.add_plain_object(f, (10, 5, 20, 20))
    objs = np.array([o1, o2], np.uint64)
    flat = classifier._from_class_ids(np.array([[1, 0], [0, -1]]), np.array([[0.5, 0.25], [0.75, 0]], np.float32),
                                      [["a", "b" * 200], ["x"]], 2)
    r = classifier._write(c, DS6_8, w.batch, objs, flat, 5, None, True)
    assert r == ClassificationResult(2, 3, 1, 0)
    (c1,) = raw.classifier_metas_of(o1, raw.OBJ_DS8)
    f1 = raw.classifier_fields(c1)
    assert (f1["unique_component_id"], f1["num_labels"], f1["meta_type"]) == (5, 2, raw.NVDS_CLASSIFIER_META)
    assert [(lab["label_id"], lab["result_class_id"], label_text(lab), lab["pResult_label"]) for lab in f1["labels"]] \
        == [(1, 0, b"x", None), (0, 1, b"b" * 127, b"b" * 200)]
    assert raw.cstr(raw.ptr(o1 + raw.OBJ_DS8["display_text"])) == b" " + b"b" * 200 + b" x"
    assert (raw.u32(o1 + raw.OBJ_DS8["text_x"]), raw.u32(o1 + raw.OBJ_DS8["text_y"])) == (100, 190)
    assert raw.u32(o1 + raw.OBJ_DS8["font_size"]) == 11 and raw.i32(o1 + raw.OBJ_DS8["set_bg_clr"]) == 1
    assert raw.cstr(raw.ptr(o2 + raw.OBJ_DS8["display_text"])) == b" a"
    assert raw.u32(o2 + raw.OBJ_DS8["text_y"]) == 0
    assert raw.i32(f + raw.FRAME["bInferDone"]) == 1
    # The DS 9 writer on this world is refused before anything is acquired: its object pool holds 544 bytes.
    with pytest.raises(RuntimeError, match="pools do not hold elements of the detected layout"):
        classifier._write(c, DS9, w.batch, objs, flat, 5, None, True)
    assert len(raw.classifier_metas_of(o1, raw.OBJ_DS8)) == 1

