"""obbinfer in real pipelines: what every frame carries downstream equals the model's decoded output."""
from __future__ import annotations

import re

import numpy as np
import obb_toy_models
import pytest
import readback
import torch
from pipelines import buffer_probe, bus_warnings, rgba_copy, run

from obbmeta import nvds
from obbmeta.gst import Gst
from obbmeta.infer import Detector
from obbmeta.osd import draw_obbs
from obbmeta.palette import PALETTE_RGB as PALETTE

W, H = 160, 120
NAMES = ",".join(obb_toy_models.CLASS_NAMES)


def read_back(frame):
    """(xywhr, class_id, confidence, label) of every object, sorted (read order is DeepStream's, newest first)."""
    rows = [(tuple(round(v, 3) for v in obb.xywhr), info.class_id, round(info.confidence, 5), info.label,
             info.component_id, obb.source) for info, obb in readback.pairs(frame)]
    return sorted(rows)


def expected(detector, image, fmt="RGBA"):
    (d,) = detector([torch.from_numpy(image)], fmt)
    return sorted((tuple(round(v, 3) for v in row), int(c), round(float(s), 5), obb_toy_models.CLASS_NAMES[int(c)],
                   15, "user_meta") for row, c, s in zip(d.xywhr.tolist(), d.labels, d.scores))  # nvinfer's unique-id


def test_300_buffers_every_frames_objects_equal_the_model_output_and_the_drawn_pixels_equal_draw_obbs():
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=300 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} "
        f"! identity name=before ! obbinfer name=infer model=obb_toy_models:toy input-size=96 class-names={NAMES} "
        "device=cpu "
        "! tee name=t t. ! queue ! obboverlay name=draw mode=draw thickness=2 ! fakesink name=drawn "
        "t. ! queue ! fakesink name=meta")
    originals, got, drawn = {}, {}, {}

    def on_meta(buf):
        (frame,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        assert frame.infer_done
        got[buf.pts] = read_back(frame)

    def on_drawn(buf):
        (frame,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        drawn[buf.pts] = (rgba_copy(buf, W, H), nvds.read_boxes(frame))

    errors = buffer_probe(p.get_by_name("before"), "src", lambda b: originals.__setitem__(b.pts, rgba_copy(b, W, H)))
    buffer_probe(p.get_by_name("meta"), "sink", on_meta, errors)
    buffer_probe(p.get_by_name("drawn"), "sink", on_drawn, errors)
    outcome = run(p)
    assert outcome.eos and outcome.stopped and not errors, (outcome, errors[:1])
    assert len(originals) == len(got) == len(drawn) == 300
    detector = Detector("obb_toy_models:toy", input_size=96)
    total = 0
    for pts, image in originals.items():
        want = expected(detector, image)
        assert got[pts] == want, pts  # none lost, none duplicated, same boxes, classes, scores, labels
        total += len(want)
        pixels, rows = drawn[pts]
        ref = torch.from_numpy(image.copy())
        colors = torch.tensor([PALETTE[c % len(PALETTE)] + (255,) for c in rows.labels], dtype=torch.uint8)
        draw_obbs(ref, torch.from_numpy(rows.xywhr), colors=colors, thickness=2)
        assert np.array_equal(pixels, ref.numpy()), pts
    assert total > 300  # the toy model does find objects (and NMS removed its duplicates: see expected())


def test_interval_skips_batches_like_nvinfer():
    p = Gst.parse_launch(f"videotestsrc num-buffers=10 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbinfer name=infer model=obb_toy_models:toy input-size=96 interval=2 ! fakesink name=s")
    seen = []

    def on(buf):
        (frame,) = nvds.BatchMeta.from_gst_buffer(buf).frames
        seen.append((frame.infer_done, frame.num_obj_meta > 0))

    errors = buffer_probe(p.get_by_name("s"), "sink", on)
    assert run(p).eos and not errors
    assert [d for d, _ in seen] == [k % 3 == 0 for k in range(10)]
    assert all(has == done for done, has in seen)
    assert p.get_by_name("infer").inferred == 4


def test_two_obbinfer_elements_with_two_models_write_side_by_side():
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=5 ! video/x-raw,format=RGBA,width={W},height={H} "
        "! obbinfer model=obb_toy_models:toy input-size=96 unique-id=1 "
        "! obbinfer model=obb_toy_models:as_boxes input-size=96 output-format=boxes unique-id=2 conf=0.5 "
        "! fakesink name=s")
    ids = []
    errors = buffer_probe(p.get_by_name("s"), "sink", lambda b: ids.append(sorted(
        {i.component_id for f in nvds.BatchMeta.from_gst_buffer(b).frames for i, _ in readback.pairs(f)})))
    assert run(p).eos and not errors
    assert ids == [[1, 2]] * 5


def test_no_batch_meta_upstream_makes_one_as_nvstreammux_does():
    p = Gst.parse_launch(f"videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbinfer model=obb_toy_models:toy input-size=96 ! fakesink name=s")
    seen = []

    def on(buf):
        batch = nvds.BatchMeta.from_gst_buffer(buf)
        (f,) = batch.frames
        seen.append((batch.max_frames, f.frame_number, f.batch_id, f.source_id, f.size, f.buffer_pts == buf.pts))

    errors = buffer_probe(p.get_by_name("s"), "sink", on)
    assert run(p).eos and not errors
    assert seen == [(1, k, 0, 0, (W, H), True) for k in range(3)]


@pytest.mark.parametrize("props,match", [
    ("model=obb_toy_models:failing", "toy model failure on call 3"),
    ("model=obb_toy_models:wrong_shape", "4\\+nc\\+1"),
    ("model=no_such_module_xyz:f", "cannot import module"),
    ("", "no model"),
    ("model=obb_toy_models:toy output-format=yolo", "output-format='yolo' refused"),
    ("model=obb_toy_models:toy input-size=0x3", "input-size='0x3' refused"),
    ('model="not a spec"', "model='not a spec' refused"),
    ("model=obb_toy_models:toy device=tpu", "device='tpu' refused"),
    pytest.param("model=obb_toy_models:toy device=cuda", "torch sees no CUDA device",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")),
])
def test_failures_become_bus_errors_and_the_pipeline_stops(props, match):
    p = Gst.parse_launch(f"videotestsrc num-buffers=50 ! video/x-raw,format=RGBA,width={W},height={H} "
                         f"! obbinfer name=infer input-size=96 {props} ! fakesink")
    outcome = run(p, timeout_s=30)
    assert not outcome.eos and outcome.stopped
    assert outcome.error is not None and outcome.error.startswith("infer: ")
    assert re.search(match, outcome.error), outcome.error


def test_a_class_without_a_label_is_written_with_an_empty_label_and_one_warning():
    """nvinfer's rule: a detection of a class the labels do not name is still written, with an empty label (it was
    a pipeline stop)."""
    p = Gst.parse_launch(f"videotestsrc num-buffers=20 pattern=ball ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbinfer name=infer model=obb_toy_models:toy input-size=96 class-names=car ! fakesink "
                         "name=sink")
    labels = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: labels.extend(
        (i.class_id, i.label) for f in nvds.BatchMeta.from_gst_buffer(b).frames for i, _ in readback.pairs(f)))
    warnings = bus_warnings(p)
    outcome = run(p)
    assert outcome.eos and not errors, outcome
    assert {c for c, _ in labels} > {0} and all((lab == "car") == (c == 0) and (lab == "") == (c != 0)
                                              for c, lab in labels)
    unlabelled = sorted({c for c, _ in labels if c})
    said = [w for w in warnings if "has no label" in w]
    assert len(said) == len(unlabelled) and all(f"class {c} has no label" in " ".join(said) for c in unlabelled)


def test_nvmm_caps_on_a_buffer_that_is_no_nvbufsurface_are_an_error():
    p = Gst.parse_launch("appsrc name=src caps=video/x-raw(memory:NVMM),format=RGBA,width=64,height=48,framerate=30/1 "
                          "format=time ! obbinfer name=infer model=obb_toy_models:toy input-size=64 ! fakesink")
    src = p.get_by_name("src")
    src.emit("push-buffer", Gst.Buffer.new_wrapped(bytes(100)))
    src.emit("end-of-stream")
    outcome = run(p, timeout_s=30)
    assert outcome.stopped and outcome.error and "100 bytes" in outcome.error and "refusing to guess" in outcome.error
