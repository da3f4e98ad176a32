"""obbinfer process-mode=2 with a detector: children of each parent object written as nvinfer's secondary detector
writes them (parent set, unique_component_id = gie-unique-id), with its filters and reinfer rules, read back through
NVIDIA's libnvds_meta lists."""
from __future__ import annotations

import math

import numpy as np
import obb_toy_models
import pytest
import readback
import torch
from pipelines import buffer_probe, run

from obbmeta import nvds
from obbmeta.frames.preprocess import preset
from obbmeta.infer import Detector
from obbmeta.secondary import SecondaryDetector

W, H = 160, 120
PRIMARY = "obbinfer name=pgie model=obb_toy_models:toy input-size=96 unique-id=1 conf=0.2"


def pipeline(secondary: str, n=4, extra=""):
    from obbmeta.gst import Gst

    return Gst.parse_launch(f"videotestsrc num-buffers={n} pattern=ball ! video/x-raw,format=RGBA,width={W},"
                            f"height={H} ! {PRIMARY} ! {extra}obbinfer name=sgie process-mode=2 {secondary} "
                            "! fakesink name=sink")


def objects_by_frame(p):
    out = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: out.extend(
        [(i, o) for i, o in readback.pairs(f)] for f in nvds.BatchMeta.from_gst_buffer(b).frames))
    return out, errors


def test_children_are_the_detectors_boxes_on_each_parents_upright_crop_written_as_its_children():
    p = pipeline("model=obb_toy_models:children input-size=48x32 unique-id=7 conf=0.1 operate-on-gie-id=1 "
                 "class-names=door,window,roof")
    frames, errors = objects_by_frame(p)
    outcome = run(p)
    assert outcome.eos and not errors, outcome
    det = Detector(obb_toy_models.Children(), input_size=(48, 32), conf=0.1, device="cpu",
                   preprocess_mode=preset("ultralytics"))
    sec = SecondaryDetector(det)
    total = 0
    for objs in frames:
        parents = {i.address: o for i, o in objs if i.component_id == 1}
        kids = [(i, o) for i, o in objs if i.component_id == 7]
        assert parents and len(kids) == 2 * len(parents)  # the toy finds two in any crop
        assert {i.parent for i, _ in kids} == set(parents)  # parent pointers read back through the lists
        for address, po in parents.items():
            want = sec([torch.zeros(H, W, 3, dtype=torch.uint8)], "RGB", torch.tensor([[0.0, *po.xywhr]]))[0]
            have = sorted((i.class_id, i.label, tuple(round(v, 2) for v in o.xywhr)) for i, o in kids
                          if i.parent == address)
            names = ["door", "window", "roof"]
            assert have == sorted((int(c), names[int(c)], tuple(round(v, 2) for v in b))
                                  for b, c in zip(want.xywhr.tolist(), want.labels))
            total += 1
    assert total > 3


def test_operate_on_class_ids_and_object_sizes_pick_the_parents():
    p = pipeline("model=obb_toy_models:children input-size=48x32 unique-id=7 conf=0.1 infer-on-class-ids=1 "
                 "input-object-min-width=12")
    frames, errors = objects_by_frame(p)
    assert run(p).eos and not errors
    for objs in frames:
        by = {i.address: i for i, _ in objs}
        for i, _ in objs:
            if i.component_id == 7:
                parent = by[i.parent]
                assert parent.class_id == 1 and parent.rect[2] >= 12


def test_a_secondary_detector_config_as_tao_writes_it_runs(tmp_path):
    path = tmp_path / "sgie_lpd.txt"
    path.write_text("""\
[property]
gpu-id=0
net-scale-factor=0.00392156862745098
offsets=0;0;0
model-color-format=0
labelfile-path=lpd_labels.txt
model-engine-file=../../models/LPD_us/LPDNet_usa_pruned_tao5.onnx_b16_gpu0_int8.engine
onnx-file=../../models/LPD_us/LPDNet_usa_pruned_tao5.onnx
int8-calib-file=../../models/LPD_us/usa_cal_10.1.0.bin
infer-dims=3;32;48
batch-size=16
process-mode=2
network-mode=1
num-detected-classes=3
interval=0
gie-unique-id=2
operate-on-gie-id=1
operate-on-class-ids=0;1;2
network-type=0
cluster-mode=3

[class-attrs-all]
pre-cluster-threshold=0.1
nms-iou-threshold=0.5
[obbmeta]
model=obb_toy_models:children
""")
    (tmp_path / "lpd_labels.txt").write_text("lpd\nsign\nother\n")
    p = pipeline(f"config-file-path={path}")
    frames, errors = objects_by_frame(p)
    outcome = run(p)
    assert outcome.eos and not errors, outcome
    kids = [i for objs in frames for i, _ in objs if i.component_id == 2]
    assert kids and all(i.parent for i in kids) and {i.label for i in kids} <= {"lpd", "sign"}


def test_tracked_parents_are_searched_again_after_the_reinfer_interval_only():
    """nvinfer's rule for a detector: with secondary-reinfer-interval unset (G_MAXINT) every frame; with N, a
    tracked object again only when more than N frames have passed."""
    p = pipeline("model=obb_toy_models:children input-size=48x32 unique-id=7 conf=0.1 secondary-reinfer-interval=2",
                 n=7, extra="obbtrack ! ")
    frames, errors = objects_by_frame(p)
    assert run(p).eos and not errors
    per_frame = [sum(1 for i, _ in objs if i.component_id == 7) for objs in frames]
    assert per_frame[0] > 0 and per_frame[1] == per_frame[2] == 0 and per_frame[3] > 0


def test_a_secondary_detector_with_output_tensor_meta_attaches_each_crops_tensors_to_its_parent():
    from obbmeta.nvds import tensors

    p = pipeline("model=obb_toy_models:children input-size=48x32 unique-id=7 conf=0.1 output-tensor-meta=true", n=2)
    seen = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: seen.extend(
        (i.component_id, tensors.read_object_tensor_outputs(nvds.BatchMeta.from_gst_buffer(b), i.address))
        for f in nvds.BatchMeta.from_gst_buffer(b).frames for i, _ in readback.pairs(f)))
    assert run(p).eos and not errors
    parents = [t for c, t in seen if c == 1]
    assert parents and all(len(t) == 1 and t[0].unique_id == 7 and t[0].network == (48, 32, 3) for t in parents)
    assert all(not t for c, t in seen if c == 7)


@pytest.mark.parametrize("angle", [0.0, 0.7, 2.0, -2.6])
def test_children_of_a_rotated_parent_keep_the_parents_rotation(angle):
    frame = torch.zeros(120, 160, 3, dtype=torch.uint8)
    det = Detector(obb_toy_models.Children(), input_size=(48, 32), conf=0.1, device="cpu",
                   preprocess_mode=preset("nvinfer"))
    (kids,) = SecondaryDetector(det)([frame], "RGB", torch.tensor([[0.0, 80, 60, 60, 40, angle]]))
    angles = sorted(float(a) for a in kids.xywhr[:, 4])
    want = sorted(a + angle for *_, a, _c, _s in obb_toy_models.CHILDREN)
    assert np.allclose(angles, want, atol=1e-5) and all(math.isfinite(a) for a in angles)


@pytest.mark.parametrize("depth", [0, 2])
def test_children_keep_their_parents_through_the_tracker_before_and_the_overlay_after(depth):
    # DeepStream's order (pgie ! tracker ! sgie ! osd): an element after the secondary that writes in place gets
    # the buffer unshared (a copy of the batch meta would not carry the parent pointers over)
    from obbmeta.gst import Gst

    p = Gst.parse_launch(
        f"videotestsrc num-buffers=4 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} ! {PRIMARY} "
        f"queue-depth={depth} ! obbtrack ! obbinfer process-mode=2 model=obb_toy_models:children "
        f"input-size=48x32 unique-id=7 conf=0.1 operate-on-gie-id=1 queue-depth={depth} ! obboverlay mode=draw "
        "! fakesink name=sink")
    frames, errors = objects_by_frame(p)
    outcome = run(p)
    assert outcome.eos and not errors, outcome
    assert len(frames) == 4
    for objs in frames:
        parents = {i.address for i, _ in objs if i.component_id == 1}
        kids = [i for i, _ in objs if i.component_id == 7]
        assert len(kids) == 2 * len(parents) and {i.parent for i in kids} == parents


def test_children_of_an_object_the_tracker_removes_lose_their_parent_instead_of_pointing_into_the_pool():
    from obbmeta.gst import Gst

    p = Gst.parse_launch(
        f"videotestsrc num-buffers=3 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} ! {PRIMARY} "
        "! obbinfer process-mode=2 model=obb_toy_models:children input-size=48x32 unique-id=7 conf=0.1 "
        "operate-on-gie-id=1 ! obbtrack ! fakesink name=sink")
    frames, errors = objects_by_frame(p)
    outcome = run(p)
    assert outcome.eos and not errors, outcome
    orphans = 0
    for objs in frames:
        parents = {i.address for i, _ in objs if i.component_id == 1}
        for kid in (i for i, _ in objs if i.component_id == 7):
            assert kid.parent in parents or kid.parent == 0
            orphans += kid.parent == 0
    assert orphans  # the tracker's probation removed parents of the first frames; their children remain
