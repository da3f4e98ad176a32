"""obbinfer as a drop-in for nvinfer: its config files, property names, life cycle, live model swaps, debug output,
and exceptions from user code. Objects are read back through NVIDIA's lists (obbmeta.nvds on libnvds_meta)."""
from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import obb_toy_models
import pytest
import readback
import torch
from devices import AUTO
from pipelines import buffer_probe, bus_warnings, rgba_copy, run

from obbmeta import nvds
from obbmeta.gst import GObject, Gst
from obbmeta.infer import ClassFilter, Detector

W, H = 160, 120
HERE = Path(__file__).parent


def config(tmp_path, text, name="pgie.txt"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def objects(buf):
    """Per frame of the buffer: sorted (label, class, confidence, component, xywhr) of its objects."""
    out = []
    for f in nvds.BatchMeta.from_gst_buffer(buf).frames:
        out.append(sorted((i.label, i.class_id, round(i.confidence, 5), i.component_id,
                           tuple(round(v, 3) for v in o.xywhr)) for i, o in readback.pairs(f)))
    return out


def videotest(n, element, extra=""):
    return Gst.parse_launch(f"videotestsrc num-buffers={n} pattern=ball ! video/x-raw,format=RGBA,width={W},"
                            f"height={H} ! identity name=before ! {element} ! {extra}fakesink name=sink")


def test_an_nvinfer_config_drives_ids_labels_class_attributes_and_thresholds(tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("car\nboat\nplane\n")
    path = config(tmp_path, """\
[property]
gie-unique-id=5
labelfile-path=labels.txt
infer-dims=3;96;96
batch-size=1
interval=0
filter-out-class-ids=2
cluster-mode=2
model-engine-file=model.engine
[class-attrs-all]
pre-cluster-threshold=0.3
nms-iou-threshold=0.4
[class-attrs-1]
pre-cluster-threshold=0.6
[obbmeta]
model=obb_toy_models:toy
device=cpu
""")
    p = videotest(20, f"obbinfer name=infer config-file-path={path}")
    originals, got = {}, {}
    errors = buffer_probe(p.get_by_name("before"), "src", lambda b: originals.__setitem__(b.pts, rgba_copy(b, W, H)))
    buffer_probe(p.get_by_name("sink"), "sink", lambda b: got.__setitem__(b.pts, objects(b)[0]), errors)
    warnings = bus_warnings(p)
    outcome = run(p)
    assert outcome.eos and not errors, outcome
    infer = p.get_by_name("infer")
    assert infer.get_property("unique-id") == 5 and infer.get_property("gie-unique-id") == 5
    assert infer.get_property("input-size") == "96x96" and infer.get_property("conf") == pytest.approx(0.3)
    # keys the file leaves out take nvinfer's defaults: its preprocessing (stretch, nearest, no scaling), no box cap
    ref = Detector("obb_toy_models:toy", input_size=96, conf=0.3, iou=0.4, max_det=0, device="cpu",
                   preprocess_mode="nvinfer", class_filter=ClassFilter(pre_threshold={1: 0.6}, drop=frozenset({2})))
    names = ["car", "boat", "plane"]
    total = 0
    for pts, image in originals.items():
        (d,) = ref([torch.from_numpy(image)], "RGBA")
        want = sorted((names[int(c)], int(c), round(float(s), 5), 5, tuple(round(v, 3) for v in row))
                      for row, c, s in zip(d.xywhr.tolist(), d.labels, d.scores))
        assert got[pts] == want
        assert all(c != 2 for _, c, *_ in got[pts]) and all(s > 0.6 for _, c, s, *_ in got[pts] if c == 1)
        total += len(want)
    assert total > 20
    assert not any("model-engine-file" in w for w in warnings)  # model= wins over the engine: said at info level


def test_properties_set_on_the_element_override_the_file(tmp_path):
    path = config(tmp_path, "[property]\ngie-unique-id=5\n[obbmeta]\nmodel=obb_toy_models:toy\ninput-size=96\n")
    p = videotest(3, f"obbinfer name=infer config-file-path={path} unique-id=9")
    ids = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: ids.extend(o[3] for o in objects(b)[0]))
    assert run(p).eos and not errors
    assert ids and set(ids) == {9}


def test_colour_order_and_normalisation_from_the_config_reach_the_model(tmp_path):
    path = config(tmp_path, """\
[property]
model-color-format=1
net-scale-factor=0.5
offsets=10;20;30
maintain-aspect-ratio=0
infer-dims=3;64;64
[obbmeta]
model=obb_toy_models:recording
warm-up=false
preprocess=nvinfer
device=cpu
""")
    obb_toy_models.INPUTS.clear()
    p = Gst.parse_launch(f"videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,format=RGBA,width=64,height=64 ! "
                         f"identity name=before ! obbinfer config-file-path={path} ! fakesink")
    frames = []
    errors = buffer_probe(p.get_by_name("before"), "src", lambda b: frames.append(rgba_copy(b, 64, 64)))
    assert run(p).eos and not errors
    (x,) = obb_toy_models.INPUTS
    rgb = torch.from_numpy(frames[0][..., :3]).permute(2, 0, 1).float()
    want = (rgb.flip(0) - torch.tensor([10.0, 20.0, 30.0]).view(3, 1, 1)) * 0.5  # BGR, then (x - offsets) * scale
    assert x.shape == (1, 3, 64, 64) and torch.equal(x[0], want)


def start_error(p):
    """set_state(PAUSED) on a pipeline whose obbinfer cannot start: (state change result, error message)."""
    ret = p.set_state(Gst.State.PAUSED)
    if ret == Gst.StateChangeReturn.ASYNC:
        ret = p.get_state(10 * Gst.SECOND)[0]
    msg = p.get_bus().timed_pop_filtered(5 * Gst.SECOND, Gst.MessageType.ERROR)
    p.set_state(Gst.State.NULL)
    assert p.get_state(5 * Gst.SECOND)[1] == Gst.State.NULL
    return ret, (msg.parse_error()[0].message if msg else None), (msg.src.get_name() if msg else None)


@pytest.mark.parametrize("line,key", [
    ("batch-size=four", "batch-size"), ("network-mode=7", "network-mode"), ("batch-size=1000000000", "batch-size"),
    ("gie-unique-id=0", "gie-unique-id"), ("scaling-filter=99", "scaling-filter"),
    ("net-scale-factor=-1", "net-scale-factor"), ("bogus line", None)])
def test_a_malformed_config_fails_the_start_naming_file_line_and_key(tmp_path, line, key):
    path = config(tmp_path, f"[property]\ngpu-id=0\n{line}\n[obbmeta]\nmodel=obb_toy_models:toy\n")
    p = videotest(3, f"obbinfer name=infer config-file-path={path}")
    ret, message, source = start_error(p)
    assert ret == Gst.StateChangeReturn.FAILURE and source == "infer"
    assert f"{path}:3: " in message and (key is None or f"{path}:3: {key}: " in message)


@pytest.mark.parametrize("model,message", [("no_such_module_xyz:f", "cannot import module"),
                                           ("obb_toy_models:cxx_error", "RuntimeError"),
                                           ("obb_toy_models:wrong_shape", "yolo-obb")])
def test_a_bad_model_fails_ready_to_paused_with_the_error_on_the_bus(model, message):
    p = videotest(3, f"obbinfer name=infer model={model} input-size=64")
    ret, text, source = start_error(p)
    assert ret == Gst.StateChangeReturn.FAILURE and source == "infer" and message in text


def test_nvinfer_names_are_aliases_and_mutability_is_flagged():
    e = Gst.ElementFactory.make("obbinfer")
    e.set_property("gie-unique-id", 4)
    e.set_property("infer-on-class-ids", "0:2")
    e.set_property("gpu-id", 1)
    e.set_property("network-mode", 2)
    assert e.get_property("unique-id") == 4 and e.get_property("operate-on-class-ids") == "0;2"
    assert e.get_property("device") == "auto" and e.get_property("gpu-id") == 1  # auto: cuda:1 where CUDA is
    assert e.get_property("precision") == "fp16" and e.get_property("network-mode") == 2
    flags = {name: e.find_property(name).flags for name in ("conf", "model", "config-file-path", "process-mode",
                                                             "unique-id", "batch-size", "model-engine-file")}
    assert all(int(flags[n]) & Gst.PARAM_MUTABLE_PLAYING for n in ("conf", "model", "config-file-path",
                                                                   "model-engine-file"))
    assert all(int(flags[n]) & Gst.PARAM_MUTABLE_READY for n in ("process-mode", "unique-id", "batch-size"))


def test_a_mistyped_class_names_path_is_refused_at_start(tmp_path):
    p = videotest(3, f"obbinfer name=infer model=obb_toy_models:toy input-size=64 "
                     f"class-names={tmp_path / 'typo.txt'}")
    ret, text, _ = start_error(p)
    assert ret == Gst.StateChangeReturn.FAILURE and "typo.txt" in text and "does not exist" in text


# ---------------------------------------------------------------- while playing

class Feeder:
    """appsrc -> obbinfer -> appsink, one frame at a time: each push waits until its frame left obbinfer."""

    def __init__(self, element: str):
        self.p = Gst.parse_launch(
            f"appsrc name=src format=time caps=video/x-raw,format=RGBA,width={W},height={H},framerate=30/1 ! "
            f"{element} ! appsink name=sink sync=false emit-signals=false")
        self.src, self.sink = self.p.get_by_name("src"), self.p.get_by_name("sink")
        self.messages: list = []
        self.p.get_bus().enable_sync_message_emission()
        self.p.get_bus().connect("sync-message", lambda _b, m: self.messages.append(m))
        self.p.set_state(Gst.State.PLAYING)
        self.k = 0

    def push(self) -> list:
        img = np.full((H, W, 4), (self.k * 7) % 256, np.uint8)
        buf = Gst.Buffer.new_wrapped(img.tobytes())
        buf.pts = self.k * Gst.SECOND // 30
        self.k += 1
        assert self.src.emit("push-buffer", buf) == Gst.FlowReturn.OK
        sample = self.sink.emit("try-pull-sample", 10 * Gst.SECOND)
        assert sample is not None, self.errors()
        return objects(sample.get_buffer())[0]

    def errors(self):
        return [m.parse_error()[0].message for m in self.messages if m.type == Gst.MessageType.ERROR]

    def warnings(self):
        return [m.parse_warning()[0].message for m in self.messages if m.type == Gst.MessageType.WARNING]

    def swaps(self):
        return [m.get_structure() for m in self.messages if m.type == Gst.MessageType.ELEMENT
                and m.get_structure().get_name() == "obbinfer-model-updated"]

    def close(self):
        self.src.emit("end-of-stream")
        self.p.set_state(Gst.State.NULL)
        assert self.p.get_state(5 * Gst.SECOND)[1] == Gst.State.NULL


def wait_for(cond, timeout=30.0):
    t0 = time.time()
    while not cond():
        if time.time() - t0 > timeout:
            raise TimeoutError
        time.sleep(0.01)


def test_switching_the_model_twice_while_playing_infers_every_frame_once_with_the_model_in_force():
    f = Feeder("obbinfer name=infer model=obb_toy_models:const_a input-size=64")
    infer = f.p.get_by_name("infer")
    updates = []
    infer.connect("model-updated", lambda _e, status, path: updates.append((status, path)))
    try:
        seen = [f.push() for _ in range(5)]
        for model in ("obb_toy_models:const_b", "no_such_module_xyz:f", "obb_toy_models:const_c"):
            before, t0 = len(updates), time.monotonic()  # counted first: a failing load may answer at once
            infer.set_property("model", model)
            while len(updates) == before:  # frames keep flowing while the new model loads
                seen.append(f.push())
                assert time.monotonic() - t0 < 60, "the new model never took over"  # by time: a loaded machine
            seen += [f.push() for _ in range(3)]
        swaps = [s.get_value("batch") for s in f.swaps()]
        assert [s.get_value("model") for s in f.swaps()] == ["obb_toy_models:const_b", "obb_toy_models:const_c"]
        assert [u[0] for u in updates] == [0, 1, 0]
        assert any("could not be loaded" in w and "no_such_module_xyz" in w for w in f.warnings())
        assert not f.errors()
    finally:
        f.close()
    assert infer.batches == len(seen)  # every frame went through once
    for k, objs in enumerate(seen):
        model = 0 if k < swaps[0] else 1 if k < swaps[1] else 2
        # const_a / b / c: one box of class 0 / 1 / 2 at x = 10 / 30 / 50 in the 64-pixel input (scale 64 / 160)
        assert [(o[1], o[4][0]) for o in objs] == [(model, (10.0 + 20 * model) * 160 / 64)], (k, swaps)


def test_per_batch_properties_change_at_the_next_frame_while_playing():
    f = Feeder("obbinfer name=infer model=obb_toy_models:const_a input-size=64 unique-id=1")
    infer = f.p.get_by_name("infer")
    try:
        first = f.push()
        infer.set_property("unique-id", 7)
        infer.set_property("class-names", "alpha,beta,gamma")
        second = f.push()
        infer.set_property("conf", 0.95)  # above the box's 0.9: nothing passes
        third = f.push()
        infer.set_property("interval", 1)
        rest = [f.push() for _ in range(4)]
        infer.set_property("process-mode", 1)  # flagged MUTABLE_READY: applies at the next start, says so
        assert not f.errors()
        assert any("process-mode cannot change while the element runs" in w for w in f.warnings())
    finally:
        f.close()
    assert first[0][3] == 1 and first[0][0] == "0"
    assert second[0][3] == 7 and second[0][0] == "alpha"
    assert third == [] and rest == [[]] * 4 and infer.inferred == 5  # interval=1: every other batch inferred


@pytest.mark.parametrize("model,name", [("obb_toy_models:system_exit", "SystemExit"),
                                        ("obb_toy_models:keyboard_interrupt", "KeyboardInterrupt")])
def test_systemexit_and_keyboardinterrupt_from_the_model_stop_the_pipeline_with_an_error(model, name):
    p = videotest(5, f"obbinfer name=infer model={model} input-size=64")
    done = []
    t = threading.Thread(target=lambda: done.append(run(p, timeout_s=30)), daemon=True)
    t.start()
    t.join(40)
    assert done, "the pipeline hung"
    outcome = done[0]
    assert not outcome.eos and outcome.stopped and name in outcome.error and outcome.error.startswith("infer:")


@pytest.mark.parametrize("level", [5, 6])
def test_gst_debug_obbinfer_5_logs_the_load_and_every_batch(level):
    script = ("import sys; sys.path.insert(0, %r); import obbmeta.gst; obbmeta.gst.register(); "
              "from obbmeta.gst import Gst; "
              "p = Gst.parse_launch('videotestsrc num-buffers=3 ! video/x-raw,format=RGBA,width=64,height=48 ! "
              "obbinfer model=obb_toy_models:toy input-size=64 ! fakesink'); "
              "p.set_state(Gst.State.PLAYING); "
              "p.get_bus().timed_pop_filtered(30 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR); "
              "p.set_state(Gst.State.NULL)") % str(HERE)
    env = dict(os.environ, GST_DEBUG=f"obbinfer:{level}", GST_DEBUG_NO_COLOR="1")
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "obbinfer" in r.stderr and re.search(r"model obb_toy_models:toy loaded on (cpu|cuda:0)", r.stderr)
    assert "warm-up on 64x64" in r.stderr
    assert all(f"batch {k}: 1 frames" in r.stderr for k in range(3))
    assert "model + decode" in r.stderr


def test_osd_limit_keeps_what_nvdsosd_draws_on_the_first_objects_of_each_frame_only():
    """osd-limit=K: the first K objects of a frame keep their border and display text, read at NVIDIA's offsets; the
    others are written complete (same boxes, labels, OBBs) but give nvdsosd nothing to draw."""
    sys.path.insert(0, str(HERE.parent / "nvds"))
    import raw

    seen = {}
    for limit in (0, 1):
        p = videotest(6, f"obbinfer model=obb_toy_models:toy input-size=96 device=cpu osd-limit={limit}")
        rows = []

        def look(buf, rows=rows):
            batch = nvds.BatchMeta.from_gst_buffer(buf)
            for f in batch.frames:
                objs = raw.objects_of(f.address)[::-1]  # insertion order: by descending score
                rows.append([(raw.u32(o + raw.OBJ["border_width"]) > 0, bool(raw.ptr(o + raw.OBJ["display_text"])))
                             for o in objs])
            rows.append(objects(buf))

        errors = buffer_probe(p.get_by_name("sink"), "sink", look)
        outcome = run(p)
        assert outcome.eos and not errors, outcome
        seen[limit] = rows
    drawn_all, drawn_one = seen[0][0::2], seen[1][0::2]
    assert sum(len(r) for r in drawn_all) > len(drawn_all)  # frames with more than one object
    assert all(all(v == (True, True) for v in r) for r in drawn_all)
    assert all(r[:1] == [(True, True)] and all(v == (False, False) for v in r[1:]) for r in drawn_one if r)
    assert seen[0][1::2] == seen[1][1::2]  # the objects themselves are the same


def test_nvinfer_names_in_the_obbmeta_group_mean_their_properties(tmp_path):
    """[obbmeta] takes obbinfer's names, nvinfer's aliases included: gie-unique-id=7 is unique-id=7 (it used to be
    stored under the alias and ignored)."""
    path = config(tmp_path, "[obbmeta]\nmodel=obb_toy_models:toy\ninput-size=96\ndevice=cpu\ngie-unique-id=7\n"
                            "network-mode=0\n")
    p = videotest(3, f"obbinfer name=infer config-file-path={path}")
    got = []
    errors = buffer_probe(p.get_by_name("sink"), "sink", lambda b: got.append(objects(b)[0]))
    outcome = run(p)
    assert outcome.eos and not errors, outcome
    infer = p.get_by_name("infer")
    assert infer.get_property("unique-id") == 7 and infer.get_property("gie-unique-id") == 7
    assert infer.get_property("precision") == "fp32"
    assert sum(len(g) for g in got) > 0 and all(o[3] == 7 for g in got for o in g)


@pytest.mark.parametrize("line,key", [("warm-up=yes", "warm-up"), ("network-mode=5", "network-mode"),
                                      ("unique-id=99999999999", "unique-id")])
def test_a_bad_value_in_the_obbmeta_group_fails_the_start_naming_file_line_and_key(tmp_path, line, key):
    path = config(tmp_path, f"[obbmeta]\nmodel=obb_toy_models:toy\n{line}\n")
    p = videotest(3, f"obbinfer name=infer config-file-path={path}")
    ret, message, source = start_error(p)
    assert ret == Gst.StateChangeReturn.FAILURE and source == "infer"
    assert f"{path}:3: {key}: " in message


# nvinfer's properties as gst_nvinfer_class_init declares them (DeepStream 8.0 / 9.1 gstnvinfer.cpp): name, GType,
# range, default, and whether it may change in PLAYING (the others are GST_PARAM_MUTABLE_READY).
G_MAXUINT, G_MAXINT = 2**32 - 1, 2**31 - 1
NVINFER_PROPERTIES = [
    ("unique-id", "guint", 0, G_MAXUINT, 15, False),
    ("process-mode", "enum", None, None, 1, False),
    ("config-file-path", "gchararray", None, None, None, True),
    ("infer-on-gie-id", "gint", -1, G_MAXINT, -1, False),
    ("infer-on-class-ids", "gchararray", None, None, None, False),
    ("filter-out-class-ids", "gchararray", None, None, None, False),
    ("model-engine-file", "gchararray", None, None, None, True),
    ("batch-size", "guint", 1, 1024, 1, False),  # obbinfer adds 0: every frame of a buffer in one call
    ("interval", "guint", 0, G_MAXINT, 0, False),
    ("gpu-id", "guint", 0, G_MAXUINT, 0, False),
    ("raw-output-file-write", "gboolean", None, None, False, False),
    ("raw-output-generated-callback", "gpointer", None, None, None, False),
    ("raw-output-generated-userdata", "gpointer", None, None, None, False),
    ("output-tensor-meta", "gboolean", None, None, False, False),
    ("output-instance-mask", "gboolean", None, None, False, False),
    ("input-tensor-meta", "gboolean", None, None, False, False),
    ("clip-object-outside-roi", "gboolean", None, None, True, False),
    ("crop-objects-to-roi-boundary", "gboolean", None, None, False, False),
    ("strongly-typed", "gboolean", None, None, False, False),
    ("dynamic-properties", "gchararray", None, None, None, False),
]


@pytest.mark.parametrize("name,gtype,lo,hi,default,playing", NVINFER_PROPERTIES, ids=[p[0] for p in NVINFER_PROPERTIES])
def test_every_nvinfer_property_has_nvinfers_type_range_default_and_mutability(name, gtype, lo, hi, default,
                                                                              playing):
    e = Gst.ElementFactory.make("obbinfer")
    spec = e.find_property(name)
    assert spec is not None, f"obbinfer has no property {name}"
    got = spec.value_type.name
    assert got == gtype or (gtype == "enum" and spec.value_type.is_a(GObject.TYPE_ENUM)), (name, got)
    if lo is not None:
        assert (spec.minimum, spec.maximum) == (lo if name != "batch-size" else 0, hi)
    if gtype not in ("gpointer",):
        value = e.get_property(name)
        assert (value or None) == (default or None) if gtype == "gchararray" else int(value) == int(default)
    flags = int(spec.flags)
    assert bool(flags & Gst.PARAM_MUTABLE_PLAYING) == playing and bool(flags & Gst.PARAM_MUTABLE_READY) != playing


def test_process_mode_takes_nvinfers_nicks():
    p = Gst.parse_launch("videotestsrc num-buffers=1 ! obbinfer name=a process-mode=secondary ! "
                         "obbinfer name=b process-mode=primary ! obbinfer name=c process-mode=2 ! fakesink")
    assert [int(p.get_by_name(n).get_property("process-mode")) for n in "abc"] == [2, 1, 2]


def test_a_refused_alias_is_cleared_by_a_later_valid_value_of_either_name():
    e = Gst.ElementFactory.make("obbinfer")
    e.set_property("precision", "fp64")
    assert "precision='fp64' refused" in " ".join(e._refused.values())
    e.set_property("network-mode", 0)  # the alias clears the refusal of its property
    assert e.get_property("precision") == "fp32" and not e._refused
    e.set_property("infer-on-class-ids", "0:x")
    assert e._refused
    e.set_property("operate-on-class-ids", "1;2")  # the property clears the refusal of its alias
    assert not e._refused and e.get_property("infer-on-class-ids") == "1;2"


def test_gpu_id_on_a_machine_without_cuda_runs_device_auto_on_the_cpu_with_one_warning(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: device=auto runs on cuda:gpu-id")
    path = config(tmp_path, "[property]\ngpu-id=0\n[obbmeta]\nmodel=obb_toy_models:toy\ninput-size=64\n")
    p = videotest(3, f"obbinfer name=infer config-file-path={path}")
    warnings = bus_warnings(p)
    assert run(p).eos
    assert sum("gpu-id=0 but torch sees no CUDA device" in w for w in warnings) == 1
    assert p.get_by_name("infer").detector.device == "cpu"


# ---------------------------------------------------------------- the shared-model cache: identity and lifetime

def _script(module, path):
    torch.jit.trace(module.to(AUTO), torch.zeros(1, 3, 64, 64, device=AUTO)).save(str(path))


def test_setting_the_same_path_after_the_file_was_replaced_loads_the_new_weights(tmp_path):
    # the process-wide cache is keyed by what the file is (real path, size, mtime), not by its name: replacing a
    # TorchScript file and setting model to the same path loads the new file, here and in a new pipeline
    path = tmp_path / "model.ts"
    _script(obb_toy_models.Const(10.0, 0), path)
    f = Feeder(f"obbinfer name=infer model={path} input-size=64")
    infer = f.p.get_by_name("infer")
    updates = []
    infer.connect("model-updated", lambda _e, status, p: updates.append(status))
    try:
        assert [o[1] for o in f.push()] == [0]
        time.sleep(0.01)  # a later mtime even on coarse clocks
        _script(obb_toy_models.Const(30.0, 1), tmp_path / "next.ts")
        os.replace(tmp_path / "next.ts", path)
        infer.set_property("model", str(path))
        seen = []
        t0 = time.monotonic()
        while not updates:
            seen.append(f.push())
            assert time.monotonic() - t0 < 60, "the new file never took over"
        assert updates == [0] and [o[1] for o in f.push()] == [1]
    finally:
        f.close()
    g = Feeder(f"obbinfer name=infer model={path} input-size=64")
    try:
        assert [o[1] for o in g.push()] == [1]  # a new pipeline gets the file as it is now
    finally:
        g.close()


def test_models_swapped_out_are_freed_when_no_element_holds_them(tmp_path):
    from obbmeta.infer import shared_models

    paths = []
    for k in range(6):
        paths.append(tmp_path / f"m{k}.ts")
        _script(obb_toy_models.Const(10.0 + k, k % 3), paths[-1])
    f = Feeder(f"obbinfer name=infer model={paths[0]} input-size=64")
    infer = f.p.get_by_name("infer")
    updates = []
    infer.connect("model-updated", lambda _e, status, p: updates.append(status))
    try:
        f.push()
        for k, path in enumerate(paths[1:], 1):
            infer.set_property("model", str(path))
            while len(updates) < k:
                f.push()
            f.push()
            gc.collect()
            held = [key for key in shared_models() if key[0][0] == "file" and str(tmp_path) in key[0][1]]
            assert len(held) == 1 and held[0][0][1] == os.path.realpath(path)  # only the model in force
    finally:
        f.close()
    # a destroyed pipeline's element lets go of its model (this Feeder's bus closures keep its pipeline alive)
    p = videotest(3, f"obbinfer name=infer model={paths[0]} input-size=64")
    assert run(p).eos
    assert [key[0][1] for key in shared_models() if str(tmp_path) in str(key[0])] == [os.path.realpath(paths[-1]),
                                                                                     os.path.realpath(paths[0])]
    del p
    gc.collect()
    assert [key[0][1] for key in shared_models() if str(tmp_path) in str(key[0])] == [os.path.realpath(paths[-1])]


@pytest.mark.parametrize("frames,model,refused", [
    ("cuda:1", "cuda:0", True), ("cuda:1", "cuda", True), ("cuda:0", "cuda", False), ("cuda:1", "cuda:1", False),
    ("cpu", "cuda:1", False), ("cuda:1", "cpu", False), ("cuda", "cuda:0", False), ("cuda:3", "cuda:2", True),
    ("cuda:1", "auto", False)])
def test_frames_on_one_gpu_and_the_model_on_another_are_refused_with_the_fix(frames, model, refused):
    # fake devices: the rule needs no GPU (the two-GPU run itself is tests/gpu on a machine with two)
    from obbmeta.gst.infer import frames_device_problem

    problem = frames_device_problem(frames, model)
    assert (problem is not None) is refused
    if refused:
        gpu = torch.device(frames).index
        assert f"gpu-id={gpu}" in problem and f"device=cuda:{gpu}" in problem
