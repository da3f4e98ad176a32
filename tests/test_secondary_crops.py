"""Secondary detectors on rotated crops (obbmeta.secondary.detect): the crop against OpenCV's warpAffine of the same
region, and each child box mapped back to the frame against the affine map computed by hand from the parent's
corners (angles composed, corners within 0.5 px), for parents at many angles and every reading."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from obbmeta import OrientedBoxes
from obbmeta.frames.preprocess import preset
from obbmeta.infer import Detector
from obbmeta.secondary import SecondaryDetector, read_box

sys.path.insert(0, str(Path(__file__).parent / "gst"))
import obb_toy_models  # noqa: E402

cv2 = pytest.importorskip("cv2", reason="OpenCV is the crop's oracle")
IW, IH = 96, 64


def corners(cx, cy, w, h, a):
    """The box's corners in obbmeta's order (from (-w/2, -h/2), clockwise on screen), written here from the
    convention's definition."""
    c, s = math.cos(a), math.sin(a)
    return np.array([[cx + c * dx - s * dy, cy + s * dx + c * dy]
                     for dx, dy in ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))])


def region_by_hand(box, keep, center, reading):
    """The frame quadrilateral the crop covers: the parent's rectangle (after the reading), grown to the input's
    shape around it when the ratio is kept (the box centred, or at the top-left corner)."""
    cx, cy, w, h, a = box
    w, h, a = read_box(w, h, a, reading)
    if not keep:
        return corners(cx, cy, w, h, a)
    s = min(IW / w, IH / h)
    rw, rh = IW / s, IH / s
    q = corners(cx, cy, w, h, a)
    if center:
        return corners(cx, cy, rw, rh, a)
    u, v = (q[1] - q[0]) / w, (q[3] - q[0]) / h  # the box's x and y axes; the region starts at its corner 0
    return np.array([q[0], q[0] + u * rw, q[0] + u * rw + v * rh, q[0] + v * rh])


def crop_map(quad):
    """The affine map crop pixel -> frame point: (0, 0) to corner 0, (IW, 0) to corner 1, (0, IH) to corner 3."""
    src = np.float32([[0, 0], [IW, 0], [0, IH]])
    return cv2.getAffineTransform(src, np.float32([quad[0], quad[1], quad[3]]))


PARENTS = [(80.0, 60.0, 70.0, 30.0, a) for a in np.linspace(-math.pi, math.pi, 9)] + \
          [(90.0, 70.0, 24.0, 60.0, a) for a in (0.2, 1.9, -2.4)]  # taller than wide: long-side turns them


@pytest.mark.parametrize("reading", ["as-is", "left-to-right", "long-side"])
@pytest.mark.parametrize("keep,center", [(False, False), (True, True), (True, False)])
def test_children_map_back_through_the_crop_as_the_affine_map_of_the_parents_corners(reading, keep, center):
    frame = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (160, 200, 3), dtype=np.uint8))
    pre = preset("nvinfer").with_(keep_ratio=keep, center=center)
    det = Detector(obb_toy_models.Children(), input_size=(IW, IH), conf=0.1, iou=0.5, max_det=0, device="cpu",
                   preprocess_mode=pre)
    sec = SecondaryDetector(det, reading=reading)
    table = torch.tensor([[0.0, *p] for p in PARENTS], dtype=torch.float32)
    got = sec([frame], "RGB", table)
    assert len(got) == len(PARENTS)
    for parent, kids in zip(PARENTS, got):
        m = crop_map(region_by_hand(parent, keep, center, reading))
        scale = np.linalg.norm(m[:, 0]) / np.linalg.norm(m[:, 1]) * IH / IW  # 1 when the crop keeps proportions
        assert len(kids) == len(obb_toy_models.CHILDREN)
        order = torch.argsort(kids.scores, descending=True)
        for (cx, cy, w, h, a, c, s), k in zip(obb_toy_models.CHILDREN, order.tolist()):
            child = corners(cx * IW, cy * IH, w * IW, h * IH, a)  # in crop pixels
            want = child @ m[:, :2].T + m[:, 2]
            have = kids[k:k + 1].polygons()[0].double().numpy()
            assert int(kids.labels[k]) == c and abs(float(kids.scores[k]) - s) < 1e-6
            if abs(scale - 1) < 1e-6:  # a rectangle stays one: the same corners, in the same order
                np.testing.assert_allclose(have, want, atol=0.5)
            else:  # a stretched crop maps it to a parallelogram: the box is its faithful rectangle (same centre)
                np.testing.assert_allclose(have.mean(0), want.mean(0), atol=0.5)


@pytest.mark.parametrize("keep,center", [(False, False), (True, True)])
def test_the_crop_is_warp_affine_of_the_region(keep, center):
    rng = np.random.default_rng(1)
    img = cv2.GaussianBlur(rng.integers(0, 256, (160, 200, 3), dtype=np.uint8), (7, 7), 2)
    pre = preset("nvinfer").with_(keep_ratio=keep, center=center, scale=1.0)
    det = Detector(obb_toy_models.Children(), input_size=(IW, IH), device="cpu", preprocess_mode=pre)
    sec = SecondaryDetector(det)
    parent = (100.0, 80.0, 70.0, 40.0, 0.6)
    x, _ = sec.crops([torch.from_numpy(img)], "RGB", torch.tensor([[0.0, *parent]]))
    m = crop_map(region_by_hand(parent, keep, center, "as-is"))
    # warpAffine's inverse map in pixel centres: crop pixel (i, j) centre (i + 0.5, j + 0.5) -> frame, minus 0.5
    m_centres = m.copy()
    m_centres[:, 2] += 0.5 * (m[:, 0] + m[:, 1]) - 0.5
    want = cv2.warpAffine(img, m_centres, (IW, IH), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0).astype(np.float64)
    have = x[0].permute(1, 2, 0).double().numpy()
    if keep:  # outside the box the crop is padding (0 for nvinfer): compare inside it
        s = min(IW / parent[2], IH / parent[3])
        nw, nh = parent[2] * s, parent[3] * s
        x0, y0 = (IW - nw) / 2, (IH - nh) / 2
        sl = (slice(int(math.ceil(y0)), int(y0 + nh)), slice(int(math.ceil(x0)), int(x0 + nw)))
        assert np.all(have[: int(y0) - 1] == 0) or y0 < 1
        have, want = have[sl], want[sl]
    assert np.abs(have - want).max() <= 1.0  # whole levels, rounding of two bilinear implementations


def test_children_of_parents_in_several_frames_and_an_empty_table():
    frames = [torch.zeros(50, 60, 3, dtype=torch.uint8), torch.zeros(80, 90, 3, dtype=torch.uint8)]
    det = Detector(obb_toy_models.Children(), input_size=(IW, IH), device="cpu", conf=0.1)
    sec = SecondaryDetector(det)
    assert sec(frames, "RGB", torch.zeros(0, 6)) == []
    got = sec(frames, "RGB", torch.tensor([[1.0, 45, 40, 30, 20, 0.3], [0.0, 30, 25, 20, 10, -1.0]]))
    assert [len(g) for g in got] == [2, 2] and all(isinstance(g, OrientedBoxes) for g in got)
    # each child lies inside its parent (the toy's boxes sit inside its input)
    from shapely.geometry import Polygon

    for parent, kids in zip([(45, 40, 30, 20, 0.3), (30, 25, 20, 10, -1.0)], got):
        outline = Polygon(corners(*parent)).buffer(0.5)
        assert all(outline.contains(Polygon(p)) for p in kids.polygons().double().numpy())


def test_children_of_many_crops_map_back_as_each_crop_alone():
    """to_frames maps every crop's children in one pass (one copy from the device): bit for bit what each crop
    alone gives, with stretched and letterboxed crops mixed, one of equal scales (the uniform map) and empty ones."""
    from obbmeta.secondary.detect import CropRegion, regions, to_frame, to_frames

    rng = np.random.default_rng(5)
    for keep, center in ((False, True), (True, True), (True, False)):
        table = torch.tensor(np.c_[rng.uniform(0, 1000, (6, 2)), rng.uniform(5, 300, (6, 2)), rng.uniform(-4, 4, 6)])
        regs = regions(table, (256, 64), keep, center, 0.1, "long-side")
        regs[0] = CropRegion(regs[0].cx, regs[0].cy, 128.0, 32.0, regs[0].angle, regs[0].box)  # equal scales
        rows = [np.c_[rng.uniform(0, 256, (n, 1)), rng.uniform(0, 64, (n, 1)), rng.uniform(1, 50, (n, 2)),
                      rng.uniform(-3, 3, n)] for n in (3, 0, 2, 5, 0, 1)]
        boxes = [OrientedBoxes(torch.tensor(x, dtype=torch.float32), torch.rand(len(x)), torch.randint(0, 3, (len(x),)))
                 for x in rows]
        together = to_frames(boxes, regs, (256, 64))
        for b, r, got in zip(boxes, regs, together):
            alone = to_frame(b, r, (256, 64))
            assert torch.equal(got.xywhr, alone.xywhr) and torch.equal(got.scores, b.scores)
            assert torch.equal(got.labels, b.labels) and len(got) == len(b)
    assert to_frames([], [], (256, 64)) == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("graph", [False, True])
def test_children_on_cuda_queued_and_in_a_graph_are_the_cpu_children(graph):
    """submit_prepared on CUDA (the fixed-size decode, in a CUDA graph with cuda_graph, batch-size 4: three model
    calls queued before any result is taken) gives the children the CPU gives, parent for parent."""
    rng = np.random.default_rng(3)
    frames = [torch.from_numpy(rng.integers(0, 255, (120, 160, 3), dtype=np.uint8)) for _ in range(2)]
    table = torch.tensor(np.c_[rng.integers(0, 2, 10), rng.uniform(40, 120, (10, 1)), rng.uniform(30, 90, (10, 1)),
                               rng.uniform(20, 60, (10, 2)), rng.uniform(-3, 3, 10)], dtype=torch.float32)
    cpu = SecondaryDetector(Detector(obb_toy_models.Children(), input_size=(IW, IH), device="cpu", conf=0.1))
    gpu = SecondaryDetector(Detector(obb_toy_models.Children(), input_size=(IW, IH), device="cuda", conf=0.1,
                                     batch_size=4, cuda_graph=graph))
    want = cpu(frames, "RGB", table)
    for _ in range(2):  # the second time through the captured graphs
        got = gpu([f.cuda() for f in frames], "RGB", table)
        assert [len(g) for g in got] == [len(w) for w in want] and sum(len(w) for w in want) > 0
        for g, w in zip(got, want):
            order_g, order_w = torch.argsort(g.xywhr[:, 0]), torch.argsort(w.xywhr[:, 0])
            assert torch.allclose(g.xywhr[order_g], w.xywhr[order_w], atol=1e-3)
            assert torch.equal(g.labels[order_g], w.labels[order_w])
