"""obbinfer process-mode=2: secondary inference on upright crops of the objects' oriented boxes, results where
nvinfer's SGIE writes them (NvDsClassifierMeta / NvDsLabelInfo), read back by obbmeta's reader and by an independent
raw read of NVIDIA's lists; nvinfer's object selection (operate-on-*, input object sizes, reinfer interval)."""
from __future__ import annotations

import sys
from pathlib import Path

import obb_toy_models
import pytest
import readback
import torch
from pipelines import buffer_probe, rgba_copy, run

from obbmeta import nvds
from obbmeta.gst import Gst
from obbmeta.nvds.classifier import read_classifications
from obbmeta.ops import crop_rotated

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nvds"))
import raw  # noqa: E402

W, H = 160, 120
PRIMARY = "obbinfer name=pgie model=obb_toy_models:toy input-size=96 unique-id=1"


def secondary_pipeline(sgie: str, n=8, middle=""):
    return Gst.parse_launch(
        f"videotestsrc num-buffers={n} pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} ! {PRIMARY} "
        f"! {middle}identity name=before ! obbinfer name=sgie process-mode=2 {sgie} ! fakesink name=sink")


def collect(p):
    """Per frame: the original pixels and, per object, (info, obb, obbmeta's reading, the raw reading)."""
    frames, objects = {}, {}

    def before(buf):
        frames[buf.pts] = rgba_copy(buf, W, H)

    def after(buf):
        (f,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        rows = []
        for info, obb in readback.pairs(f):
            rows.append((info, obb, read_classifications(info.address),
                         [raw.classifier_fields(c) for c in raw.classifier_metas_of(info.address)]))
        objects[buf.pts] = rows

    errors = buffer_probe(p.get_by_name("before"), "src", before)
    buffer_probe(p.get_by_name("sink"), "sink", after, errors)
    return frames, objects, errors


def expected_class(image, obb):
    """The toy classifier on the crop obbmeta's op cuts (RGB channels of the RGBA frame), as argmax."""
    crop = crop_rotated(torch.from_numpy(image), torch.tensor([obb.xywhr]), (32, 64), channels=[0, 1, 2],
                        out_dtype=torch.float32)
    logits = obb_toy_models.ToyClassifier()(crop / 255)
    p = torch.softmax(logits, 1)
    return int(p.argmax()), float(p.max())


def test_a_classifier_writes_one_classifier_meta_per_object_where_nvinfer_writes_it(tmp_path):
    labels = tmp_path / "colours.txt"
    labels.write_text("red;green;blue\n")
    p = secondary_pipeline(f"model=obb_toy_models:toy_classifier output-format=classifier unique-id=2 crop-size=32x64 "
                           f"labelfile-path={labels} classifier-type=colour")
    frames, objects, errors = collect(p)
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    total = 0
    for pts, rows in objects.items():
        for _info, obb, ours, theirs in rows:
            cls, prob = expected_class(frames[pts], obb)
            (c,) = ours
            assert c.component_id == 2 and c.classifier_type == "colour" and len(c.labels) == 1
            (lab,) = c.labels
            assert (lab.label_id, lab.class_id, lab.label) == (0, cls, ["red", "green", "blue"][cls])
            assert abs(lab.prob - prob) < 1e-4
            (t,) = theirs  # NVIDIA's own list, read at NVIDIA's offsets
            assert t["unique_component_id"] == 2 and t["classifier_type"] == b"colour" and t["num_labels"] == 1
            (tl,) = t["labels"]
            assert tl["result_class_id"] == cls and tl["result_label"].split(b"\0")[0] == lab.label.encode()
            total += 1
    assert total > 10


def test_operate_on_class_ids_and_input_object_sizes_choose_the_objects():
    p = secondary_pipeline("model=obb_toy_models:toy_classifier output-format=classifier unique-id=2 crop-size=16x16 "
                           "operate-on-class-ids=0;2 input-object-min-width=20 input-object-max-height=40 "
                           "operate-on-gie-id=1")
    _, objects, errors = collect(p)
    assert run(p).eos and not errors
    chosen = skipped = 0
    for rows in objects.values():
        for info, _obb, ours, _ in rows:
            w, h = info.rect[2], info.rect[3]
            want = info.class_id in (0, 2) and w >= 20 and h <= 40
            assert bool(ours) == want, (info.class_id, w, h)
            chosen, skipped = chosen + want, skipped + (not want)
    assert chosen and skipped
    p = secondary_pipeline("model=obb_toy_models:toy_classifier output-format=classifier unique-id=2 crop-size=16x16 "
                           "operate-on-gie-id=7")  # no object comes from a gie 7
    _, objects, errors = collect(p)
    assert run(p).eos and not errors and not any(ours for rows in objects.values() for *_, ours, _ in rows)


def test_tracked_objects_are_reinferred_every_n_frames_and_carry_their_last_result_between():
    obb_toy_models.SECONDARY_CALLS.clear()
    p = secondary_pipeline("model=obb_toy_models:toy_classifier output-format=classifier unique-id=2 crop-size=16x16 "
                           "secondary-reinfer-interval=3", n=20, middle="obbtrack min-hits=1 ! ")
    _, objects, errors = collect(p)
    assert run(p).eos and not errors
    tracked = [(pts, info, ours) for pts, rows in sorted(objects.items()) for info, _o, ours, _ in rows
               if info.tracked]
    assert tracked and all(ours for _, _, ours in tracked)  # every tracked object shows a result on every frame
    per_object: dict[int, list] = {}
    for _pts, info, ours in tracked:
        per_object.setdefault(info.object_id, []).append(ours[0].labels[0].class_id)
    inferred = sum(obb_toy_models.SECONDARY_CALLS)
    assert inferred < len(tracked)  # the cache stood in for most frames
    assert any(len(v) > 4 for v in per_object.values())


def test_a_text_reader_writes_the_string_as_nvidias_licence_plate_sample_does():
    p = secondary_pipeline("model=obb_toy_models:toy_reader output-format=text unique-id=3 crop-size=32 "
                           "crop-reading=long-side crop-padding=0.1")
    _, objects, errors = collect(p)
    assert run(p).eos and not errors
    n = 0
    for rows in objects.values():
        for _info, _obb, ours, theirs in rows:
            (c,) = ours
            (lab,) = c.labels
            assert (lab.label_id, lab.class_id, c.component_id) == (0, 1, 3) and lab.label.startswith("32x")
            assert int(lab.label.split("x")[1]) % 4 == 0  # the batch's width, a multiple of 4
            assert theirs[0]["labels"][0]["result_label"].split(b"\0")[0] == lab.label.encode()
            n += 1
    assert n > 10


@pytest.mark.parametrize("props,message", [
    # yolo-obb in secondary mode is a secondary detector: a classifier as one fails with what its output is
    ("model=obb_toy_models:toy_classifier output-format=yolo-obb", "cannot be decoded: output must have shape"),
    ("model=obb_toy_models:toy_classifier output-format=classifier crop-size=0x8", "crop-size"),
])
def test_secondary_settings_that_do_not_fit_fail_the_start(props, message):
    p = secondary_pipeline(props)
    ret = p.set_state(Gst.State.PAUSED)
    if ret == Gst.StateChangeReturn.ASYNC:
        ret = p.get_state(10 * Gst.SECOND)[0]
    msg = p.get_bus().timed_pop_filtered(5 * Gst.SECOND, Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    assert ret == Gst.StateChangeReturn.FAILURE and message in msg.parse_error()[0].message


def test_obbmessage_carries_the_classifications_and_the_consumer_reads_them(tmp_path):
    from obbmeta.nvds import messages
    from obbmeta.publish.messages import parse_blob

    labels = tmp_path / "colours.txt"
    labels.write_text("red;green;blue\n")
    p = secondary_pipeline(f"model=obb_toy_models:toy_classifier output-format=classifier unique-id=2 crop-size=16x16 "
                           f"labelfile-path={labels} classifier-type=colour", n=3)
    blobs = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: blobs.extend(
        messages.obb_message_json(f) for f in nvds.BatchMeta.from_gst_buffer(b).frames))
    assert run(p).eos and not errors
    n = 0
    for text in blobs:
        record = parse_blob(text)  # validated against the packaged schema
        for obj in record.objects:
            (c,) = obj.classifications
            (lab,) = c["labels"]
            assert c["component_id"] == 2 and c["classifier_type"] == "colour"
            assert lab["label"] == ["red", "green", "blue"][lab["class_id"]] and 0 < lab["prob"] <= 1
            n += 1
    assert n > 3


def test_process_mode_from_a_config_file_runs_the_secondary_path(tmp_path):
    """process-mode=2 and network-type=1 in [property]: the element runs as a secondary classifier (the mode is the
    one the model was built for, not the element's default)."""
    path = tmp_path / "sgie.txt"
    path.write_text("[property]\nprocess-mode=2\nnetwork-type=1\ngie-unique-id=2\n[obbmeta]\n"
                    "model=obb_toy_models:toy_classifier\ncrop-size=32x64\n")
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=4 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} ! {PRIMARY} "
        f"! identity name=before ! obbinfer name=sgie config-file-path={path} ! fakesink name=sink")
    frames, objects, errors = collect(p)
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    rows = [r for rs in objects.values() for r in rs]
    assert rows and all(info.component_id == 1 for info, *_ in rows)  # the primary's objects, none added
    assert all(len(ours) == 1 and ours[0].component_id == 2 for _i, _o, ours, _t in rows)


def test_process_mode_set_while_playing_waits_for_the_next_start():
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=12 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} ! {PRIMARY} "
        f"! identity name=before ! fakesink name=sink")
    pgie = p.get_by_name("pgie")
    seen = []

    def after(buf):
        if len(seen) == 3:
            pgie.set_property("process-mode", 2)  # a ready-only property: warned, applied at the next start
        (f,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        seen.append([read_classifications(info.address) for info, _ in readback.pairs(f)])

    errors = buffer_probe(p.get_by_name("sink"), "sink", after)
    outcome = run(p)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert len(seen) == 12 and all(len(s) > 0 for s in seen)  # every batch still detected
    assert all(c == [] for s in seen for c in s)  # and none classified


@pytest.mark.parametrize("given, stored", [("32x64", "32x64"), ("32,64", "32x64"), (" 16X16 ", "16x16"), ("24", "24"),
                                           ("", "")])
def test_crop_size_is_read_by_the_one_size_reader(given, stored):
    from obbmeta.config.settings import SPECS

    spec = SPECS["crop-size"]
    assert spec.to_property(spec.value(given)) == stored


@pytest.mark.parametrize("bad", ["0x8", "axb", "1x2x3", "5000", "x", "16x"])
def test_a_bad_crop_size_names_the_property_and_the_forms(bad):
    from obbmeta.config.settings import SPECS

    with pytest.raises(ValueError, match=r"crop-size must be HxW, H,W or H \(pixels, 1\.\.4096\)"):
        SPECS["crop-size"].value(bad)


def test_a_secondary_classifier_giving_nan_stops_the_pipeline_with_why_as_a_primary_does():
    p = secondary_pipeline("model=obb_toy_models:nan_classifier input-size=64x32 output-format=classifier", n=4)
    outcome = run(p)
    assert not outcome.eos and outcome.error.startswith("sgie:") and "not finite" in outcome.error, outcome


@pytest.mark.parametrize("fmt,size", [("RGBA", (640, 1)), ("RGBA", (640, 4)), ("RGB", (96, 2)), ("NV12", (2, 96)),
                                      ("YUV420", (4, 64))])
def test_frames_a_few_pixels_thin_are_cropped_by_their_known_layout(fmt, size):
    # the crops name the frames' layout (H, W, C): a 4-row RGBA frame is not mistaken for (C, H, W)
    from obbmeta.secondary import SecondaryModel

    w, h = size
    sec = SecondaryModel("obb_toy_models:toy_classifier", device="cpu", crop_size=(8, 16))
    if fmt in ("RGBA", "RGB"):
        frame = torch.full((h, w, len(fmt)), 200, dtype=torch.uint8)
    elif fmt == "NV12":
        frame = (torch.full((h, w, 1), 120, dtype=torch.uint8), torch.full((h // 2 or 1, w // 2 or 1, 2), 128,
                                                                           dtype=torch.uint8))
    else:
        frame = (torch.full((h, w, 1), 120, dtype=torch.uint8),
                 torch.full((h // 2, w // 2, 1), 128, dtype=torch.uint8),
                 torch.full((h // 2, w // 2, 1), 128, dtype=torch.uint8))
    rows = torch.tensor([[0.0, w / 2, h / 2, max(w / 2, 1.0), max(h / 2, 1.0), 0.3]])
    (result,) = sec([frame], fmt, rows)
    assert result is None or all(0 <= r.class_id < 3 for r in result)


def test_the_reinfer_history_forgets_an_object_unseen_for_long_also_over_frames_without_objects(monkeypatch):
    """_select prunes each stream's history on every frame, those where no object is taken included: an object
    classified on frame 0 and back after 200 empty frames is inferred again, not given its 200-frame-old result."""
    import types

    import numpy as np

    import obbmeta.gst.infer as element
    from obbmeta import OrientedBoxes, nvds

    def objects(ids):
        n = len(ids)
        z = lambda *shape, d=np.float32: np.zeros(shape, d)  # noqa: E731
        return OrientedBoxes(z(n, 5), z(n), z(n, d=np.int64), data=dict(
            corners=z(n, 4, 2), rect=np.tile(np.array([10, 10, 50, 50], np.float32), (n, 1)),
            object_id=np.array(ids, np.uint64), source=z(n, d=np.int32), flags=z(n, d=np.uint32),
            detector_bbox=z(n, 4), tracker_bbox=z(n, 4), tracker_confidence=z(n), component_id=np.ones(n, np.int32),
            label=np.zeros(n, "S128"), rotation_angle=z(n), address=np.arange(1, n + 1, dtype=np.uint64),
            num_user_meta=z(n, d=np.int32), parent=z(n, d=np.uint64)))

    frame = lambda num, o: types.SimpleNamespace(source_id=0, frame_number=num, batch_id=0, objects=o,  # noqa: E731
                                                 batch=None)
    monkeypatch.setattr(nvds, "read_boxes_batch",
                        lambda batch, fs: (fs[0].objects, np.array([0, len(fs[0].objects)])))
    s = types.SimpleNamespace(operate_on_gie_id=-1, operate_on_class_ids=[], input_object_min_width=0,
                              input_object_min_height=0, input_object_max_width=0, input_object_max_height=0,
                              secondary_reinfer_interval=element.S.G_MAXINT, unique_id=2)
    me = types.SimpleNamespace(_history={0: {7: element._History(0, 2500.0, 0, "old result")}})
    for num in range(1, element.HISTORY_MAX_AGE + 2):
        element.ObbInfer._select(me, [frame(num, objects([]))], s, False)
    rows, _, _, cached = element.ObbInfer._select(me, [frame(element.HISTORY_MAX_AGE + 2, objects([7]))], s, False)
    assert len(rows) == 1 and not cached
