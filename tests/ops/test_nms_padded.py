"""nms_rotated_padded: nms_rotated's answer in a fixed-size result with no host sync (count -1 for bad input), on
every device; on CUDA it is the same kernels as nms_rotated, checked against the host on many random scenes, inside
a captured CUDA graph, and on the paths only big inputs take (a mask retried with more words, a label group too
large for shared memory)."""
import numpy as np
import pytest
import reference
import torch
from devices import DEVICES, needs_cuda

from obbmeta.ops import nms_rotated, nms_rotated_padded, status


def _scene(n, seed, **kw):
    return tuple(torch.from_numpy(a) for a in reference.clustered_scene(n, seed, **kw))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [0, 1, 65, 700])
@pytest.mark.parametrize("class_aware", [False, True])
def test_padded_result_is_the_sized_result_then_minus_one(device, n, class_aware):
    b, s, lab = (t.to(device) for t in _scene(n, n + 5))
    labels = lab if class_aware else None
    keep, count = nms_rotated_padded(b, s, 0.5, labels=labels)
    sized = nms_rotated(b, s, 0.5, labels=labels)
    assert keep.shape == (n,) and keep.dtype == torch.int64 and keep.device == b.device
    assert count.shape == () and int(count) == sized.numel()
    assert keep[:int(count)].tolist() == sized.tolist()
    assert (keep[int(count):] == -1).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bad", ["nan_box", "inf_score", "float64_overflow"])
def test_bad_values_give_count_minus_one_instead_of_raising(device, bad):
    b, s, _ = _scene(40, 3)
    if bad == "nan_box":
        b[7, 2] = float("nan")
    elif bad == "inf_score":
        s[3] = float("inf")
    else:
        b = b.double()
        b[0, 0] = 1e200
    keep, count = nms_rotated_padded(b.to(device), s.to(device), 0.5)
    assert int(count) == -1 and keep.shape == (40,)


def test_padded_traces_with_fullgraph_compile():
    b, s, lab = _scene(100, 1)
    fn = torch.compile(lambda b, s, lab: nms_rotated_padded(b, s, 0.5, labels=lab), fullgraph=True)
    keep, count = fn(b, s, lab)
    assert keep[:int(count)].tolist() == nms_rotated(b, s, 0.5, labels=lab).tolist()


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cuda_keep_sets_equal_the_host_on_10000_random_scenes(dtype):
    # 10 000 scenes of 1..600 clustered boxes (boundaries of the 64-box tiles included), random thresholds, with and
    # without labels, some invalid boxes: the CUDA keep set is the host's, index for index.
    rng = np.random.default_rng(12)
    mismatches = []
    for scene in range(10_000):
        n = int(rng.choice([1, 2, 63, 64, 65, 127, 128, 129])) if scene % 4 == 0 else int(rng.integers(1, 600))
        boxes, scores, labels = reference.clustered_scene(n, scene, extent=float(rng.uniform(100, 3000)))
        if scene % 7 == 0:
            boxes[rng.integers(0, n, max(1, n // 20)), 2] = 0.0  # invalid boxes: kept, suppress nothing
        if scene % 5 == 0:
            scores = np.round(scores, 1)  # ties: lower index first
        thr = float(rng.choice([0.0, 0.1, 0.3, 0.5, 0.7, 0.95]))
        b, s, lab = (torch.from_numpy(a) for a in (boxes, scores, labels))
        b, s = b.to(dtype), s.to(dtype)
        use = lab if scene % 2 else None
        host = nms_rotated(b, s, thr, labels=use).tolist()
        gpu = nms_rotated(b.cuda(), s.cuda(), thr, labels=None if use is None else use.cuda()).cpu().tolist()
        if gpu != host:
            mismatches.append((scene, n, thr))
    assert mismatches == []


@needs_cuda
def test_cuda_graph_replay_equals_eager():
    b, s, lab = (t.cuda() for t in _scene(3000, 9))
    static_b, static_s, static_l = b.clone(), s.clone(), lab.clone()
    nms_rotated_padded(static_b, static_s, 0.5, labels=static_l)  # warm-up outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        keep, count = nms_rotated_padded(static_b, static_s, 0.5, labels=static_l)
    for seed in (10, 11, 12):
        nb, ns, nl = (t.cuda() for t in _scene(3000, seed))
        static_b.copy_(nb)
        static_s.copy_(ns)
        static_l.copy_(nl)
        graph.replay()
        eager = nms_rotated(nb, ns, 0.5, labels=nl)
        assert int(count) == eager.numel()
        assert keep[:int(count)].tolist() == eager.tolist()


@needs_cuda
def test_cuda_overlap_pool_too_small_at_first_is_retried_exactly_sized(monkeypatch):
    monkeypatch.setattr(status, "POOL_FIRST", 16)
    monkeypatch.setattr(status, "_pool_seen", {})
    b, s, lab = _scene(5000, 4)
    assert nms_rotated(b.cuda(), s.cuda(), 0.5).cpu().tolist() == nms_rotated(b, s, 0.5).tolist()
    assert status._pool_seen[b.cuda().device] > 16  # remembered for the next call


@needs_cuda
def test_cuda_padded_pool_too_small_gives_count_minus_one():
    b, s, _ = _scene(3000, 4)
    keep, count = nms_rotated_padded(b.cuda(), s.cuda(), 0.5, overlap_words=2)
    assert int(count) == -1
    keep, count = nms_rotated_padded(b.cuda(), s.cuda(), 0.5, overlap_words=10**6)
    assert keep[:int(count)].tolist() == nms_rotated(b, s, 0.5).tolist()


def test_overlap_words_is_checked():
    b, s, _ = _scene(10, 1)
    with pytest.raises(ValueError, match="overlap_words must be None or an int >= 0"):
        nms_rotated_padded(b, s, 0.5, overlap_words=-1)


@needs_cuda
def test_cuda_label_group_beyond_shared_memory():
    # 40 000 boxes in one group: the scan keeps its removed bits in global memory (past 32 768 boxes).
    b, s, _ = _scene(40_000, 8, extent=6000.0)
    assert nms_rotated(b.cuda(), s.cuda(), 0.5).cpu().tolist() == nms_rotated(b, s, 0.5).tolist()


@needs_cuda
def test_cuda_all_boxes_identical_keeps_the_first():
    b = torch.tensor([[50.0, 50, 20, 10, 0.4]]).repeat(2000, 1).cuda()
    s = torch.ones(2000, device="cuda")
    assert nms_rotated(b, s, 0.5).tolist() == [0]


@needs_cuda
def test_cuda_dense_columns_beyond_the_scan_registers():
    # 6 000 boxes of 20-80 px at random angles in 150 x 150 px: nearly every earlier box suppresses something in each
    # chunk of 64, so a chunk's column holds more words than the scan's threads keep in registers (2 048).
    rng = np.random.default_rng(3)
    n = 6000
    b = np.concatenate([rng.uniform(0, 150, (n, 2)), rng.uniform(20, 80, (n, 2)), rng.uniform(-3, 3, (n, 1))], 1)
    b, s = torch.tensor(b, dtype=torch.float32), torch.tensor(rng.uniform(0, 1, n), dtype=torch.float32)
    for thr in (0.1, 0.3):
        assert nms_rotated(b.cuda(), s.cuda(), thr).cpu().tolist() == nms_rotated(b, s, thr).tolist()
