"""Cross-checks against Ultralytics (AGPL-3.0, never a dependency: an optional oracle, skipped when it is not
installed; benchmarks/setup_comparators.sh installs it)."""
import math

import numpy as np
import pytest
import reference
import torch

from obbmeta import OrientedBoxes, conventions

results = pytest.importorskip("ultralytics.engine.results", reason="ultralytics is not installed")


def data(n=50, seed=0):
    rng = np.random.default_rng(seed)
    return torch.tensor(np.c_[rng.uniform(0, 640, (n, 2)), rng.uniform(2, 200, (n, 2)), rng.uniform(-4, 4, n),
                              rng.uniform(0, 1, n), rng.integers(0, 15, n)], dtype=torch.float32)


def test_from_ultralytics_reads_results_obb_and_its_data():
    d = data()
    obb = results.OBB(d, orig_shape=(480, 640))
    res = results.Results(np.zeros((480, 640, 3), np.uint8), path="x.jpg", names={i: str(i) for i in range(15)}, obb=d)
    for src in (obb, res, obb.data):
        boxes = OrientedBoxes.from_ultralytics(src)
        assert torch.equal(boxes.xywhr, obb.xywhr) and torch.equal(boxes.scores, obb.conf)
        assert boxes.labels.tolist() == obb.cls.long().tolist()


def test_ultralytics_corners_are_the_same_rectangles_as_ours():
    d = data(seed=1)
    theirs = results.OBB(d, orig_shape=(480, 640)).xyxyxyxy.double().numpy()
    ours = OrientedBoxes.from_ultralytics(d).polygons().double().numpy()
    from shapely.geometry import Polygon

    for a, b, box in zip(theirs, ours, d.tolist()):
        assert Polygon(a).symmetric_difference(Polygon(b)).area <= 1e-3 * box[2] * box[3]
        assert reference.rect(*box[:5]).symmetric_difference(Polygon(b)).area <= 1e-3 * box[2] * box[3]


def test_regularize_matches_ultralytics_regularize_rboxes():
    ops = pytest.importorskip("ultralytics.utils.ops")
    x = data(500, seed=2)[:, :5].double()
    x = x[(torch.remainder(x[:, 4], math.pi / 2) > 1e-9)]  # away from the range ends, where rounding may differ
    theirs = ops.regularize_rboxes(x.clone())
    torch.testing.assert_close(conventions.ultralytics_regularize(x), theirs, atol=1e-9, rtol=0)


def test_legacy_regularize_on_squares_matches_the_formula_ultralytics_used_up_to_8_3_79():
    """Ultralytics 8.3.79 and earlier kept (w, h, t) only when w > h, else (h, w, t + pi/2), then t mod pi; 8.4
    (installed here) no longer ships that form, so the fact is checked against its documented arithmetic."""
    x = data(200, seed=3)[:, :5].double()
    x[:, 3] = x[:, 2]
    expected = torch.stack((x[:, 0], x[:, 1], x[:, 2], x[:, 3], torch.remainder(x[:, 4] + math.pi / 2, math.pi)), -1)
    torch.testing.assert_close(conventions.ultralytics_regularize_legacy(x), expected, atol=1e-12, rtol=0)


# ---------------------------------------------------------------- obbinfer's preprocessing and decode vs model.predict

def _no_torchvision_import_needed():
    """Ultralytics' predictor imports torchvision for its axis-aligned NMS even on OBB models; PyPI's torchvision
    does not load beside this torch, and the rotated path never uses it: an empty module stands in."""
    import sys
    import types

    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure to import it
        sys.modules["torchvision"] = types.ModuleType("torchvision")


def _ultralytics_model(yaml: str):
    """An OBB model built from Ultralytics' YAML, its BatchNorm statistics taken from random images so that the
    random weights give scores that vary with the image (freshly initialised they are all ~1e-4)."""
    _no_torchvision_import_needed()
    from ultralytics import YOLO

    torch.manual_seed(0)
    m = YOLO(yaml)
    for mod in m.model.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.momentum = 0.5
    m.model.train()
    with torch.no_grad():
        for k in range(6):
            m.model(torch.rand(2, 3, 384, 640, generator=torch.Generator().manual_seed(k)))
    m.model.eval()
    # The class logits of each head convolution spread to mean -4, std 2 (sigmoid ~0.02, a tail above 0.1): a few
    # dozen boxes per image pass conf=0.1, each with its own score.
    head = m.model.model[-1]
    nc = len(m.model.names)
    convs = [c for c in head.modules()
             if isinstance(c, torch.nn.Conv2d) and c.out_channels == nc and c.bias is not None]
    stats = {}
    hooks = [c.register_forward_hook(lambda mod, _i, out: stats.__setitem__(mod, (out - mod.bias.view(1, -1, 1, 1))))
             for c in convs]
    with torch.no_grad():
        m.model(torch.rand(1, 3, 384, 640, generator=torch.Generator().manual_seed(9)))
        for c in convs:
            k = 2.0 / float(stats[c].std().clamp(min=1e-6))
            c.weight *= k
            c.bias.copy_(torch.full_like(c.bias, -4.0 - k * float(stats[c].mean())))
    for h in hooks:
        h.remove()
    return m


@pytest.mark.parametrize("yaml", ["yolo11n-obb.yaml", "yolo26n-obb.yaml"])
@pytest.mark.parametrize("w,h", [(1280, 720), (720, 1280), (1366, 768)])
def test_obbinfers_detector_equals_model_predict_box_for_box_on_downscaled_frames(yaml, w, h):
    """Same frame, same (fused) network: obbmeta's ultralytics-rect preprocessing, decode and inverse against
    model.predict. Suppression is off in both (iou=1): obbmeta's greedy exact-IoU NMS and Ultralytics' Fast-NMS on
    ProbIoU keep different sets by design (docs/gst.md). Boxes agree exactly where the resize keeps the aspect ratio
    and within the inverse's documented difference (Ultralytics divides by the unrounded ratio) at 1366x768."""
    from shapely.geometry import Polygon

    from obbmeta.infer import Detector

    m = _ultralytics_model(yaml)
    img = np.random.default_rng(w).integers(0, 256, (h, w, 3), dtype=np.uint8)  # BGR, as Ultralytics reads frames
    theirs = m.predict(img, imgsz=640, conf=0.1, iou=1.0, device="cpu", verbose=False)[0].obb.data
    det = Detector(m.predictor.model.model, input_size=640, conf=0.1, iou=1.0, max_det=300, device="cpu",
                   preprocess_mode="ultralytics-rect")
    (ours,) = det([torch.from_numpy(img[..., ::-1].copy())], "RGB")
    assert len(ours) == len(theirs) > 20
    o = torch.argsort(ours.scores, descending=True, stable=True)
    t = theirs[torch.argsort(theirs[:, 5], descending=True, stable=True)]
    assert torch.equal(ours.scores[o], t[:, 5]) and torch.equal(ours.labels[o], t[:, 6].long())
    exact = (w, h) != (1366, 768)
    for a, b in zip(OrientedBoxes(ours.xywhr[o], ours.scores[o], ours.labels[o]).polygons().tolist(),
                    OrientedBoxes(t[:, :5], t[:, 5], t[:, 6].long()).polygons().tolist()):
        pa, pb = Polygon(a), Polygon(b)
        iou = pa.intersection(pb).area / pa.union(pb).area
        assert iou > (1 - 1e-6 if exact else 0.995), iou
