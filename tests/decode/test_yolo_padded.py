"""yolo_obb_padded: yolo_obb's detections in fixed-size tables (no host sync on CUDA). On the CPU it is yolo_obb's own
code padded; on CUDA it is the fused kernel, which must give yolo_obb's CPU answer on every option, inside a captured
CUDA graph too."""
import numpy as np
import pytest
import torch
from devices import needs_cuda

from obbmeta import Letterbox
from obbmeta.decode import yolo_obb, yolo_obb_padded
from obbmeta.geometry import STATUS_OVERFLOW
from obbmeta.ops import status as ops_status

NC = 6


def head(batch: int, anchors: int = 3000, seed: int = 0, objects: int = 25, proposals: int = 12) -> torch.Tensor:
    """A raw head (B, 4 + NC + 1, anchors): objects seen by several jittered anchors above conf, the rest below."""
    rng = np.random.default_rng(seed)
    out = np.zeros((batch, 4 + NC + 1, anchors), np.float32)
    for b in range(batch):
        out[b, 0:2] = rng.uniform(0, 640, (2, anchors))
        out[b, 2:4] = rng.uniform(4, 60, (2, anchors))
        out[b, -1] = rng.uniform(-np.pi, np.pi, anchors)
        out[b, 4:4 + NC] = rng.uniform(0, 0.2, (NC, anchors))
        hot = rng.choice(anchors, objects * proposals, replace=False)
        centre = np.c_[rng.uniform(30, 610, (objects, 2)), rng.uniform(8, 60, (objects, 2)),
                       rng.uniform(-3, 3, objects)]
        boxes = np.repeat(centre, proposals, axis=0)
        boxes[:, :2] += rng.normal(0, 1.5, (len(boxes), 2))
        boxes[:, 2:4] *= rng.normal(1, 0.05, (len(boxes), 2))
        boxes[:, 4] += rng.normal(0, 0.05, len(boxes))
        out[b, :4, hot], out[b, -1, hot] = boxes[:, :4], boxes[:, 4]
        cls = np.repeat(rng.integers(0, NC, objects), proposals)
        out[b, 4 + cls, hot] = rng.uniform(0.3, 1.0, hot.size)
        second = rng.choice(hot.size, hot.size // 4, replace=False)  # a second class above conf (multi-label)
        out[b, 4 + (cls[second] + 1) % NC, hot[second]] = rng.uniform(0.26, 0.6, second.size)
    return torch.from_numpy(out)


def _same(a, b, atol=1e-3):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.labels.cpu().tolist() == y.labels.cpu().tolist()
        torch.testing.assert_close(x.scores.cpu(), y.scores.cpu(), rtol=0, atol=0)
        torch.testing.assert_close(x.xywhr.cpu(), y.xywhr.cpu(), rtol=0, atol=atol)


OPTIONS = [
    {},
    {"multi_label": True},
    {"agnostic": True},
    {"classes": [1, 4]},
    {"max_det": 7},
    {"max_nms": 50},  # an image's candidates cut to its 50 best before NMS
    {"max_nms": 50, "multi_label": True, "agnostic": True},
    {"letterbox": Letterbox.fit((1920, 1080), (640, 640))},
    {"letterbox": Letterbox.fit((1366, 768), (640, 640))},  # real per-axis scales 0.46852 / 0.46875
    {"letterbox": Letterbox(0.5, 3.0, -7.0, scale_y=0.25)},  # a stretch as nvinfer's maintain-aspect-ratio=0 makes
    {"conf": 0.5, "iou": 0.3},
    {"class_iou": {1: 0.05, 3: 0.9, 4: 0.5}},  # nvinfer's per-class nms-iou-threshold; class 4 at the default
    {"class_iou": {0: 0.2, 9: 0.1}, "multi_label": True, "classes": [0, 2, 5]},  # class 9 is none of the head's
    {"class_conf": {0: 0.6, 3: 0.05}},  # nvinfer's per-class pre-cluster-threshold
    {"class_conf": {1: 0.9, 9: 0.5}, "multi_label": True},
    {"class_conf": {2: 0.7}, "class_iou": {2: 0.1}, "max_nms": 50, "classes": [1, 2, 3]},
]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "defaults")
def test_cpu_padded_tables_hold_yolo_obb_results(options):
    out = head(3)
    kw = {"conf": 0.25, "iou": 0.5, **options}
    padded = yolo_obb_padded(out, **kw)
    expect = yolo_obb(out, **kw)
    max_det = kw.get("max_det", 300)
    assert padded.boxes.shape == (3, max_det, 5) and padded.labels.dtype == torch.int64
    assert padded.counts.tolist() == [len(d) for d in expect] and int(padded.status) == 0
    _same(padded.unpad(), expect, atol=0)
    for b, d in enumerate(expect):
        assert (padded.boxes[b, len(d):] == 0).all() and (padded.scores[b, len(d):] == 0).all()


@pytest.mark.parametrize("padded", [False, True])
def test_a_letterbox_scaled_per_axis_is_undone_per_axis(padded):
    """The fused kernels undo one scale; a letterbox with two must still move centres by each axis' own scale and
    keep each box's area over the product of the scales."""
    out = head(2)
    lb = Letterbox(0.5, 3.0, -7.0, scale_y=0.25)
    decode = (lambda **kw: yolo_obb_padded(out, **kw).unpad()) if padded else (lambda **kw: yolo_obb(out, **kw))
    plain, mapped = decode(conf=0.25, iou=0.5), decode(conf=0.25, iou=0.5, letterbox=lb)
    for a, b in zip(plain, mapped):
        assert len(a) == len(b) > 0
        x, y = a.xywhr.double(), b.xywhr.double()
        torch.testing.assert_close(y[:, 0], (x[:, 0] - 3.0) / 0.5)
        torch.testing.assert_close(y[:, 1], (x[:, 1] + 7.0) / 0.25)
        torch.testing.assert_close(y[:, 2] * y[:, 3], x[:, 2] * x[:, 3] / (0.5 * 0.25), rtol=1e-5, atol=1e-3)
    if padded:
        table = yolo_obb_padded(out, conf=0.25, iou=0.5, letterbox=lb)
        for b, d in enumerate(mapped):
            assert (table.boxes[b, len(d):] == 0).all()


def test_nan_candidate_box_sets_status_and_unpad_raises_like_yolo_obb():
    out = head(2)
    hot = int((out[1, 4:4 + NC].amax(0) > 0.25).nonzero()[0])
    out[1, 2, hot] = float("nan")
    padded = yolo_obb_padded(out, 0.25, 0.5)
    assert int(padded.status) == 1 and padded.counts.tolist() == [-1, -1]
    with pytest.raises(ValueError, match="NaN or inf"):
        padded.unpad()
    with pytest.raises(ValueError, match="NaN or inf"):
        yolo_obb(out, 0.25, 0.5)


def test_padded_arguments_are_checked():
    with pytest.raises(ValueError, match="overlap_words"):
        yolo_obb_padded(head(1), overlap_words=-2)
    with pytest.raises(ValueError, match="max_nms"):
        yolo_obb_padded(head(1), max_nms=0)


def test_padded_traces_with_fullgraph_compile():
    out = head(2)
    fn = torch.compile(lambda o: yolo_obb_padded(o, 0.25, 0.5, max_det=20), fullgraph=True)
    _same(fn(out).unpad(), yolo_obb(out, 0.25, 0.5, max_det=20), atol=0)


@needs_cuda
@pytest.mark.parametrize("batch", [1, 4, 16])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "defaults")
def test_cuda_fused_decode_equals_the_cpu_decode(batch, options):
    out = head(batch, seed=batch)
    kw = {"conf": 0.25, "iou": 0.5, **options}
    expect = yolo_obb(out, **kw)
    got = yolo_obb(out.cuda(), **kw)
    assert all(d.xywhr.device.type == "cuda" for d in got)
    _same(got, expect)
    _same(yolo_obb_padded(out.cuda(), **kw).unpad(), expect)


@needs_cuda
def test_cuda_fused_decode_on_half_precision_heads_and_many_candidates():
    out = head(2, anchors=21504, objects=200, proposals=20)
    _same(yolo_obb(out.half().cuda(), 0.25, 0.5), yolo_obb(out.half(), 0.25, 0.5))


@needs_cuda
def test_cuda_decode_of_more_class_groups_than_one_sort_call_takes():
    """48 images x 6 classes = 288 (image, class) segments: the kernels sort them in two calls of at most 256 (more in
    one would make CUB synchronise with the host), eagerly and inside a captured graph."""
    out = head(48, anchors=800, seed=40)
    _same(yolo_obb(out.cuda(), 0.25, 0.5), yolo_obb(out, 0.25, 0.5))
    static = out.cuda()
    yolo_obb_padded(static, 0.25, 0.5)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = yolo_obb_padded(static, 0.25, 0.5)
    fresh = head(48, anchors=800, seed=41)
    static.copy_(fresh.cuda())
    graph.replay()
    _same(result.unpad(), yolo_obb(fresh, 0.25, 0.5))


@needs_cuda
@pytest.mark.parametrize("agnostic", [False, True])
def test_cuda_decode_of_one_class_holding_every_anchor_with_score_ties(agnostic):
    """Every one of 21 504 anchors a candidate of class 0: one segment far larger than a block holds (sorted by CUB in
    passes over global memory), with runs of equal scores that must go to the lower anchor first; and more kept
    boxes per image than the output ranking holds in shared memory (1 024), so they are ranked by binary searches."""
    out = head(2, anchors=21504, seed=42)
    out[:, 4] = torch.rand(2, 21504, generator=torch.Generator().manual_seed(43)) * 0.7 + 0.3
    out[:, 4, 100:400] = 0.625  # ties
    out[:, 4, 5000:5050] = 0.875
    out[:, 5:4 + NC] = 0.0
    kw = {"conf": 0.25, "iou": 0.5, "agnostic": agnostic, "max_det": 3000}
    expect = yolo_obb(out, **kw)
    assert min(len(d) for d in expect) > 1024
    _same(yolo_obb(out.cuda(), **kw), expect)


@needs_cuda
@pytest.mark.parametrize("options", [{}, {"agnostic": True}, {"max_det": 9}, {"multi_label": True}],
                         ids=lambda o: ",".join(o) or "defaults")
def test_cuda_decode_ranks_score_ties_across_classes_by_anchor(options):
    """Scores of three values only: equal scores in different classes of one image, which the output ranking (in
    shared memory, a few dozen kept boxes an image) orders by anchor, as the CPU decode does."""
    out = head(3, seed=44)
    scores = out[:, 4:4 + NC]
    out[:, 4:4 + NC] = torch.where(scores > 0.25, (scores * 4).ceil() / 4, scores)
    kw = {"conf": 0.25, "iou": 0.5, **options}
    _same(yolo_obb(out.cuda(), **kw), yolo_obb(out, **kw))


@needs_cuda
def test_cuda_nan_candidate_raises():
    out = head(2)
    hot = int((out[0, 4:4 + NC].amax(0) > 0.25).nonzero()[0])
    out[0, 0, hot] = float("inf")
    with pytest.raises(ValueError, match="NaN or inf"):
        yolo_obb(out.cuda(), 0.25, 0.5)


@needs_cuda
def test_cuda_retry_when_the_first_overlap_pool_is_too_small(monkeypatch):
    monkeypatch.setattr(ops_status, "POOL_FIRST", 4)
    monkeypatch.setattr(ops_status, "_pool_seen", {})
    out = head(4, seed=3)
    _same(yolo_obb(out.cuda(), 0.25, 0.5), yolo_obb(out, 0.25, 0.5))
    padded = yolo_obb_padded(out.cuda(), 0.25, 0.5, overlap_words=4)
    assert int(padded.status) == 4 and (padded.counts == -1).all()
    with pytest.raises(RuntimeError, match="overlap_words"):
        padded.unpad()


def test_yolo_obb_overflow_beyond_the_largest_pool_advises_fewer_images_not_overlap_words(monkeypatch):
    """yolo_obb has no overlap_words: when even its exactly sized second run overflows, the error must not ask for
    one."""
    from obbmeta.decode import yolo_padded

    def overflowing(output, conf, iou, rows, allowed, multi_label, agnostic, max_nms, scale, pad_x, pad_y, pool,
                    class_iou=None, class_conf=None):
        b = output.shape[0]
        return (torch.zeros(b, rows, 5), torch.zeros(b, rows), torch.zeros(b, rows, dtype=torch.int64),
                torch.full((b,), -1, dtype=torch.int64), torch.tensor(STATUS_OVERFLOW),
                torch.tensor(2**31))

    pools = []
    monkeypatch.setattr(yolo_padded, "yolo_obb_padded_op", lambda *a: (pools.append(a[11]), overflowing(*a))[1])
    monkeypatch.setattr(yolo_padded, "_pool_bound", lambda *a: 2**40)
    monkeypatch.setattr(ops_status, "_pool_seen", {})
    with pytest.raises(RuntimeError, match="decode fewer images per call") as err:
        yolo_padded.decode_fused(head(2), 0.25, 0.5, 300, None, False, False, 30000, None)
    assert "overlap_words" not in str(err.value)
    assert pools == [ops_status.POOL_FIRST, 2**31]  # the second run was sized exactly
    with pytest.raises(RuntimeError, match="pass a larger overlap_words"):
        padded([-1, -1], status=STATUS_OVERFLOW).unpad()


@needs_cuda
def test_cuda_graph_replay_equals_eager():
    static = head(4, seed=20).cuda()
    lb = Letterbox.fit((1280, 720), (640, 640))
    yolo_obb_padded(static, 0.25, 0.5, letterbox=lb, max_nms=2000)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = yolo_obb_padded(static, 0.25, 0.5, letterbox=lb, max_nms=2000)
    for seed in (21, 22):
        fresh = head(4, seed=seed)
        static.copy_(fresh.cuda())
        graph.replay()
        _same(result.unpad(), yolo_obb(fresh, 0.25, 0.5, letterbox=lb, max_nms=2000))


@needs_cuda
def test_cuda_graph_replay_with_per_class_iou_equals_the_cpu_decode():
    """The per-class table is made once (cached per setting and device), so a captured graph reads it on replay."""
    static, per_class = head(4, seed=30).cuda(), {2: 0.05, 5: 0.95}
    yolo_obb_padded(static, 0.25, 0.5, class_iou=per_class)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = yolo_obb_padded(static, 0.25, 0.5, class_iou=per_class)
    for seed in (31, 32):
        fresh = head(4, seed=seed)
        static.copy_(fresh.cuda())
        graph.replay()
        _same(result.unpad(), yolo_obb(fresh, 0.25, 0.5, class_iou=per_class))


def test_a_head_without_anchors_gives_empty_tables():
    padded = yolo_obb_padded(torch.zeros(2, 4 + NC + 1, 0), 0.25, 0.5, max_det=4)
    assert padded.boxes.shape == (2, 4, 5) and padded.counts.tolist() == [0, 0] and int(padded.status) == 0
    assert [len(d) for d in padded.unpad()] == [0, 0]


def test_an_inf_candidate_score_sets_status_2_and_raises_like_yolo_obb():
    out = head(1)
    hot = int((out[0, 4:4 + NC].amax(0) > 0.25).nonzero()[0])
    out[0, 4, hot] = float("inf")
    padded = yolo_obb_padded(out, 0.25, 0.5)
    assert int(padded.status) == 2 and padded.counts.tolist() == [-1]
    with pytest.raises(ValueError, match="inf"):
        padded.unpad()
    with pytest.raises(ValueError, match="scores contains NaN or inf"):
        yolo_obb(out, 0.25, 0.5)


def test_the_operator_checks_its_class_filter():
    op = torch.ops.obbmeta.yolo_obb_padded.default
    bads = (torch.ones(NC, dtype=torch.int64), torch.ones(NC + 1, dtype=torch.int32), torch.ones(NC, dtype=torch.bool))
    for bad in bads:
        with pytest.raises(ValueError, match=r"allowed must be None or an \(6,\) int32 tensor"):
            op(head(1), 0.25, 0.5, 10, bad, False, False, 100, 1.0, 0.0, 0.0, -1)


@needs_cuda
def test_cuda_head_without_anchors_and_inf_scores():
    padded = yolo_obb_padded(torch.zeros(2, 4 + NC + 1, 0, device="cuda"), 0.25, 0.5)
    assert padded.counts.tolist() == [0, 0]
    assert [len(d) for d in yolo_obb(torch.zeros(2, 11, 0, device="cuda"))] == [0, 0]
    out = head(1)
    out[0, 4, int((out[0, 4:4 + NC].amax(0) > 0.25).nonzero()[0])] = float("inf")
    assert int(yolo_obb_padded(out.cuda(), 0.25, 0.5).status) == 2
    with pytest.raises(ValueError, match="inf"):
        yolo_obb(out.cuda(), 0.25, 0.5)


def e2e_head(batch: int = 2, rows: int = 300, seed: int = 0) -> torch.Tensor:
    """An end-to-end head (B, K, 7) = cx, cy, w, h, conf, cls, angle: rows by descending confidence, zero padded."""
    rng = np.random.default_rng(seed)
    out = np.zeros((batch, rows, 7), np.float32)
    for b in range(batch):
        n = rows - 40 * (b + 1)
        out[b, :n, 0:2] = rng.uniform(0, 640, (n, 2))
        out[b, :n, 2:4] = rng.uniform(4, 60, (n, 2))
        out[b, :n, 4] = np.sort(rng.uniform(0.01, 1.0, n))[::-1]
        out[b, :n, 5] = rng.integers(0, 276, n)  # a 276-class model: a raw decode of it would invent labels
        out[b, :n, 6] = rng.uniform(-np.pi / 4, 3 * np.pi / 4, n)
    return torch.from_numpy(out)


E2E_OPTIONS = [{}, {"classes": list(range(0, 276, 3))}, {"max_det": 7}, {"conf": 0.6},
               {"letterbox": Letterbox.fit((1920, 1080), (640, 640))}, {"class_conf": {0: 0.9, 7: 0.02, 300: 0.5}}]


@pytest.mark.parametrize("column, value, flag, match", [
    (5, float("nan"), 8, "class of a row above conf, column 5. is NaN"), (5, float("inf"), 8, "class"),
    (5, -1.0, 8, "negative"), (5, 3e9, 8, "2\\*\\*31"), (0, float("nan"), 1, "NaN or inf"),
    (6, float("inf"), 1, "NaN or inf"), (4, float("inf"), 2, "score of a row above conf, column 4. contains NaN"),
])
def test_an_end_to_end_row_above_conf_that_is_not_a_detection_is_refused(column, value, flag, match):
    """A NaN class used to become the label -9223372036854775808; now both decoders refuse the row by column."""
    out = e2e_head()
    out[1, 3, 4] = 0.9
    out[1, 3, column] = value
    with pytest.raises(ValueError, match=match if flag != 1 else "NaN or inf"):
        yolo_obb(out, conf=0.25)
    padded = yolo_obb_padded(out, conf=0.25)
    assert int(padded.status) == flag and padded.counts.tolist() == [-1, -1]
    with pytest.raises(ValueError):
        padded.unpad()


def test_an_end_to_end_row_below_conf_may_hold_anything():
    out = e2e_head()
    out[0, 5, 4] = 0.01
    out[0, 5, 5] = float("nan")
    out[0, 6, 4] = float("nan")  # a NaN score is not above conf
    out[0, 6, 5] = float("nan")
    expect = yolo_obb(out, conf=0.25)
    assert int(yolo_obb_padded(out, conf=0.25).status) == 0 and all(d.labels.min() >= 0 for d in expect)


@pytest.mark.parametrize("options", E2E_OPTIONS, ids=lambda o: ",".join(o) or "defaults")
def test_an_end_to_end_head_is_decoded_as_yolo_obb_decodes_it(options):
    out = e2e_head()
    kw = {"conf": 0.25, **options}
    padded = yolo_obb_padded(out, **kw)
    expect = yolo_obb(out, **kw)
    max_det = kw.get("max_det", 300)
    assert padded.boxes.shape == (2, max_det, 5) and int(padded.status) == 0
    assert padded.counts.tolist() == [len(d) for d in expect] and all(len(d) > 0 for d in expect)
    _same(padded.unpad(), expect, atol=0)
    for b, d in enumerate(expect):
        assert (padded.boxes[b, len(d):] == 0).all() and (padded.labels[b, len(d):] == 0).all()


@pytest.mark.parametrize("shape", [(1, 300, 7), (2, 20, 21504), (1, 7, 7), (1, 5, 100), (20, 100)])
def test_both_decoders_tell_the_format_by_the_same_rule(shape):
    out = torch.zeros(shape)
    outcomes = []
    for decode in (yolo_obb, yolo_obb_padded):
        try:
            decode(out)
            outcomes.append("ok")
        except ValueError as exc:
            outcomes.append(str(exc))
    assert outcomes[0] == outcomes[1]
    if shape == (1, 7, 7):
        assert "ambiguous" in outcomes[0]
        for fmt in ("raw", "e2e"):
            assert yolo_obb_padded(out, format=fmt).counts.tolist() == [0]


def test_max_det_beyond_the_table_bound_is_refused_before_anything_is_allocated():
    out = head(1, anchors=100, objects=5, proposals=4)
    with pytest.raises(ValueError, match=r"max_det = 1000000000 asks for padded tables of 1 x 1000000000 rows "
                                         r"\(29\.8 GiB\).*at most 100 detections"):
        yolo_obb_padded(out, max_det=10**9)
    with pytest.raises(ValueError, match="max_det = 1000000000"):
        yolo_obb_padded(e2e_head(1), max_det=10**9)
    op = torch.ops.obbmeta.yolo_obb_padded.default
    with pytest.raises(ValueError, match="max_det = 1000000000"):
        op(out, 0.25, 0.5, 10**9, None, False, False, 100, 1.0, 0.0, 0.0, -1)


def test_the_table_bound_counts_the_rows_of_the_whole_batch(monkeypatch):
    from obbmeta.decode import yolo_padded

    monkeypatch.setattr(yolo_padded, "MAX_TABLE_ROWS", 40)
    assert yolo_obb_padded(head(2), max_det=20).boxes.shape == (2, 20, 5)
    with pytest.raises(ValueError, match="2 x 21 rows"):
        yolo_obb_padded(head(2), max_det=21)


def test_yolo_obb_takes_any_max_det_since_its_lists_are_as_long_as_the_detections():
    out = head(2)
    _same(yolo_obb(out, 0.25, 0.5, max_det=10**9), yolo_obb(out, 0.25, 0.5), atol=0)


def padded(counts, rows=5, status=0, batch=None):
    b = len(counts) if batch is None else batch
    return yolo_padded_tables(b, rows, counts, status)


def yolo_padded_tables(b, rows, counts, status):
    from obbmeta.decode import PaddedDetections

    boxes = torch.zeros(b, rows, 5)
    boxes[..., 2:4] = 1.0
    return PaddedDetections(boxes, torch.zeros(b, rows), torch.zeros(b, rows, dtype=torch.int64),
                            torch.tensor(counts, dtype=torch.int64), torch.tensor(status, dtype=torch.int64))


def test_unpad_of_consistent_tables_gives_count_rows_per_image():
    assert [len(d) for d in padded([5, 0, 3]).unpad()] == [5, 0, 3]


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_unpad_gives_each_image_the_first_count_rows_of_its_tables_as_views(layout):
    """Image b gets rows [0, counts[b]) of table b (not the rows after an earlier image's), as views of the tables'
    storage, whether the tables are contiguous (one split a table) or not."""
    from obbmeta.decode import PaddedDetections

    g = torch.Generator().manual_seed(3)
    b, rows, counts = 4, 6, [2, 0, 6, 3]
    boxes = torch.rand(b, rows, 5, generator=g) + 1
    scores, labels = torch.rand(b, rows, generator=g), torch.randint(0, 9, (b, rows), generator=g)
    if layout == "strided":
        boxes = torch.cat([boxes, boxes], 2)[..., ::2]
        scores, labels = scores.t().contiguous().t(), labels.t().contiguous().t()
        assert not (boxes.is_contiguous() or scores.is_contiguous() or labels.is_contiguous())
    tables = PaddedDetections(boxes, scores, labels, torch.tensor(counts), torch.tensor(0))
    got = tables.unpad()
    assert [len(d) for d in got] == counts
    for i, (d, c) in enumerate(zip(got, counts)):
        assert torch.equal(d.xywhr, boxes[i, :c]) and torch.equal(d.scores, scores[i, :c])
        assert torch.equal(d.labels, labels[i, :c])
        if c:
            assert d.xywhr.data_ptr() == boxes[i].data_ptr() and d.scores.data_ptr() == scores[i].data_ptr()


@pytest.mark.parametrize("counts, match", [
    ([-1], r"counts\[0\] = -1 with status 0: counts are -1 only with a non-zero status, else in 0..max_det = 0..5"),
    ([2, 9], r"counts\[1\] = 9 but the tables hold max_det = 5 rows per image"),
])
def test_unpad_refuses_counts_that_do_not_fit_the_tables(counts, match):
    with pytest.raises(ValueError, match=match):
        padded(counts).unpad()


def test_unpad_refuses_tables_of_mismatched_shapes():
    from obbmeta.decode import PaddedDetections

    good = padded([1, 2])
    with pytest.raises(ValueError, match=r"scores must have shape \(B, max_det\) = \(2, 5\) to match boxes "
                                         r"\(2, 5, 5\), got \(2, 4\)"):
        good._replace(scores=torch.zeros(2, 4)).unpad()
    with pytest.raises(ValueError, match=r"counts must have shape \(B,\) = \(2,\)"):
        good._replace(counts=torch.tensor([1, 2, 3])).unpad()
    with pytest.raises(ValueError, match=r"boxes must have shape \(B, max_det, 5\), got \(2, 5\)"):
        good._replace(boxes=torch.zeros(2, 5)).unpad()
    with pytest.raises(ValueError, match="status must hold one value"):
        good._replace(status=torch.zeros(2, dtype=torch.int64)).unpad()
    with pytest.raises(TypeError, match="counts must be an integer tensor"):
        good._replace(counts=torch.tensor([1.0, 2.0])).unpad()
    with pytest.raises(TypeError, match=r"labels must be a torch.Tensor, got list"):
        PaddedDetections(good.boxes, good.scores, [0] * 10, good.counts, good.status).unpad()


def test_unpad_refuses_a_status_no_decoder_sets():
    with pytest.raises(ValueError, match="status = 16 is not a status the decoders set"):
        padded([-1], status=16).unpad()


def test_padded_end_to_end_traces_with_fullgraph_compile():
    out = e2e_head()
    fn = torch.compile(lambda o: yolo_obb_padded(o, 0.25, max_det=50), fullgraph=True)
    _same(fn(out).unpad(), yolo_obb(out, 0.25, max_det=50), atol=0)


@needs_cuda
@pytest.mark.parametrize("options", E2E_OPTIONS, ids=lambda o: ",".join(o) or "defaults")
def test_cuda_end_to_end_padded_equals_the_cpu_decode(options):
    out = e2e_head(3, seed=5)
    kw = {"conf": 0.25, **options}
    got = yolo_obb_padded(out.cuda(), **kw)
    assert got.boxes.device.type == "cuda"
    _same(got.unpad(), yolo_obb(out, **kw))


@needs_cuda
def test_cuda_end_to_end_padded_replays_in_a_cuda_graph():
    static = e2e_head(2, seed=6).cuda()
    yolo_obb_padded(static, 0.25, classes=[1, 2, 3, 50])
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        result = yolo_obb_padded(static, 0.25, classes=[1, 2, 3, 50])
    fresh = e2e_head(2, seed=7)
    static.copy_(fresh.cuda())
    graph.replay()
    _same(result.unpad(), yolo_obb(fresh, 0.25, classes=[1, 2, 3, 50]))


@needs_cuda
def test_cuda_yolo_obb_takes_any_max_det():
    out = head(2)
    _same(yolo_obb(out.cuda(), 0.25, 0.5, max_det=10**9), yolo_obb(out, 0.25, 0.5))
