import math

import numpy as np
import pytest
import reference
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from obbmeta import Letterbox, OrientedBoxes
from obbmeta.decode import detect_format, yolo_obb


def raw_output(batch=2, nc=3, n=400, seed=0):
    """A synthetic (B, 4+nc+1, N) YOLO-OBB head output: clustered boxes, sigmoid-range scores."""
    rng = np.random.default_rng(seed)
    out = np.zeros((batch, 4 + nc + 1, n), dtype=np.float32)
    for b in range(batch):
        boxes, _, labels = reference.clustered_scene(n, seed + b, extent=640.0)
        out[b, :4] = boxes[:, :4].T
        out[b, -1] = (boxes[:, 4] % math.pi) - math.pi / 4  # the head's (-pi/4, 3pi/4) range
        scores = rng.uniform(0, 0.3, size=(nc, n)).astype(np.float32)
        scores[labels % nc, np.arange(n)] = rng.uniform(0.1, 1.0, size=n)
        out[b, 4:4 + nc] = scores
    return torch.from_numpy(out)


def reference_decode(x, conf, iou, max_det, agnostic=False):
    """Ultralytics' single-label rules with greedy shapely NMS: best class > conf, class-aware NMS, max_det."""
    x = x.T.numpy()
    scores_all = x[:, 4:-1]
    labels, scores = scores_all.argmax(1), scores_all.max(1)
    keep = scores > conf
    boxes = np.c_[x[:, :4], x[:, -1]][keep]
    scores, labels = scores[keep], labels[keep]
    order = reference.greedy_nms(boxes, scores, iou, labels=None if agnostic else labels)[:max_det]
    return boxes[order], scores[order], labels[order]


@pytest.mark.parametrize("agnostic", [False, True])
def test_raw_output_matches_reference_decode(agnostic):
    out = raw_output()
    dets = yolo_obb(out, conf=0.4, iou=0.5, max_det=50, agnostic=agnostic)
    assert len(dets) == 2 and all(isinstance(d, OrientedBoxes) for d in dets)
    for b in range(2):
        boxes, scores, labels = reference_decode(out[b], 0.4, 0.5, 50, agnostic)
        np.testing.assert_array_equal(dets[b].xywhr.numpy(), boxes)
        np.testing.assert_array_equal(dets[b].scores.numpy(), scores)
        np.testing.assert_array_equal(dets[b].labels.numpy(), labels)


def test_conf_is_strict_and_classes_filter():
    out = torch.zeros(1, 4 + 2 + 1, 3)
    out[0, :4] = torch.tensor([[10.0, 100, 200], [10, 100, 200], [5, 5, 5], [5, 5, 5]])
    out[0, 4] = torch.tensor([0.25, 0.9, 0.1])
    out[0, 5] = torch.tensor([0.1, 0.1, 0.8])
    dets = yolo_obb(out, conf=0.25)[0]
    assert dets.labels.tolist() == [0, 1] and dets.scores.tolist() == pytest.approx([0.9, 0.8])
    assert yolo_obb(out, conf=0.25, classes=[1])[0].labels.tolist() == [1]


def test_multi_label_emits_every_class_above_conf():
    out = torch.zeros(1, 4 + 2 + 1, 1)
    out[0, :4, 0] = torch.tensor([50.0, 50, 20, 10])
    out[0, 4:6, 0] = torch.tensor([0.7, 0.6])
    dets = yolo_obb(out, conf=0.5, multi_label=True)[0]
    assert sorted(dets.labels.tolist()) == [0, 1]  # same box, different classes: never suppressed
    assert len(yolo_obb(out, conf=0.5)[0]) == 1


def test_max_det_and_max_nms():
    out = raw_output(batch=1, n=300)
    assert len(yolo_obb(out, conf=0.1, iou=1.0, max_det=7)[0]) == 7
    top = yolo_obb(out, conf=0.1, iou=1.0, max_det=300, max_nms=20)[0]
    assert len(top) == 20


def test_letterbox_maps_back_to_source_pixels():
    out = raw_output(batch=1)
    lb = Letterbox.fit((1920, 1080), (640, 640))
    plain = yolo_obb(out, conf=0.4)[0]
    mapped = yolo_obb(out, conf=0.4, letterbox=lb)[0]
    assert torch.allclose(mapped.xywhr[:, 0], (plain.xywhr[:, 0] - lb.pad_x) / lb.scale)
    assert torch.allclose(mapped.xywhr[:, 1], (plain.xywhr[:, 1] - lb.pad_y) / lb.scale)
    assert torch.allclose(mapped.xywhr[:, 2:4], plain.xywhr[:, 2:4] * 3)
    assert torch.equal(mapped.xywhr[:, 4], plain.xywhr[:, 4])


def test_end_to_end_output_filters_without_nms():
    out = torch.zeros(2, 300, 7)
    out[0, :3] = torch.tensor([[10.0, 10, 8, 4, 0.9, 2, 0.3], [10, 10, 8, 4, 0.8, 2, 0.3], [50, 50, 8, 4, 0.2, 1, 0.1]])
    dets = yolo_obb(out, conf=0.25)
    assert len(dets[0]) == 2 and len(dets[1]) == 0  # duplicates kept: the model already did NMS
    assert dets[0].xywhr[0].tolist() == pytest.approx([10, 10, 8, 4, 0.3])
    assert dets[0].labels.tolist() == [2, 2]
    assert len(yolo_obb(out, conf=0.1, classes=[1])[0]) == 1
    assert len(yolo_obb(out, conf=0.1, max_det=1)[0]) == 1


def test_format_detection_and_forcing():
    assert detect_format((1, 20, 21504)) == "raw"
    assert detect_format((1, 300, 7)) == "e2e"
    with pytest.raises(ValueError, match="ambiguous"):
        detect_format((1, 7, 7))
    out = torch.zeros(1, 7, 7)
    assert len(yolo_obb(out, format="raw")[0]) == 0 and len(yolo_obb(out, format="e2e")[0]) == 0
    with pytest.raises(ValueError, match="format must be 'raw', 'e2e' or None"):
        yolo_obb(out, format="onnx")


@pytest.mark.parametrize(
    "output, kwargs, error, match",
    [
        (torch.zeros(20, 100), {}, ValueError, r"output must have shape \(B, 4\+nc\+1, N\)"),
        (torch.zeros(1, 5, 100), {}, ValueError, "output must have shape"),
        (torch.zeros(1, 20, 100, dtype=torch.int32), {}, TypeError, "floating-point"),
        (np.zeros((1, 20, 100)), {}, TypeError, "output must be a torch.Tensor"),
        (torch.zeros(1, 20, 100), {"conf": 2.0}, ValueError, r"conf must be in \[0, 1\]"),
        (torch.zeros(1, 20, 100), {"iou": -0.1}, ValueError, r"iou must be in \[0, 1\]"),
        (torch.zeros(1, 20, 100), {"max_det": -1}, ValueError, "max_det must be an int >= 0"),
        (torch.zeros(1, 20, 100), {"letterbox": (1, 0, 0)}, TypeError, "letterbox must be an obbmeta.Letterbox"),
    ],
)
def test_bad_inputs_raise_clear_errors(output, kwargs, error, match):
    with pytest.raises(error, match=match):
        yolo_obb(output, **kwargs)


def test_nan_in_kept_boxes_is_an_error_not_a_silent_drop():
    out = torch.zeros(1, 7, 2)
    out[0, :4, 0] = torch.tensor([10.0, 10, float("nan"), 4])
    out[0, 4, 0] = 0.9
    with pytest.raises(ValueError, match="NaN"):
        yolo_obb(out)


@pytest.mark.parametrize("multi_label", [False, True])
@pytest.mark.parametrize("agnostic", [False, True])
@pytest.mark.parametrize("classes", [None, [0, 2]])
@pytest.mark.parametrize("max_det, max_nms", [(300, 30000), (5, 30000), (300, 50)])
def test_batched_path_gives_exactly_the_per_image_result(multi_label, agnostic, classes, max_det, max_nms):
    """The CUDA path decodes a whole batch with a constant number of host syncs; on the CPU both paths run and
    must agree box for box (order included)."""
    from obbmeta.decode._head import decode_raw
    from obbmeta.decode.yolo import _decode_raw_batched

    out = raw_output(batch=3, nc=3, n=300, seed=7)
    out[1, 4:7] *= 0.2  # an image with few candidates
    out[2, 4:7] = 0.0  # and one with none
    out[0, 4:7, :20] = 0.55  # score ties
    batched = _decode_raw_batched(out, 0.3, 0.5, max_det, classes, multi_label, agnostic, max_nms)
    for x, got in zip(out, batched):
        want = decode_raw(x, 0.3, 0.5, max_det, classes, multi_label, agnostic, max_nms)
        assert torch.equal(got.xywhr, want.xywhr)
        assert torch.equal(got.scores, want.scores)
        assert torch.equal(got.labels, want.labels)
    assert len(batched[2]) == 0


def test_batched_path_splits_nms_per_image_when_the_batch_has_too_many_candidates(monkeypatch):
    import obbmeta.decode.yolo as yolo

    out = raw_output(batch=2, nc=3, n=300, seed=8)
    whole = yolo._decode_raw_batched(out, 0.2, 0.5, 300, None, False, False, 30000)
    monkeypatch.setattr(yolo, "BATCHED_NMS_MAX", 10)
    split = yolo._decode_raw_batched(out, 0.2, 0.5, 300, None, False, False, 30000)
    for a, b in zip(whole, split):
        assert torch.equal(a.xywhr, b.xywhr) and torch.equal(a.labels, b.labels)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_decode_equals_cpu_decode():
    out = raw_output(batch=4, nc=3, n=2000, seed=9)
    lb = Letterbox.fit((1920, 1080), (640, 640))
    cpu = yolo_obb(out, conf=0.3, iou=0.5, letterbox=lb)
    gpu = yolo_obb(out.cuda(), conf=0.3, iou=0.5, letterbox=lb)
    for a, b in zip(cpu, gpu):
        assert b.device.type == "cuda"
        assert torch.equal(a.labels, b.labels.cpu()) and torch.allclose(a.xywhr, b.xywhr.cpu())


def reference_decode_per_class(x, conf, iou, thresholds, max_det):
    """Ultralytics' single-label rules, each class suppressed by greedy shapely NMS at its own threshold (nvinfer's
    per-class nms-iou-threshold), the kept boxes of all classes by descending score, ties lower anchor first."""
    x = x.T.numpy()
    scores_all = x[:, 4:-1]
    labels, scores = scores_all.argmax(1), scores_all.max(1)
    keep = scores > conf
    boxes, scores, labels = np.c_[x[:, :4], x[:, -1]][keep], scores[keep], labels[keep]
    kept = []
    for c in np.unique(labels):
        mine = np.flatnonzero(labels == c)
        kept += [mine[i] for i in reference.greedy_nms(boxes[mine], scores[mine], thresholds.get(int(c), iou))]
    order = sorted(kept, key=lambda i: (-float(scores[i]), i))[:max_det]
    return boxes[order], scores[order], labels[order]


@settings(max_examples=12, deadline=None)
@given(thresholds=st.dictionaries(st.integers(0, 3), st.sampled_from([0.0, 0.05, 0.2, 0.5, 0.8, 1.0]), max_size=4),
       seed=st.integers(0, 2**16), max_det=st.sampled_from([5, 300]))
def test_per_class_iou_matches_per_class_shapely_nms(thresholds, seed, max_det):
    out = raw_output(batch=2, nc=3, n=120, seed=seed)  # class 3 is none of the head's: left out
    dets = yolo_obb(out, conf=0.3, iou=0.5, max_det=max_det, class_iou=thresholds)
    for b in range(2):
        boxes, scores, labels = reference_decode_per_class(out[b], 0.3, 0.5, thresholds, max_det)
        np.testing.assert_array_equal(dets[b].labels.numpy(), labels)
        np.testing.assert_array_equal(dets[b].scores.numpy(), scores)
        np.testing.assert_array_equal(dets[b].xywhr.numpy(), boxes)


def test_per_class_iou_changes_only_its_own_class():
    out = raw_output(batch=1, nc=3, n=400, seed=5)
    base = yolo_obb(out, conf=0.3, iou=0.5)[0]
    tight = yolo_obb(out, conf=0.3, iou=0.5, class_iou={1: 0.0})[0]
    for c in (0, 2):
        assert base.xywhr[base.labels == c].tolist() == tight.xywhr[tight.labels == c].tolist()
    assert 0 < int((tight.labels == 1).sum()) < int((base.labels == 1).sum())
    assert yolo_obb(out, conf=0.3, iou=0.5, class_iou={})[0].scores.tolist() == base.scores.tolist()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"class_iou": [0.5, 0.5]}, TypeError, "class_iou must be None or a mapping of int class id"),
    ({"class_iou": {-1: 0.5}}, ValueError, "class_iou's keys must be class ids"),
    ({"class_iou": {True: 0.5}}, ValueError, "class_iou's keys must be class ids"),
    ({"class_iou": {"car": 0.5}}, ValueError, "class_iou's keys must be class ids"),
    ({"class_iou": {1: 1.5}}, ValueError, r"class_iou\[1\] must be in \[0, 1\]"),
    ({"class_iou": {1: float("nan")}}, ValueError, r"class_iou\[1\] must be in \[0, 1\]"),
    ({"class_iou": {1: 0.3}, "agnostic": True}, ValueError, "needs class-aware NMS: pass agnostic=False"),
])
@pytest.mark.parametrize("padded", [False, True])
def test_per_class_iou_refusals_name_the_argument(kwargs, error, match, padded):
    from obbmeta.decode import yolo_obb_padded

    with pytest.raises(error, match=match):
        (yolo_obb_padded if padded else yolo_obb)(raw_output(batch=1), **kwargs)


def zeroed_below(out, thresholds, conf, multi_label):
    """nvinfer's per-class pre-cluster thresholds as its YOLO parsers apply them, written out: an anchor whose best
    class scores at or below that class's threshold has every score set to 0 (with multi-label: each class score at
    or below its own class's threshold), then the decode keeps what is above the lowest threshold."""
    out = out.clone()
    nc = out.shape[1] - 5
    thr = torch.tensor([thresholds.get(c, conf) for c in range(nc)])
    scores = out[:, 4:4 + nc]
    if multi_label:
        scores[scores <= thr.view(1, nc, 1)] = 0.0
    else:
        best, label = scores.max(dim=1)
        scores.masked_fill_((best <= thr[label]).unsqueeze(1), 0.0)
    return out, min([conf, *(t for c, t in thresholds.items() if c < nc)])


@settings(max_examples=15, deadline=None)
@given(thresholds=st.dictionaries(st.integers(0, 3), st.sampled_from([0.0, 0.1, 0.35, 0.6, 0.95, 1.0]), max_size=4),
       seed=st.integers(0, 2**16), multi_label=st.booleans())
def test_per_class_conf_equals_nvinfers_rule_written_out(thresholds, seed, multi_label):
    out = raw_output(batch=2, nc=3, n=200, seed=seed)  # class 3 is none of the head's: left out
    zeroed, low = zeroed_below(out, thresholds, 0.3, multi_label)
    got = yolo_obb(out, conf=0.3, iou=0.5, multi_label=multi_label, class_conf=thresholds)
    want = yolo_obb(zeroed, conf=low, iou=0.5, multi_label=multi_label)
    for g, w in zip(got, want):
        assert g.labels.tolist() == w.labels.tolist() and g.scores.tolist() == w.scores.tolist()
        assert g.xywhr.tolist() == w.xywhr.tolist()
        for c, t in thresholds.items():
            assert (g.scores[g.labels == c] > t).all()


def test_per_class_conf_takes_the_best_class_first_then_its_threshold():
    out = torch.zeros(1, 4 + 2 + 1, 3)
    out[0, :4] = torch.tensor([[10.0, 100, 200], [10, 100, 200], [5, 5, 5], [5, 5, 5]])
    out[0, 4:6, 0] = torch.tensor([0.8, 0.5])  # best class 0 misses its 0.9: dropped, not relabelled class 1
    out[0, 4:6, 1] = torch.tensor([0.95, float("nan")])  # a NaN score: no candidate, as without thresholds
    out[0, 4:6, 2] = torch.tensor([0.3, 0.6])  # best class 1 at conf 0.25: kept
    (d,) = yolo_obb(out, conf=0.25, class_conf={0: 0.9})
    assert d.labels.tolist() == [1] and d.scores.tolist() == pytest.approx([0.6])
    (m,) = yolo_obb(out, conf=0.25, class_conf={0: 0.9}, multi_label=True)  # each class score at its own threshold
    assert sorted(zip(m.labels.tolist(), m.scores.tolist())) == [(0, pytest.approx(0.95)), (1, 0.5),
                                                                 (1, pytest.approx(0.6))]
    assert yolo_obb(out, conf=0.25)[0].labels.tolist() == [0, 1]


def test_per_class_conf_on_an_end_to_end_head_keeps_rows_above_their_class_threshold():
    out = torch.zeros(1, 4, 7)
    out[0, :, 2:4] = 5.0
    out[0, :, 4] = torch.tensor([0.9, 0.8, 0.5, 0.3])
    out[0, :, 5] = torch.tensor([0.0, 1.0, 2.0, 0.0])
    (d,) = yolo_obb(out, conf=0.25, class_conf={0: 0.85, 2: 0.6})
    assert d.scores.tolist() == pytest.approx([0.9, 0.8]) and d.labels.tolist() == [0, 1]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"class_conf": [0.5]}, TypeError, "class_conf must be None or a mapping of int class id -> score threshold"),
    ({"class_conf": {-2: 0.5}}, ValueError, "class_conf's keys must be class ids"),
    ({"class_conf": {0: -0.1}}, ValueError, r"class_conf\[0\] must be in \[0, 1\]"),
])
@pytest.mark.parametrize("padded", [False, True])
def test_per_class_conf_refusals_name_the_argument(kwargs, error, match, padded):
    from obbmeta.decode import yolo_obb_padded

    with pytest.raises(error, match=match):
        (yolo_obb_padded if padded else yolo_obb)(raw_output(batch=1), **kwargs)
