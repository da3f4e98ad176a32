"""obbmeta.infer.Detector under load and on bad input: threads sharing one detector, bounded buffers, refused frames
and model files, torch.export shapes, the model's own labels, nvinfer's per-class attributes."""
from __future__ import annotations

import math
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Polygon

from obbmeta import OrientedBoxes, decode
from obbmeta.infer import (
    ClassFilter,
    Detector,
    ModelInputError,
    ModelLoadError,
    ModelOutputError,
    load_model,
    model_class_names,
)

sys.path.insert(0, str(Path(__file__).parent / "gst"))
import obb_toy_models  # noqa: E402


class Slow(torch.nn.Module):
    """The toy detector, pausing between receiving its input and reading it: another thread's preparation would
    land in that window if inputs were shared."""

    def forward(self, x):
        time.sleep(0.002)
        return obb_toy_models.ToyObb()(x)


def frames(n, seed, size=(96, 80)):
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, 256, (size[1], size[0], 3), dtype=torch.uint8, generator=g) for _ in range(n)]


def rows(dets):
    return [(d.xywhr.tolist(), d.scores.tolist(), d.labels.tolist()) for d in dets]


def test_threads_sharing_one_detector_each_get_the_detections_of_their_own_frames():
    det = Detector(Slow(), input_size=64, device="cpu")
    work = [frames(1 + k % 4, seed=k) for k in range(48)]
    want = [rows(det(f)) for f in work]
    got: dict[int, list] = {}
    errors = []

    def worker(ks):
        try:
            for k in ks:
                got[k] = rows(det(work[k]))
        except Exception as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(range(t, 48, 8),)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and [got[k] for k in range(48)] == want


def test_input_buffers_stay_bounded_by_the_largest_batch():
    det = Detector("obb_toy_models:toy", input_size=64, device="cpu")
    for n in list(range(1, 17)) + list(range(16, 0, -1)):
        det(frames(n, seed=n))
    kept = [t for free in det._canvases._free.values() for t in free]
    assert len(kept) == 1 and kept[0].shape == (16, 3, 64, 64)


def test_preprocess_works_outside_inference_mode_after_a_call():
    det = Detector("obb_toy_models:toy", input_size=64, device="cpu")
    det(frames(2, seed=0))
    x, lbs = det.preprocess(frames(2, seed=1), "RGB")
    x.add_(0)  # an ordinary tensor, not an inference tensor
    assert x.shape == (2, 3, 64, 64) and not x.is_inference() and len(lbs) == 2


def test_frames_of_extreme_aspect_ratio_run():
    det = Detector("obb_toy_models:toy", input_size=64, device="cpu")
    (d,) = det([torch.zeros(1, 4096, 3, dtype=torch.uint8)])
    (e,) = det([torch.zeros(4096, 1, 3, dtype=torch.uint8)])
    assert isinstance(d, OrientedBoxes) and isinstance(e, OrientedBoxes)


@pytest.mark.parametrize("shape", [(60000, 60000, 3), (0, 64, 3), (64, 20000, 3)])
def test_implausible_frame_sizes_are_refused_before_any_work(shape):
    det = Detector("obb_toy_models:toy", input_size=64, device="cpu")
    huge = torch.zeros(1, 1, 3, dtype=torch.uint8).expand(*shape)  # no memory behind it
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"frames\[0\] is .*1\.\.16384 pixels per side"):
        det([huge])
    assert time.perf_counter() - t0 < 1.0


def test_only_regular_files_are_read_as_models(tmp_path):
    fifo = tmp_path / "model.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo), str(tmp_path)):
        t0 = time.perf_counter()
        with pytest.raises(ModelLoadError, match="not a regular file"):
            load_model(path)
        assert time.perf_counter() - t0 < 1.0


@pytest.mark.parametrize("spec", ["..pkg:f", "../../x:y", ".obb_toy_models:toy", "a b:c"])
def test_relative_or_malformed_module_names_are_named(spec):
    with pytest.raises(ModelLoadError, match="not an absolute module name"):
        load_model(spec)


def test_a_torch_export_program_fed_another_shape_names_both_shapes(tmp_path):
    path = tmp_path / "toy.pt2"
    torch.export.save(torch.export.export(obb_toy_models.toy(), (torch.rand(2, 3, 64, 64),)), str(path))
    det = Detector(str(path), input_size=64, device="cpu")
    assert len(det(frames(2, seed=0))) == 2
    with pytest.raises(ModelInputError, match=r"exported for input \(2, 3, 64, 64\) but obbinfer fed \(1, 3, 64, 64\): "
                                              r"batch-size=2 \(or export with a dynamic batch dimension\)"):
        det(frames(1, seed=0))
    wrong = Detector(str(path), input_size=96, device="cpu")
    with pytest.raises(ModelInputError, match=r"fed \(2, 3, 96, 96\): set input-size=64x64"):
        wrong(frames(2, seed=0))


@pytest.mark.parametrize("output_format", ["yolo-obb", "boxes"])
def test_an_output_on_another_device_is_named_with_the_fix(output_format):
    # a TorchScript traced on one device keeps the tensors it makes there (torch.zeros(..., device=x.device)): on the
    # CPU, the same shape of mistake is a model answering on the "meta" device, here inside a tuple
    det = Detector(lambda x: (torch.empty(x.shape[0], 8, 12, device="meta"),), input_size=64, device="cpu",
                   output_format=output_format)
    with pytest.raises(ModelOutputError, match=r"the model returned output on meta for an input on cpu: a TorchScript "
                                               r"or exported model keeps the device it was traced on; trace or export "
                                               r"it on cpu \(or run the element with device=meta\)"):
        det(frames(1, seed=0))
    assert issubclass(ModelOutputError, ValueError)  # what the check raised before it moved into the runner


def test_the_models_own_class_names_are_the_default_labels():
    class Named(torch.nn.Module):
        def __init__(self, **attrs):
            super().__init__()
            for k, v in attrs.items():
                setattr(self, k, v)

    assert model_class_names(Named(class_names=("a", "b"))) == ["a", "b"]
    assert model_class_names(Named(names={1: "car", 0: "plane"})) == ["plane", "car"]  # Ultralytics' dict
    assert model_class_names(Named(dataset_meta={"classes": ("ship", "harbor")})) == ["ship", "harbor"]  # mmrotate
    assert model_class_names(Named(names={0: "a", 2: "c"})) is None and model_class_names(Named()) is None
    det = Detector("obbmeta.models:aerial_detector", input_size=64, device="cpu")
    assert det.labels == ["vehicle", "ship", "plane", "storage_tank"]
    assert Detector("obbmeta.models:aerial_detector", input_size=64, device="cpu", class_names="a,b").labels == \
        ["a", "b"]


def test_a_mistyped_label_path_is_an_error_not_a_label(tmp_path):
    for value in (str(tmp_path / "typo.txt"), "labels.txt", "./names"):
        with pytest.raises(FileNotFoundError, match="does not exist"):
            Detector("obb_toy_models:toy", input_size=64, class_names=value)
    f = tmp_path / "labels.txt"
    f.write_text("car;vehicle\n\nperson\n")  # nvinfer's format: a line per class, its first ';' field
    assert Detector("obb_toy_models:toy", input_size=64, class_names=str(f)).labels == ["car", "person"]


def test_batch_size_chunks_the_model_calls_with_the_same_result():
    calls = []

    def model(x):
        calls.append(x.shape[0])
        return obb_toy_models.ToyObb()(x)

    f = frames(7, seed=3)
    whole = Detector(model, input_size=64, device="cpu")(f)
    calls.clear()
    chunked = Detector(model, input_size=64, device="cpu", batch_size=3)(f)
    assert calls == [3, 3, 1] and rows(chunked) == rows(whole)


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_reduced_precision_runs_under_autocast(precision):
    seen = []

    class Probe(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 1)

        def forward(self, x):
            y = self.conv(x)
            seen.append(y.dtype)
            return obb_toy_models.ToyObb()(x)

    dets = Detector(Probe(), input_size=64, device="cpu", precision=precision)(frames(2, seed=0))
    assert seen == [torch.float16 if precision == "fp16" else torch.bfloat16]
    assert all(d.xywhr.dtype == torch.float32 for d in dets)


def test_warm_up_runs_the_model_once_on_the_input_size():
    shapes = []
    det = Detector(lambda x: shapes.append(tuple(x.shape)) or obb_toy_models.ToyObb()(x), input_size="96x64",
                   device="cpu")
    assert det.warm_up(batch=2) >= 0 and shapes == [(2, 3, 64, 96)]


# ---------------------------------------------------------------- nvinfer's class attributes

NC, N = 3, 400


def raw_head(seed=0, size=256):
    """A raw (1, 4+3+1, N) YOLO-OBB head with clustered boxes and random class scores."""
    g = np.random.default_rng(seed)
    xy = g.uniform(20, size - 20, (N, 2))
    xy[N // 2:] = xy[:N // 2] + g.normal(0, 2, (N // 2, 2))  # duplicates for NMS
    wh = g.uniform(4, 60, (N, 2))
    scores = g.uniform(0, 1, (N, NC)) * (g.uniform(0, 1, (N, NC)) > 0.5)
    angle = g.uniform(-math.pi / 2, math.pi / 2, (N, 1))
    return torch.tensor(np.c_[xy, wh, scores, angle].T[None], dtype=torch.float32)


def fixed(head):
    return lambda x: head.expand(x.shape[0], -1, -1)


def gray(size=256):
    return [torch.full((size, size, 3), 114, dtype=torch.uint8)]


def test_per_class_thresholds_on_an_end_to_end_head_keep_each_row_above_its_own_class_threshold():
    g = np.random.default_rng(11)
    k = 200
    head = np.c_[g.uniform(20, 236, (k, 2)), g.uniform(4, 40, (k, 2)), g.uniform(0, 1, k),
                 g.integers(0, 9, k), g.uniform(-1, 1, k)].astype(np.float32)  # classes 0..8, above every key too
    thr = {1: 0.8, 3: 0.1, 5: 0.6}
    (got,) = Detector(fixed(torch.from_numpy(head)[None]), input_size=256, conf=0.4, max_det=300, device="cpu",
                      class_filter=ClassFilter(pre_threshold=thr))(gray())
    want = sorted(float(s) for s, c in zip(head[:, 4], head[:, 5]) if s > thr.get(int(c), 0.4))
    assert sorted(got.scores.tolist()) == pytest.approx(want)


def test_per_class_thresholds_apply_before_nms_as_a_decode_per_class_would():
    head = raw_head()
    thr = {0: 0.7, 2: 0.2}
    (got,) = Detector(fixed(head), input_size=256, conf=0.4, iou=0.3, max_det=60, device="cpu",
                      class_filter=ClassFilter(pre_threshold=thr))(gray())
    # Reference: nvinfer's YOLO parsers' rule (an anchor's best class first, dropped when that score is at or below
    # its class's threshold), then each class alone, suppressed, and all classes merged by score.
    h0 = head.clone()
    scores = h0[:, 4:4 + NC]
    best, label = scores.max(dim=1)
    scores.masked_fill_((best <= torch.tensor([thr.get(k, 0.4) for k in range(NC)])[label]).unsqueeze(1), 0)
    parts = []
    for c in range(NC):
        h = h0.clone()
        (d,) = decode.yolo_obb(h, conf=thr.get(c, 0.4), iou=0.3, max_det=10**6, classes=[c])
        parts.append(d)
    ref = OrientedBoxes.cat(parts)
    ref = ref[torch.argsort(ref.scores, descending=True, stable=True)[:60]]
    assert sorted(rows([got])[0][1]) == sorted(ref.scores.tolist())
    assert all((got.scores[got.labels == c] > t).all() for c, t in thr.items())


def test_post_filters_against_a_reference_on_shapely_bounds():
    head = raw_head(seed=1)
    plain = Detector(fixed(head), input_size=256, conf=0.3, iou=0.5, max_det=300, device="cpu")
    (all_boxes,) = plain(gray())
    cf = ClassFilter(post_threshold={1: 0.6}, topk={2: 3}, min_size={0: (20.0, 10.0)}, max_size={1: (40.0, 0.0)},
                     default_roi=(30.0, 40.0), drop=frozenset({5}))
    (got,) = Detector(fixed(head), input_size=256, conf=0.3, iou=0.5, max_det=300, device="cpu", class_filter=cf)(
        gray())
    keep, seen = [], {}
    for i, (box, s, c) in enumerate(zip(all_boxes.xywhr.tolist(), all_boxes.scores.tolist(),
                                        all_boxes.labels.tolist())):
        cx, cy, w, h, a = box
        corners = [(cx + math.cos(a) * dx * w / 2 - math.sin(a) * dy * h / 2,
                    cy + math.sin(a) * dx * w / 2 + math.cos(a) * dy * h / 2) for dx, dy in
                   ((-1, -1), (1, -1), (1, 1), (-1, 1))]
        x1, y1, x2, y2 = Polygon(corners).bounds
        bw, bh = x2 - max(x1, 0), y2 - max(y1, 0)
        if (c == 1 and s <= 0.6) or (c == 0 and (bw < 20 or bh < 10)) or (c == 1 and bw > 40):
            continue
        if max(y1, 0) < 30 or y2 > 256 - 40:
            continue
        if c == 2:
            if seen.get(2, 0) >= 3:
                continue
            seen[2] = seen.get(2, 0) + 1
        keep.append(i)
    want = all_boxes[torch.tensor(keep, dtype=torch.int64)]
    assert rows([got]) == rows([want]) and len(want) < len(all_boxes)


def test_per_class_iou_thresholds_run_one_nms_per_threshold():
    head = raw_head(seed=2)
    (got,) = Detector(fixed(head), input_size=256, conf=0.3, iou=0.5, device="cpu",
                      class_filter=ClassFilter(iou={1: 0.1}))(gray())
    (loose,) = decode.yolo_obb(head, conf=0.3, iou=0.5, classes=[0, 2])
    (tight,) = decode.yolo_obb(head, conf=0.3, iou=0.1, classes=[1])
    assert sorted(got.scores.tolist()) == sorted(loose.scores.tolist() + tight.scores.tolist())


# ---------------------------------------------------------------- the model path: sharing, threads, compile, batching

def test_detectors_with_the_same_model_spec_share_one_loaded_model():
    a = Detector("obb_toy_models:toy", input_size=64, device="cpu")
    b = Detector("obb_toy_models:toy", input_size=96, conf=0.5, device="cpu")
    c = Detector("obb_toy_models:toy", input_size=64, device="cpu", channels_last=True)
    d = Detector("obb_toy_models:toy", input_size=64, device="cpu", share_model=False)
    assert a.model_on("cpu") is b.model_on("cpu")
    assert c.model_on("cpu") is not a.model_on("cpu") and d.model_on("cpu") is not a.model_on("cpu")
    for (cb, cs, cl), (ab, as_, al) in zip(rows(c(frames(2, seed=5))), rows(a(frames(2, seed=5)))):
        assert cl == al and np.allclose(cb, ab, atol=1e-3) and np.allclose(cs, as_, atol=1e-6)  # channels-last


def test_threads_sets_torchs_intra_op_threads_and_a_cpu_model_leaves_cores():
    before = torch.get_num_threads()
    try:
        Detector("obb_toy_models:toy", input_size=64, device="cpu", threads=1)
        assert torch.get_num_threads() == 1
        from obbmeta.infer import default_threads

        Detector("obb_toy_models:toy", input_size=64, device="cpu")
        assert torch.get_num_threads() == default_threads() == max(1, (os.cpu_count() or 2) // 2)
        with pytest.raises(ValueError, match="threads must be None or an int"):
            Detector("obb_toy_models:toy", input_size=64, threads=0)
    finally:
        torch.set_num_threads(before)


def test_cuda_graph_on_a_cpu_model_says_it_runs_eagerly(caplog):
    with caplog.at_level("WARNING", logger="obbmeta"):
        det = Detector("obb_toy_models:toy", input_size=64, device="cpu", cuda_graph=True)
    assert "runs eagerly" in caplog.text
    assert rows(det(frames(1, seed=0))) == rows(Detector("obb_toy_models:toy", input_size=64, device="cpu")(
        frames(1, seed=0)))


def test_a_model_torch_compile_refuses_runs_eagerly_after_a_warning(monkeypatch, caplog):
    def refusing(model, **_):
        def run(x):
            raise RuntimeError("backend compiler failed")
        return run

    monkeypatch.setattr(torch, "compile", refusing)
    with caplog.at_level("WARNING", logger="obbmeta"):
        det = Detector("obb_toy_models:toy", input_size=64, device="cpu", compile=True, share_model=False)
        got = rows(det(frames(2, seed=1)))
    assert "could not compile" in caplog.text
    assert got == rows(Detector("obb_toy_models:toy", input_size=64, device="cpu")(frames(2, seed=1)))


def test_torch_compile_gives_the_eager_detections():
    pytest.importorskip("torch._inductor")
    eager = Detector("obb_toy_models:toy", input_size=64, device="cpu")
    compiled = Detector("obb_toy_models:toy", input_size=64, device="cpu", compile=True)
    f = frames(2, seed=4)
    want, got = rows(eager(f)), rows(compiled(f))
    for (wb, ws, wl), (gb, gs, gl) in zip(want, got):
        assert wl == gl and np.allclose(wb, gb, atol=1e-4) and np.allclose(ws, gs, atol=1e-6)


def test_on_host_gives_cpu_boxes_equal_to_the_device_path():
    det = Detector("obb_toy_models:toy", input_size=64, device="cpu")
    f = frames(3, seed=2)
    host = det(f, on_host=True)
    assert all(d.xywhr.device.type == "cpu" for d in host) and rows(host) == rows(det(f))


def test_the_cross_pipeline_batches_are_per_device_the_frames_are_on():
    """device=auto follows the frames: pipelines on two GPUs must not meet in one batch (fake devices: the rule needs
    no GPU; the two-GPU run itself is for a machine with two)."""
    det = Detector("obb_toy_models:toy", input_size=64, device="auto", max_batch_wait_us=1000)
    keys = {det._batch_key(det.params, det._run_device([torch.empty(8, 8, 3, dtype=torch.uint8, device=d)]))
            for d in ("cpu", "meta")}
    assert len(keys) == 2
    fixed = Detector("obb_toy_models:toy", input_size=64, device="cpu", max_batch_wait_us=1000)
    assert fixed._run_device([torch.empty(8, 8, 3, device="meta")]) == torch.device("cpu")


def _gathered(dets, work, call):
    """Each detector's call on its own thread, all released at once; {k: result}."""
    got: dict[int, object] = {}
    barrier = threading.Barrier(len(dets))

    def worker(k):
        barrier.wait()
        try:
            got[k] = call(dets[k], work[k])
        except Exception as exc:  # noqa: BLE001 - the test looks at it
            got[k] = exc

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(dets))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "a caller of the batcher hung"
    return got


def test_calls_from_separate_pipelines_within_the_window_run_as_one_batch():
    obb_toy_models.CALLS.clear()
    dets = [Detector("obb_toy_models:counting", input_size=64, device="cpu", max_batch_wait_us=300_000)
            for _ in range(4)]
    work = [frames(1, seed=10 + k) for k in range(4)]
    want = [rows(Detector("obb_toy_models:counting", input_size=64, device="cpu", share_model=False)(w))
            for w in work]
    obb_toy_models.CALLS.clear()
    got = _gathered(dets, work, lambda d, w: rows(d(w)))
    assert [got[k] for k in range(4)] == want
    assert sum(obb_toy_models.CALLS) == 4 and len(obb_toy_models.CALLS) < 4  # fewer model calls than callers
    with pytest.raises(ValueError, match="max_batch_wait_us"):
        Detector("obb_toy_models:toy", input_size=64, max_batch_wait_us=-1)


def test_a_batch_holds_at_most_batch_size_frames_and_every_caller_is_served():
    """Callers whose frames do not fit in one batch go in the next; a leader whose own call did not fit leads again,
    so nobody is left waiting; every caller gets its own frames' boxes, through submit as through a call."""
    obb_toy_models.CALLS.clear()
    n = [1, 2, 1, 2, 1, 1]
    dets = [Detector("obb_toy_models:counting", input_size=64, device="cpu", max_batch_wait_us=200_000, batch_size=3)
            for _ in n]
    work = [frames(k, seed=40 + i) for i, k in enumerate(n)]
    alone = Detector("obb_toy_models:counting", input_size=64, device="cpu", share_model=False)
    want = [rows(alone(w)) for w in work]
    obb_toy_models.CALLS.clear()
    got = _gathered(dets, work, lambda d, w: rows(d.submit(w).result()))
    assert [got[k] for k in range(len(n))] == want
    assert sum(obb_toy_models.CALLS) == sum(n) and max(obb_toy_models.CALLS) <= 3
    assert len(obb_toy_models.CALLS) < len(n)


def test_every_batch_runs_on_the_first_callers_detector_until_it_is_released():
    """One detector (one set of graphs and buffers) serves the batcher, not one per pipeline; a released detector is
    let go and the next caller's takes over."""
    dets = [Detector("obb_toy_models:toy", input_size=64, device="cpu", max_batch_wait_us=1000) for _ in range(3)]
    ran: list = []

    def spy(d, inner):
        def submit(*a, **k):
            ran.append(d)
            return inner(*a, **k)
        return submit

    for d in dets:
        d._submit = spy(d, d._submit)
    f = frames(1, seed=3)
    for d in dets:
        d(f)
    assert ran == [dets[0]] * 3
    dets[0].release()
    ran.clear()
    dets[2](f)
    dets[1](f)
    assert ran == [dets[2]] * 2


def test_a_batch_that_fails_fails_for_every_caller_in_it():
    dets = [Detector("obb_toy_models:wrong_shape", input_size=64, device="cpu", max_batch_wait_us=300_000)
            for _ in range(3)]
    got = _gathered(dets, [frames(1, seed=k) for k in range(3)], lambda d, w: d(w))
    assert all(isinstance(got[k], (TypeError, ValueError)) and "output-format yolo-obb" in str(got[k])
               for k in range(3)), got


# ---------------------------------------------------------------- CUDA: the one-sync and graph paths equal eager

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def close(a, b, atol=1e-3):
    return len(a) == len(b) and all(al == bl and np.allclose(ab, bb, atol=atol) and np.allclose(as_, bs, atol=1e-5)
                                    for (ab, as_, al), (bb, bs, bl) in zip(a, b))


@needs_cuda
@pytest.mark.parametrize("model", ["obb_toy_models:toy", "obbmeta.models:aerial_detector"])
@pytest.mark.parametrize("batch", [1, 3, 16])
def test_cuda_one_sync_and_graph_paths_equal_the_eager_decode(model, batch):
    f = [t.cuda() for t in frames(batch, seed=batch, size=(320, 240))]
    eager = Detector(model, input_size=256, device="cuda", share_model=False)
    want = rows([d.to("cpu") for d in eager(f)])
    host = rows(eager(f, on_host=True))
    graph = Detector(model, input_size=256, device="cuda", cuda_graph=True, share_model=False)
    first, second = rows(graph(f, on_host=True)), rows(graph(f, on_host=True))  # capture, then a replay
    assert close(host, want) and close(first, want) and second == first
    assert graph._graphs._runners and not graph._graphs._failed  # captured, not run eagerly after a warning
    assert all(d.xywhr.is_cuda for d in graph(f))  # without on_host the boxes come back on the model's device


@needs_cuda
@pytest.mark.parametrize("cuda_graph", [False, True])
def test_cuda_callers_of_one_batcher_each_get_what_their_frames_alone_give(cuda_graph):
    """Frames each caller writes on its own stream just before handing them over (the batch runs on the batcher's
    stream, after each caller's event), gathered into batches on one detector, results taken later on the
    caller's thread: equal to each caller's frames run alone. (The toy model's output is a function of each frame
    alone; a convolutional model's TF32 convolutions differ in the last digits between batch sizes.)"""
    host = [[f.pin_memory() for f in frames(1 + k % 3, seed=70 + k, size=(320, 240))] for k in range(6)]
    alone = Detector("obb_toy_models:toy", input_size=256, device="cuda", share_model=False)
    want = [rows(alone([f.cuda() for f in h], on_host=True)) for h in host]
    dets = [Detector("obb_toy_models:toy", input_size=256, device="cuda", cuda_graph=cuda_graph,
                     max_batch_wait_us=100_000, batch_size=4) for _ in host]

    def call(d, h):
        out = []
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            for _ in range(3):
                f = [torch.zeros_like(x, device="cuda") for x in h]
                torch.cuda._sleep(2_000_000)  # the copies below land well after the submit returns
                for dst, src in zip(f, h):
                    dst.copy_(src, non_blocking=True)
                pending = d.submit(f)
                out.append(rows(pending.result()))
        return out

    got = _gathered(dets, host, call)
    assert all(not isinstance(got[k], Exception) for k in range(len(host))), got
    bad = [(k, i) for k in range(len(host)) for i, r in enumerate(got[k]) if not close(r, want[k])]
    assert not bad, f"callers / rounds whose boxes differ from their frames alone: {bad}"
    assert not dets[0]._graphs._failed


@needs_cuda
@pytest.mark.parametrize("cuda_graph", [False, True])
def test_cuda_profile_phases_sees_only_this_threads_calls(cuda_graph):
    from obbmeta.infer import profile_phases

    det = Detector("obb_toy_models:toy", input_size=256, device="cuda", cuda_graph=cuda_graph, share_model=False)
    f = [t.cuda() for t in frames(2, seed=1, size=(320, 240))]
    with profile_phases() as phases:
        det(f, on_host=True)
        other = threading.Thread(target=det, args=(f,), kwargs={"on_host": True})
        other.start()
        other.join()
    assert len(phases) == 1 and set(phases[0]) == {"prepare", "model_decode", "copy"}
    assert all(v >= 0 for v in phases[0].values())
    det(f, on_host=True)
    assert len(phases) == 1  # outside the block nothing is recorded


def _reads_a_number(head):
    """A model that reads a number from the GPU in its forward (what a traced shape computation does)."""
    return lambda x: head.expand(x.shape[0], -1, -1) * float(x.new_ones(()).item())


@needs_cuda
def test_cuda_graph_of_a_model_that_syncs_warns_once_runs_eagerly_and_leaves_cuda_rng_working(caplog):
    head = raw_head(seed=3).cuda()
    det = Detector(_reads_a_number(head), input_size=256, device="cuda", cuda_graph=True, share_model=False)
    ref = Detector(fixed(head), input_size=256, device="cuda", share_model=False)
    g = [gray()[0].cuda()]
    with caplog.at_level("WARNING", logger="obbmeta"):
        got = rows(det(g, on_host=True))
        again = rows(det(g, on_host=True))
    assert close(got, rows([d.to("cpu") for d in ref(g)])) and again == got
    said = [r.getMessage() for r in caplog.records if "could not be captured" in r.getMessage()]
    assert len(said) == 1 and "synchronises with the host" in said[0] and "may fail" not in said[0]
    torch.rand(4, device="cuda")  # torch's CUDA generator left capturing would raise here


def test_profile_phases_nests_and_restores_per_thread():
    from obbmeta import infer

    with infer.profile_phases() as outer:
        with infer.profile_phases() as inner:
            assert infer.detector._PROFILE.sink is inner and inner is not outer
        assert infer.detector._PROFILE.sink is outer
        seen = []
        t = threading.Thread(target=lambda: seen.append(getattr(infer.detector._PROFILE, "sink", None)))
        t.start()
        t.join()
        assert seen == [None]
    assert infer.detector._PROFILE.sink is None


@needs_cuda
def test_cuda_graph_with_per_class_thresholds_and_a_changed_conf():
    head = raw_head(seed=5).cuda()
    det = Detector(fixed(head), input_size=256, conf=0.3, iou=0.5, device="cuda", cuda_graph=True,
                   class_filter=ClassFilter(pre_threshold={0: 0.7}))
    ref = Detector(fixed(head), input_size=256, conf=0.3, iou=0.5, device="cuda",
                   class_filter=ClassFilter(pre_threshold={0: 0.7}))
    g = [gray()[0].cuda()]
    assert close(rows(det(g, on_host=True)), rows([d.to("cpu") for d in ref(g)]))
    det.conf = ref.conf = 0.6  # a new decode setting: a new graph
    assert close(rows(det(g, on_host=True)), rows([d.to("cpu") for d in ref(g)]))


@needs_cuda
@pytest.mark.parametrize("cuda_graph", [False, True])
def test_per_class_iou_on_the_gpu_paths_equals_the_cpu_detector(cuda_graph):
    """Per-class pre-cluster and nms-iou thresholds on the fused / graph path (tables the kernels read, no copy of the
    head) give the CPU's result."""
    head, cf = raw_head(seed=6), ClassFilter(iou={1: 0.1, 2: 0.9}, pre_threshold={0: 0.6, 2: 0.35})
    det = Detector(fixed(head.cuda()), input_size=256, conf=0.3, iou=0.5, device="cuda", cuda_graph=cuda_graph,
                   class_filter=cf)
    cpu = Detector(fixed(head), input_size=256, conf=0.3, iou=0.5, device="cpu", class_filter=cf)
    assert close(rows(det([gray()[0].cuda()], on_host=True)), rows(cpu(gray())))


# ---------------------------------------------------------------- submit: the results come later, equal to a call

def test_submit_gives_what_a_call_on_host_gives_on_the_cpu():
    f = frames(3, seed=7, size=(320, 240))
    det = Detector("obb_toy_models:toy", input_size=256, batch_size=2, share_model=False)
    pending = det.submit(f)
    assert rows(pending.result()) == rows(det(f, on_host=True))
    assert det.submit([]).result() == []


@needs_cuda
@pytest.mark.parametrize("cuda_graph", [False, True])
def test_cuda_submits_on_a_side_stream_in_flight_together_equal_the_eager_decode(cuda_graph):
    # three batches queued on a non-blocking stream before any result is taken (the element's output thread takes
    # them later): each equals the eager, synchronous decode of its own frames
    batches = [[t.cuda() for t in frames(n, seed=10 + n, size=(320, 240))] for n in (1, 3, 16)]
    eager = Detector("obbmeta.models:aerial_detector", input_size=256, device="cuda", share_model=False)
    want = [rows([d.to("cpu") for d in eager(b)]) for b in batches]
    det = Detector("obbmeta.models:aerial_detector", input_size=256, device="cuda", cuda_graph=cuda_graph,
                   share_model=False)
    det.warm_up(batch=16)
    if cuda_graph:  # every bucket captured at warm-up: none while the batches run
        assert {k[0][0] for k in det._graphs._runners} == {1, 2, 4, 8, 16}
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        pendings = [det.submit(b) for b in batches]
    got = [rows(p.result()) for p in reversed(pendings)][::-1]
    assert all(close(g, w) for g, w in zip(got, want))



@needs_cuda
@pytest.mark.parametrize("fmt", ["RGBA", "RGB"])
@pytest.mark.parametrize("cuda_graph", [False, True])
def test_cuda_submit_queues_a_batch_without_waiting_for_the_device(cuda_graph, fmt):
    # what obbinfer's streaming thread does with a batch: the letterbox, the model, the decode and the copy back are
    # queued; nothing waits for the device (torch's sync debug mode raises on any synchronising call), so the thread
    # takes the next batch while this one runs. The result is then the same as the one-call path's.
    det = Detector("obbmeta.models:aerial_detector", input_size=256, device="cuda", cuda_graph=cuda_graph,
                   share_model=False)
    n = 4 if fmt == "RGBA" else 3
    f = [torch.randint(0, 256, (240, 320, n), dtype=torch.uint8, generator=torch.Generator().manual_seed(k)).cuda()
         for k in range(4)]
    want = rows(det(f, fmt, on_host=True))  # the first call makes the constants, pools and graphs
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        pending = det.submit(f, fmt)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert rows(pending.result()) == want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=1, max_size=6), st.integers(0, 2**31))
def test_the_padded_results_kept_rows_are_each_images_first_count_rows_in_order(counts, seed):
    """What the CUDA result path reads out of its pinned (B, K, ...) tables: image i's first counts[i] rows, images in
    order (the same rows as a boolean mask over the tables)."""
    from obbmeta.infer.detector import _kept_rows

    g = torch.Generator().manual_seed(seed)
    b, k = len(counts), 7
    tables = (torch.rand(b, k, 5, generator=g), torch.rand(b, k, generator=g), torch.randint(0, 9, (b, k), generator=g))
    mask = torch.arange(k) < torch.tensor(counts)[:, None]
    got = _kept_rows(tables, counts)
    assert all(g_.dtype == t.dtype and torch.equal(g_, t[mask]) for g_, t in zip(got, tables))
