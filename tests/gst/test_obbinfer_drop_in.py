"""obbinfer as a drop-in for nvinfer, tried the way a DeepStream user switches: config files of each kind as
NVIDIA's samples, TAO and DeepStream-Yolo write them (our own files, with their keys), nvinfer's defaults for what a
file leaves out, nvinfer's preprocessing formula, and nvinfer's tensor outputs and inputs. Metadata is read back
through NVIDIA's libnvds_meta lists."""
from __future__ import annotations

import ctypes
import math
import os

import numpy as np
import obb_toy_models
import pytest
import readback
import torch
from devices import AUTO
from pipelines import buffer_probe, bus_warnings, rgba_copy, run

from obbmeta import nvds
from obbmeta.frames.preprocess import preset
from obbmeta.gst import Gst
from obbmeta.infer import Detector
from obbmeta.nvds import tensors as nvds_tensors

W, H = 160, 120


def config(tmp_path, text, name="pgie.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def pipeline(element, n=6, width=W, height=H, pattern="ball"):
    return Gst.parse_launch(f"videotestsrc num-buffers={n} pattern={pattern} ! video/x-raw,format=RGBA,width={width},"
                            f"height={height} ! identity name=before ! {element} ! fakesink name=sink")


def collect(p):
    """(errors, warnings, frames: per buffer the source pixels and the objects read back) of running ``p``."""
    frames, originals = [], {}
    errors = buffer_probe(p.get_by_name("before"), "src", lambda b: originals.__setitem__(b.pts, rgba_copy(
        b, W, H)))

    def on_sink(buf):
        for f in nvds.BatchMeta.from_gst_buffer(buf).frames:
            frames.append((buf.pts, [(i.class_id, i.label, i.component_id, round(i.confidence, 5),
                                      tuple(round(v, 3) for v in o.xywhr), i.parent) for i, o in readback.pairs(f)]))

    buffer_probe(p.get_by_name("sink"), "sink", on_sink, errors)
    warnings = bus_warnings(p)
    outcome = run(p)
    return outcome, errors, warnings, frames, originals


def rows(dets, names=None, component=15, size=(W, H)):
    """What the writer writes of ``dets``: the boxes that meet the frame (a box in the letterbox's padding maps
    outside it and is counted as filtered), as collect() reads them back."""
    from shapely.geometry import Polygon, box

    frame = box(0, 0, *size)
    keep = [Polygon(p).intersection(frame).area > 0 for p in dets.polygons().tolist()]
    return sorted((int(c), names[int(c)] if names and int(c) < len(names) else "" if names else str(int(c)),
                   component, round(float(s), 5), tuple(round(v, 3) for v in b), 0)
                  for b, c, s, k in zip(dets.xywhr.tolist(), dets.labels, dets.scores, keep) if k)


def assert_close_rows(got, want, atol=2e-3):
    """Objects equal within float rounding (an ONNX runtime against the PyTorch module it was exported from)."""
    got, want = sorted(got, key=lambda r: r[4]), sorted(want, key=lambda r: r[4])
    assert len(got) == len(want), (got, want)
    for a, b in zip(got, want):
        assert a[:3] == b[:3] and a[5] == b[5], (a, b)
        assert abs(a[3] - b[3]) <= atol and max(abs(x - y) for x, y in zip(a[4], b[4])) <= 50 * atol, (a, b)


# ---------------------------------------------------------------- config files of every kind


def test_an_nvidia_sample_primary_with_int8_and_tao_keys_runs_with_nvinfers_meaning(tmp_path):
    (tmp_path / "labels.txt").write_text("Car\nBicycle\nPerson\n")
    path = config(tmp_path, """\
[property]
gpu-id=0
net-scale-factor=0.0039215697906911373
tlt-model-key=tlt_encode
tlt-encoded-model=../../models/resnet18_trafficcamnet.etlt
model-engine-file=../../models/resnet18_trafficcamnet.etlt_b1_gpu0_int8.engine
labelfile-path=labels.txt
int8-calib-file=../../models/cal_trt.bin
uff-input-dims=3;96;128;0
uff-input-blob-name=input_1
batch-size=1
process-mode=1
model-color-format=0
## 0=FP32, 1=INT8, 2=FP16 mode
network-mode=1
num-detected-classes=3
interval=0
gie-unique-id=1
output-blob-names=output_bbox/BiasAdd;output_cov/Sigmoid
cluster-mode=2

[class-attrs-all]
pre-cluster-threshold=0.2
topk=20
nms-iou-threshold=0.5
""")
    p = pipeline(f"obbinfer name=infer config-file-path={path} model=obb_toy_models:recording warm-up=false")
    obb_toy_models.INPUTS.clear()
    outcome, errors, warnings, frames, originals = collect(p)
    assert outcome.eos and not errors, outcome
    assert sum("network-mode=1 (INT8)" in w for w in warnings) == 1
    # the TensorRT engine is set but model= is given: said at info level, not as a warning
    assert not any("model-engine-file" in w for w in warnings) and not any("tlt" in w for w in warnings)
    x = obb_toy_models.INPUTS[0]
    assert x.shape == (1, 3, 96, 128)  # uff-input-dims (c;h;w;order) is the input size
    # nvinfer's meaning of the keys the file leaves out: stretch, nearest, no offsets
    rgb = torch.from_numpy(next(iter(originals.values()))[..., :3]).permute(2, 0, 1).float()
    ys = (torch.arange(96) * H // 96).long()
    xs = (torch.arange(128) * W // 128).long()
    want = rgb[:, ys][:, :, xs] * 0.0039215697906911373
    torch.testing.assert_close(x[0].cpu(), want, rtol=0, atol=1e-6)
    infer = p.get_by_name("infer")
    assert infer.get_property("unique-id") == 1 and infer.get_property("network-mode") == 1


def test_an_sgie_classifier_with_is_classifier_runs_behind_a_primary(tmp_path):
    (tmp_path / "labels.txt").write_text("red;green;blue\n")
    path = config(tmp_path, """\
[property]
gpu-id=0
net-scale-factor=1
model-engine-file=../../models/Secondary_CarColor/resnet18.caffemodel_b16_gpu0_int8.engine
labelfile-path=labels.txt
force-implicit-batch-dim=1
batch-size=16
model-color-format=1
process-mode=2
network-mode=1
is-classifier=1
output-blob-names=predictions/Softmax
classifier-async-mode=1
classifier-threshold=0.51
input-object-min-width=8
input-object-min-height=8
operate-on-gie-id=1
operate-on-class-ids=0;1;2
classifier-type=carcolor
""", "sgie.txt")
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=4 pattern=smpte ! video/x-raw,format=RGBA,width={W},height={H} "
        "! obbinfer model=obb_toy_models:toy input-size=96 unique-id=1 "
        f"! obbinfer name=sgie config-file-path={path} model=obb_toy_models:toy_classifier crop-size=16x16 "
        "unique-id=2 ! fakesink name=sink")
    seen = []
    from obbmeta.nvds.classifier import read_classifications

    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: seen.extend(
        (i.class_id, c) for f in nvds.BatchMeta.from_gst_buffer(b).frames for i, _ in readback.pairs(f)
        for c in read_classifications(i.address)))
    warnings = bus_warnings(p)
    outcome = run(p)
    assert outcome.eos and not errors, outcome
    assert seen and all(c.classifier_type == "carcolor" and c.component_id == 2 for _, c in seen)
    assert {lab.label for _, c in seen for lab in c.labels} <= {"red", "green", "blue"}
    assert any("classifier-async-mode" in w for w in warnings)


def test_nvinfers_yaml_form_runs(tmp_path):
    pytest.importorskip("yaml", reason="PyYAML (the yaml extra) is not installed")
    (tmp_path / "labels.txt").write_text("vehicle\nship\nplane\n")
    path = config(tmp_path, """\
property:
  gpu-id: 0
  net-scale-factor: 0.00392156862745098
  labelfile-path: labels.txt
  batch-size: 1
  network-mode: 0
  num-detected-classes: 3
  interval: 0
  gie-unique-id: 4
  cluster-mode: 2
  infer-dims: 3;96;96
  maintain-aspect-ratio: 1
  filter-out-class-ids: 2
class-attrs-all:
  pre-cluster-threshold: 0.3
  nms-iou-threshold: 0.5
obbmeta:
  model: obb_toy_models:toy
""", "pgie.yml")
    p = pipeline(f"obbinfer name=infer config-file-path={path} device=cpu")
    outcome, errors, _, frames, originals = collect(p)
    assert outcome.eos and not errors, outcome
    ref = Detector("obb_toy_models:toy", input_size=96, conf=0.3, iou=0.5, max_det=0, device="cpu",
                   preprocess_mode=preset("nvinfer").with_(
                       scale=0.00392156862745098, keep_ratio=True))
    names = ["vehicle", "ship", "plane"]
    total = 0
    for pts, objs in frames:
        (d,) = ref([torch.from_numpy(originals[pts])], "RGBA")
        d = d[d.labels != 2]
        assert sorted(objs) == rows(d, names, 4)
        total += len(objs)
    assert total > 5


def export_onnx(model, path, size=96, dynamic=True):
    torch.onnx.export(model, (torch.rand(1, 3, size, size),), str(path), dynamo=False, input_names=["input"],
                      output_names=["output"], opset_version=17,
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}} if dynamic else None)
    return str(path)


class PerAnchor(torch.nn.Module):
    """DeepStream-Yolo-OBB's ONNX layout: (B, N, 7) [cx, cy, w, h, score, class, angle] for every anchor, before
    any suppression (the raw head transposed, each anchor's best class)."""

    def __init__(self, head: torch.nn.Module):
        super().__init__()
        self.head = head

    def forward(self, x):
        y = self.head(x).transpose(1, 2)
        score, cls = y[..., 4:-1].max(dim=-1, keepdim=True)
        return torch.cat([y[..., :4], score, cls.to(y.dtype), y[..., -1:]], dim=-1)


class Anchors(torch.nn.Module):
    """A raw YOLO-OBB head with one column per anchor of the input (8x8, 16x16, 32x32 cells), so that its
    per-anchor export has the row count DeepStream-Yolo's has."""

    def forward(self, x):
        n = sum((int(x.shape[2]) // s) * (int(x.shape[3]) // s) for s in (8, 16, 32))
        toy = obb_toy_models.ToyObb()(x)                                    # (B, 8, 12)
        head = torch.cat([toy] * (-(-n // 12)), dim=2)[:, :, :n]
        ramp = (torch.arange(n, device=x.device) % 7).to(x.dtype) * 0.5    # near-duplicates for NMS to remove
        return torch.cat([head[:, :1] + ramp, head[:, 1:]], dim=1)


def test_a_deepstream_yolo_detector_config_runs_as_written_next_to_its_onnx_file(tmp_path):
    pytest.importorskip("onnx", reason="onnx (the onnx extra) is not installed")
    export_onnx(obb_toy_models.ToyObb(), tmp_path / "yolo11s-obb.onnx")
    (tmp_path / "labels.txt").write_text("vehicle\nship\nplane\n")
    path = config(tmp_path, """\
[property]
gpu-id=0
net-scale-factor=0.0039215697906911373
model-color-format=0
onnx-file=yolo11s-obb.onnx
model-engine-file=model_b1_gpu0_fp32.engine
#int8-calib-file=calib.table
labelfile-path=labels.txt
batch-size=1
network-mode=0
num-detected-classes=3
interval=0
gie-unique-id=1
process-mode=1
network-type=0
cluster-mode=2
maintain-aspect-ratio=1
symmetric-padding=1
#workspace-size=2000
parse-bbox-func-name=NvDsInferParseYolo
custom-lib-path=nvdsinfer_custom_impl_Yolo/libnvdsinfer_custom_impl_Yolo.so
engine-create-func-name=NvDsInferYoloCudaEngineGet
infer-dims=3;96;96

[class-attrs-all]
nms-iou-threshold=0.45
pre-cluster-threshold=0.25
topk=300
""")
    p = pipeline(f"obbinfer name=infer config-file-path={path}")
    outcome, errors, warnings, frames, originals = collect(p)
    assert outcome.eos and not errors, outcome
    assert sum("model-engine-file=" in w and "onnx-file=" in w for w in warnings) == 1  # the fallback, said once
    assert not any("custom-lib-path" in w or "parse-bbox-func-name" in w for w in warnings)  # info lines
    pre = preset("nvinfer").with_(scale=0.0039215697906911373, keep_ratio=True,
                                                                    center=True)
    from obbmeta.infer import ClassFilter

    ref = Detector(obb_toy_models.ToyObb(), input_size=96, conf=0.25, iou=0.45, max_det=0, device="cpu",
                   preprocess_mode=pre, class_filter=ClassFilter(default_topk=300))
    names = ["vehicle", "ship", "plane"]
    for pts, objs in frames:
        (d,) = ref([torch.from_numpy(originals[pts])], "RGBA")
        assert_close_rows(objs, rows(d, names, 1))


def test_a_deepstream_yolo_obb_instance_mask_config_gets_rotated_nms_as_its_parser_did(tmp_path):
    pytest.importorskip("onnx", reason="onnx (the onnx extra) is not installed")
    export_onnx(PerAnchor(Anchors()), tmp_path / "yolo11s-obb.onnx")
    (tmp_path / "labels.txt").write_text("vehicle\nship\nplane\n")
    path = config(tmp_path, """\
[property]
gpu-id=0
net-scale-factor=0.0039215697906911373
model-color-format=0
onnx-file=yolo11s-obb.onnx
model-engine-file=yolo11s-obb.onnx_b1_gpu0_fp32.engine
labelfile-path=labels.txt
batch-size=1
network-mode=0
num-detected-classes=3
interval=0
gie-unique-id=1
process-mode=1
network-type=3
cluster-mode=4
maintain-aspect-ratio=1
symmetric-padding=1
scaling-filter=1
scaling-compute-hw=0
force-implicit-batch-dim=0
parse-bbox-instance-mask-func-name=NvDsInferParseYolo11OBBCuda
custom-lib-path=nvdsinfer_custom_impl_Yolo_OBB/libnvdsinfer_custom_impl_Yolo_obb.so
output-instance-mask=1
infer-dims=3;96;96

[class-attrs-all]
pre-cluster-threshold=0.25
""")
    p = pipeline(f"obbinfer name=infer config-file-path={path}")
    outcome, errors, warnings, frames, originals = collect(p)
    assert outcome.eos and not errors, outcome
    assert sum("network-type=3" in w for w in warnings) == 1
    assert sum("output-instance-mask=1" in w for w in warnings) == 1
    pre = preset("nvinfer").with_(scale=0.0039215697906911373, keep_ratio=True,
                                                                    center=True, resize="bilinear")
    # the raw head the export was made from, through rotated NMS at the parser's 0.45
    ref = Detector(Anchors(), input_size=96, conf=0.25, iou=0.45, max_det=0, device="cpu", preprocess_mode=pre)
    names = ["vehicle", "ship", "plane"]
    total = 0
    for pts, objs in frames:
        (d,) = ref([torch.from_numpy(originals[pts])], "RGBA")
        assert_close_rows(objs, rows(d, names, 1))
        total += len(objs)
    assert total > 5


# ---------------------------------------------------------------- nvinfer's preprocessing, pixel for pixel

def nvinfer_reference(rgb: np.ndarray, net_w: int, net_h: int, keep: bool, symmetric: bool, scale: float,
                      offsets, mean_image=None) -> np.ndarray:
    """NVIDIA's documented preprocessing, written from the docs: the frame scaled to the network size (stretched, or
    to floor(net * src / src) on one side with the rest black, right / bottom or split evenly), nearest sampling
    (scaling-filter 0 / the GPU default: source pixel floor(dst * src / dst)), then y = net-scale-factor * (x -
    mean) with mean the per-channel offsets or the mean image, padding included."""
    h, w = rgb.shape[:2]
    if keep:
        hd = net_w * h / w
        dw, dh = (net_w, int(hd)) if hd <= net_h else (int(net_h * w / h), net_h)
    else:
        dw, dh = net_w, net_h
    ox, oy = ((net_w - dw) // 2, (net_h - dh) // 2) if symmetric and keep else (0, 0)
    canvas = np.zeros((net_h, net_w, 3), np.float64)
    ys = np.arange(dh) * h // dh
    xs = np.arange(dw) * w // dw
    canvas[oy:oy + dh, ox:ox + dw] = rgb[ys][:, xs]
    mean = np.asarray(offsets, np.float64).reshape(1, 1, -1) if mean_image is None else mean_image
    return (scale * (canvas - mean)).transpose(2, 0, 1)


@pytest.mark.parametrize("keep,symmetric", [(0, 0), (1, 0), (1, 1)])
@pytest.mark.parametrize("size", [(160, 120), (120, 160), (101, 77)])
def test_preprocessing_under_an_nvinfer_file_is_nvinfers_formula(tmp_path, keep, symmetric, size):
    w, h = size
    path = config(tmp_path, f"""\
[property]
net-scale-factor=0.0078431372
offsets=127.5;120;110.25
maintain-aspect-ratio={keep}
symmetric-padding={symmetric}
infer-dims=3;64;96
[obbmeta]
model=obb_toy_models:recording_silent
warm-up=false
device=cpu
""")
    obb_toy_models.INPUTS.clear()
    p = Gst.parse_launch(f"videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,format=RGBA,width={w},height={h} ! "
                         f"identity name=before ! obbinfer config-file-path={path} ! fakesink")
    frames = []
    errors = buffer_probe(p.get_by_name("before"), "src", lambda b: frames.append(rgba_copy(b, w, h)))
    assert run(p).eos and not errors
    (x,) = obb_toy_models.INPUTS
    want = nvinfer_reference(frames[0][..., :3].astype(np.float64), 96, 64, bool(keep), bool(symmetric), 0.0078431372,
                             (127.5, 120, 110.25))
    np.testing.assert_allclose(x[0].double().numpy(), want, rtol=0, atol=2e-5)


def test_a_mean_file_is_subtracted_pixel_by_pixel_padding_included(tmp_path):
    rng = np.random.default_rng(1)
    mean = rng.integers(0, 256, (64, 96, 3), dtype=np.uint8)
    (tmp_path / "mean.ppm").write_bytes(b"P6\n96 64\n255\n" + mean.tobytes())
    path = config(tmp_path, """\
[property]
net-scale-factor=0.5
offsets=1;2;3
mean-file=mean.ppm
maintain-aspect-ratio=1
infer-dims=3;64;96
[obbmeta]
model=obb_toy_models:recording_silent
warm-up=false
device=cpu
""")
    obb_toy_models.INPUTS.clear()
    p = Gst.parse_launch("videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,format=RGBA,width=80,height=80 ! "
                         f"identity name=before ! obbinfer config-file-path={path} ! fakesink")
    frames = []
    errors = buffer_probe(p.get_by_name("before"), "src", lambda b: frames.append(rgba_copy(b, 80, 80)))
    assert run(p).eos and not errors
    (x,) = obb_toy_models.INPUTS
    want = nvinfer_reference(frames[0][..., :3].astype(np.float64), 96, 64, True, False, 0.5, None,
                             mean_image=mean.astype(np.float64))
    np.testing.assert_allclose(x[0].double().numpy(), want, rtol=0, atol=1e-4)


# ---------------------------------------------------------------- nvinfer's defaults and warnings

def test_cluster_mode_zero_is_nms_at_05_keeping_20_per_class_as_nvinfers_release_library(tmp_path):
    path = config(tmp_path, "[property]\ninfer-dims=3;96;96\n[class-attrs-all]\nnms-iou-threshold=0.9\ntopk=50\n"
                            "[obbmeta]\nmodel=obb_toy_models:toy\npreprocess=ultralytics\n")
    p = pipeline(f"obbinfer name=infer config-file-path={path}")
    outcome, errors, warnings, frames, originals = collect(p)
    assert outcome.eos and not errors
    assert sum("cluster-mode=0" in w for w in warnings) == 1
    from obbmeta.infer import ClassFilter

    ref = Detector("obb_toy_models:toy", input_size=96, conf=0.2, iou=0.5, max_det=0, device=AUTO,
                   class_filter=ClassFilter(default_topk=20))
    for pts, objs in frames:
        (d,) = ref([torch.from_numpy(originals[pts])], "RGBA", on_host=True)  # the element's path
        assert sorted(objs) == rows(d)


def test_label_file_problems_are_found_at_start_and_never_stop_the_pipeline(tmp_path):
    (tmp_path / "short.txt").write_text("car\n")
    (tmp_path / "empty.txt").write_text("\n\n")
    for labels, said in (("short.txt", ["num-detected-classes=3 but the labels name 1", "the model has 3"]),
                         ("empty.txt", ["holds no labels"])):
        path = config(tmp_path, f"[property]\nlabelfile-path={labels}\nnum-detected-classes=3\ninfer-dims=3;96;96\n"
                                "cluster-mode=2\n[obbmeta]\nmodel=obb_toy_models:toy\n")
        outcome, errors, warnings, frames, _ = collect(pipeline(f"obbinfer config-file-path={path}"))
        assert outcome.eos and not errors, outcome
        for text in said:
            assert any(text in w for w in warnings), (text, warnings)
        assert any(objs for _, objs in frames)
    path = config(tmp_path, "[property]\nlabelfile-path=missing.txt\n[obbmeta]\nmodel=obb_toy_models:toy\n")
    outcome, *_ = collect(pipeline(f"obbinfer config-file-path={path}"))
    assert not outcome.eos and "missing.txt" in outcome.error and "does not exist" in outcome.error
    bad = tmp_path / "latin1.txt"
    bad.write_bytes(b"caf\xe9\n")
    path = config(tmp_path, "[property]\nlabelfile-path=latin1.txt\n[obbmeta]\nmodel=obb_toy_models:toy\n")
    outcome, *_ = collect(pipeline(f"obbinfer config-file-path={path}"))
    assert not outcome.eos and "not UTF-8" in outcome.error


def test_interval_is_for_primary_mode_only(tmp_path):
    p = Gst.parse_launch(
        f"videotestsrc num-buffers=6 pattern=smpte ! video/x-raw,format=RGBA,width={W},height={H} "
        "! obbinfer model=obb_toy_models:toy input-size=96 unique-id=1 "
        "! obbinfer name=sgie process-mode=2 model=obb_toy_models:toy_classifier output-format=classifier "
        "crop-size=16x16 unique-id=2 interval=2 ! fakesink")
    obb_toy_models.SECONDARY_CALLS.clear()
    assert run(p).eos
    assert p.get_by_name("sgie").inferred == 6


# ---------------------------------------------------------------- tensor outputs

def test_output_tensor_meta_is_the_models_output_of_each_frame(tmp_path):
    p = pipeline("obbinfer name=infer model=obb_toy_models:toy input-size=96 output-tensor-meta=true unique-id=3",
                 n=4)
    got = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: got.extend(
        nvds_tensors.read_tensor_outputs(f) for f in nvds.BatchMeta.from_gst_buffer(b).frames))
    originals = {}
    buffer_probe(p.get_by_name("before"), "src", lambda b: originals.__setitem__(len(originals), rgba_copy(b, W, H)),
                 errors)
    assert run(p).eos and not errors
    det = Detector("obb_toy_models:toy", input_size=96, device=AUTO)
    assert len(got) == 4
    for k, (meta,) in enumerate(got):
        x, _ = det.preprocess([torch.from_numpy(originals[k])], "RGBA")
        want = obb_toy_models.ToyObb().to(AUTO)(x)[0].cpu().numpy()
        assert meta.unique_id == 3 and meta.network == (96, 96, 3) and meta.maintain_aspect_ratio
        (layer,) = meta.layers
        assert layer.name == "output0" and layer.data.shape == want.shape
        np.testing.assert_allclose(layer.data, want, rtol=0, atol=1e-5)


def test_network_type_100_writes_the_tensors_and_no_objects(tmp_path):
    path = config(tmp_path, "[property]\nnetwork-type=100\noutput-tensor-meta=1\ninfer-dims=3;96;96\n"
                            "[obbmeta]\nmodel=obb_toy_models:toy\n")
    p = pipeline(f"obbinfer config-file-path={path}", n=3)
    got, objs = [], []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: [
        (got.append(nvds_tensors.read_tensor_outputs(f)), objs.extend(readback.pairs(f)))
        for f in nvds.BatchMeta.from_gst_buffer(b).frames])
    assert run(p).eos and not errors
    assert len(got) == 3 and all(len(g) == 1 for g in got) and not objs


def test_raw_output_file_write_names_and_fills_the_files_as_nvinfer(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = pipeline("obbinfer name=infer model=obb_toy_models:toy input-size=64 raw-output-file-write=true unique-id=7",
                 n=3)
    assert run(p).eos
    names = sorted(os.listdir(tmp_path))
    want = sorted(f"gstnvdsinfer_uid-07_layer-{layer}_batch-{b:010d}_batchsize-01.bin"
                  for b in range(3) for layer in ("input", "output0"))
    assert names == want
    data = np.fromfile(tmp_path / want[0], np.float32)
    assert data.size == 1 * 3 * 64 * 64  # the input batch, raw, no header


def test_the_raw_output_callback_is_called_with_every_layer_as_nvinfer_calls_it():
    calls = []
    CB = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(nvds_tensors.NetworkInfo),
                          ctypes.POINTER(nvds_tensors.LayerInfo), ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p)

    def on_output(buf, net, layers, n_layers, batch_size, user):
        ls = [layers[i] for i in range(n_layers)]
        calls.append((bool(buf), (net.contents.width, net.contents.height, net.contents.channels), batch_size, user,
                      [(la.layerName.decode(), la.isInput, la.bindingIndex, la.inferDims.numDims) for la in ls]))

    cb = CB(on_output)
    p = pipeline("obbinfer name=infer model=obb_toy_models:toy input-size=64", n=2)
    e = p.get_by_name("infer")
    capsule = ctypes.pythonapi.PyCapsule_GetPointer
    capsule.restype, capsule.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    gobject = ctypes.CDLL("libgobject-2.0.so.0")
    address = ctypes.c_void_p(capsule(e.__gpointer__, None))
    gobject.g_object_set(address, b"raw-output-generated-callback", ctypes.cast(cb, ctypes.c_void_p), None)
    gobject.g_object_set(address, b"raw-output-generated-userdata", ctypes.c_void_p(1234), None)
    assert run(p).eos
    assert calls == [(True, (64, 64, 3), 1, 1234, [("input", 1, 0, 3), ("output0", 0, 1, 2)])] * 2


def test_the_raw_output_generated_signal_gives_python_the_host_layers():
    p = pipeline("obbinfer name=infer model=obb_toy_models:toy input-size=64", n=2)
    seen = []
    p.get_by_name("infer").connect("raw-output-generated", lambda _e, buf, layers, n: seen.append(
        (n, layers["network"], layers["input"][1].shape, [(k, v.shape) for k, v in layers["outputs"]])))
    assert run(p).eos
    assert seen == [(1, (64, 64, 3), (1, 3, 64, 64), [("output0", (1, 8, 12))])] * 2


# ---------------------------------------------------------------- input-tensor-meta (nvdspreprocess' tensor)

class _Vec(ctypes.Structure):
    _fields_ = [("begin", ctypes.c_void_p), ("end", ctypes.c_void_p), ("cap", ctypes.c_void_p)]


def _vector(array) -> _Vec:
    base = ctypes.addressof(array)
    return _Vec(base, base + ctypes.sizeof(array), base + ctypes.sizeof(array))


class _Str(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("length", ctypes.c_size_t), ("local", ctypes.c_char * 16)]


class _TensorMeta(ctypes.Structure):  # NvDsPreProcessTensorMeta, NVIDIA's nvdspreprocess_meta.h (libstdc++, LP64)
    _fields_ = [("raw_tensor_buffer", ctypes.c_void_p), ("buffer_size", ctypes.c_uint64), ("tensor_shape", _Vec),
                ("data_type", ctypes.c_int), ("tensor_name", _Str), ("gpu_id", ctypes.c_uint),
                ("private_data", ctypes.c_void_p), ("meta_id", ctypes.c_uint), ("maintain_aspect_ratio", ctypes.c_int)]


class _BatchMeta(ctypes.Structure):  # GstNvDsPreProcessBatchMeta
    _fields_ = [("target_unique_ids", _Vec), ("tensor_meta", ctypes.POINTER(_TensorMeta)), ("roi_vector", _Vec),
                ("private_data", ctypes.c_void_p)]


def _roi_type(rect):
    return type("Roi", (ctypes.Structure,), {"_fields_": [
        ("roi", rect), ("roi_polygon", (ctypes.c_uint * 2) * 8), ("converted_buffer", ctypes.c_void_p),
        ("frame_meta", ctypes.c_void_p), ("scale_ratio_x", ctypes.c_double), ("scale_ratio_y", ctypes.c_double),
        ("offset_left", ctypes.c_double), ("offset_top", ctypes.c_double),
        ("classifier_meta_list", ctypes.c_void_p), ("roi_user_meta_list", ctypes.c_void_p),
        ("object_meta", ctypes.c_void_p)]})


def test_input_tensor_meta_runs_the_model_on_the_preprocess_tensor_and_maps_boxes_back_through_each_roi():
    """A probe attaches what nvdspreprocess would: a (2, 3, 64, 64) tensor of two ROIs of the frame, each scaled
    into the tensor; obbinfer's boxes must be the model's boxes on each row mapped back: (tensor - offset) / scale +
    roi, clipped to the ROI."""
    keep = []
    rois_px = [((10.0, 20.0, 80.0, 60.0), 64 / 80, 64 / 60, 0.0, 0.0), ((90.0, 30.0, 64.0, 64.0), 1.0, 1.0, 0.0, 0.0)]
    tensor = torch.rand(2, 3, 64, 64, generator=torch.Generator().manual_seed(11))
    from obbmeta.nvds import _core

    def attach(buf):
        batch = nvds.BatchMeta.from_gst_buffer(buf)
        (f,) = batch.frames
        core = _core.get()
        rect = batch.layout.rect_params
        Roi = _roi_type(rect)
        rois = (Roi * 2)()
        for r, ((left, top, w, h), sx, sy, ox, oy) in zip(rois, rois_px):
            r.roi.left, r.roi.top, r.roi.width, r.roi.height = left, top, w, h
            r.frame_meta, r.scale_ratio_x, r.scale_ratio_y, r.offset_left, r.offset_top = f.address, sx, sy, ox, oy
        ids = (ctypes.c_uint64 * 1)(15)
        shape = (ctypes.c_int * 4)(2, 3, 64, 64)
        data = tensor.contiguous()
        name = ctypes.create_string_buffer(b"input")
        tm = _TensorMeta(data.data_ptr(), data.numel() * 4, _vector(shape), 0, _Str(ctypes.addressof(name), 5), 0,
                         None, 0, 0)
        bm = _BatchMeta(_vector(ids), ctypes.pointer(tm), _vector(rois), None)
        keep.extend([rois, ids, shape, data, name, tm, bm])
        lib = core.libs.meta
        lib.nvds_acquire_user_meta_from_pool.restype = ctypes.c_void_p
        lib.nvds_acquire_user_meta_from_pool.argtypes = [ctypes.c_void_p]
        lib.nvds_add_user_meta_to_batch.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        um = lib.nvds_acquire_user_meta_from_pool(batch.address)
        from obbmeta.nvds import layouts

        u = layouts.UserMeta.from_address(um)
        u.user_meta_data = ctypes.addressof(bm)
        u.base_meta.meta_type = 28  # NVDS_PREPROCESS_BATCH_META
        u.base_meta.copy_func = None
        u.base_meta.release_func = None
        lib.nvds_add_user_meta_to_batch(batch.address, um)

    p = Gst.parse_launch(f"videotestsrc num-buffers=1 ! video/x-raw,format=RGBA,width={W},height={H} "
                         "! obbinfer name=pre model=obb_toy_models:toy input-size=64 conf=0.99 unique-id=1 "
                         "! identity name=attach ! obbinfer name=infer model=obb_toy_models:toy input-tensor-meta=true "
                         "conf=0.2 ! fakesink name=sink")
    got = []
    errors = buffer_probe(p.get_by_name("attach"), "src", attach)
    buffer_probe(p.get_by_name("sink"), "sink", lambda b: got.extend(
        (i.component_id, tuple(round(v, 3) for v in o.xywhr), tuple(round(v, 2) for v in i.rect))
        for f in nvds.BatchMeta.from_gst_buffer(b).frames for i, o in readback.pairs(f) if i.component_id == 15),
        errors)
    assert run(p).eos and not errors
    from obbmeta import Letterbox, OrientedBoxes

    model = obb_toy_models.ToyObb()
    from obbmeta import decode

    want = []
    for row, ((left, top, w, h), sx, sy, ox, oy) in zip(tensor, rois_px):
        (d,) = decode.yolo_obb(model(row[None]), conf=0.2, iou=0.45, max_det=300)
        d = d.rescale(Letterbox(sx, ox - left * sx, oy - top * sy, sy))
        aabb = d.aabb()
        inside = (aabb[:, 2] > left) & (aabb[:, 0] < left + w) & (aabb[:, 3] > top) & (aabb[:, 1] < top + h)
        d = OrientedBoxes(d.xywhr[inside], d.scores[inside], d.labels[inside])
        for box, a in zip(d.xywhr.tolist(), d.aabb().tolist()):
            x1, y1 = max(a[0], left, 0), max(a[1], top, 0)
            x2, y2 = min(a[2], left + w, W), min(a[3], top + h, H)
            want.append((15, tuple(round(v, 3) for v in box), (round(x1, 2), round(y1, 2), round(x2 - x1, 2),
                                                                round(y2 - y1, 2))))
    # the writer's rect is float32, the reference float64: equal within a rounding step, not digit for digit
    assert len(got) == len(want) > 2
    for g, w in zip(sorted(got), sorted(want)):
        assert g[0] == w[0] and np.allclose(g[1], w[1], atol=2e-3) and np.allclose(g[2], w[2], atol=2e-2), (g, w)
    assert math.isfinite(sum(v for g in got for v in g[1]))
