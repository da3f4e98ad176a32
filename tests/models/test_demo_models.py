import importlib
import json
import subprocess
import sys

import pytest
import torch

from obbmeta import decode
from obbmeta.eval import evaluate
from obbmeta.models import (
    PAD_VALUE,
    WEIGHTS_DIR,
    letterbox_frames,
    load_demo_model,
    load_weights,
    save_weights,
)
from obbmeta.models.data import heldout_frames
from obbmeta.models.detector import OBBDetector

CLASSES = {"aerial": ["vehicle", "ship", "plane", "storage_tank"], "document": ["text_line", "title"]}


@pytest.mark.parametrize("scene", ["aerial", "document"])
def test_the_bundled_model_finds_held_out_objects(scene):
    model = load_demo_model(scene)
    assert not model.training and model.class_names == CLASSES[scene] and model.input_size == 256
    frames = heldout_frames(scene, 6, 256, start=900)  # seeds no training run used
    x, lb = letterbox_frames([f.image for f in frames], model.input_size)
    with torch.no_grad():
        dets = decode.yolo_obb(model(x), conf=0.01, iou=0.5, letterbox=lb)
    res = evaluate(dets, [f.boxes for f in frames], iou_threshold=0.5, metric="area")
    assert res.map >= 0.8


def test_bundled_weights_load_with_weights_only_and_stay_small():
    sizes = 0
    for scene in ("aerial", "document"):
        payload = torch.load(WEIGHTS_DIR / f"{scene}.pt", weights_only=True)
        assert payload["class_names"] == CLASSES[scene]
        assert all(v.dtype in (torch.float16, torch.int64) for v in payload["state_dict"].values())
        sizes += (WEIGHTS_DIR / f"{scene}.pt").stat().st_size
    assert sizes <= 10 * 2 ** 20


@pytest.mark.parametrize("spec, names", [("obbmeta.models:aerial_detector", CLASSES["aerial"]),
                                         ("obbmeta.models:document_detector", CLASSES["document"])])
def test_the_factories_can_be_named_as_module_colon_callable(spec, names):
    module, name = spec.split(":")
    model = getattr(importlib.import_module(module), name)()
    assert isinstance(model, torch.nn.Module) and model.class_names == names


def test_unknown_scenes_are_rejected():
    with pytest.raises(ValueError, match="scene"):
        load_demo_model("satellite")


def test_weights_round_trip_and_foreign_files_are_refused(tmp_path):
    model = OBBDetector(2, ["x", "y"], 128, (8, 8, 8, 8, 8)).eval()
    save_weights(model, tmp_path / "m.pt")
    again = load_weights(tmp_path / "m.pt")
    assert again.class_names == ["x", "y"] and again.input_size == 128
    x = torch.rand(1, 3, 64, 64)
    with torch.no_grad():
        assert torch.allclose(model(x), again(x), atol=0.05, rtol=0.01)  # fp16 storage
    torch.save({"weights": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not an obbmeta demo-detector"):
        load_weights(tmp_path / "other.pt")


def test_letterbox_scales_pads_with_114_and_reports_the_transform():
    frame = torch.full((120, 200, 3), 255, dtype=torch.uint8)
    x, lb = letterbox_frames(frame, 256)
    assert x.shape == (1, 3, 256, 256) and x.dtype == torch.float32
    assert lb.scale == pytest.approx(256 / 200) and (lb.pad_x, lb.pad_y) == (0, 51)
    assert torch.all(x[:, :, :51] == PAD_VALUE) and torch.all(x[:, :, 51 + 154:] == PAD_VALUE)
    assert torch.allclose(x[:, :, 52:51 + 153], torch.ones(1))


def test_letterbox_rejects_non_rgb_uint8():
    with pytest.raises(ValueError, match="frames"):
        letterbox_frames(torch.zeros(10, 10, 3), 256)


def test_the_training_script_writes_weights_and_a_log(tmp_path):
    cmd = [sys.executable, "-m", "obbmeta.models.train", "--scene", "aerial", "--minutes", "0.05", "--out",
           str(tmp_path), "--size", "64", "--batch", "2", "--workers", "0", "--buffer", "8", "--eval-frames", "1",
           "--widths", "8", "8", "8", "8", "8", "--epoch-steps", "1", "--device", "cpu"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    log = json.loads((tmp_path / "aerial_train_log.json").read_text())
    assert log["epochs"] and log["training"]["steps"] >= 1 and "map50" in log["heldout"]
    assert load_weights(tmp_path / "aerial.pt").class_names == CLASSES["aerial"]
