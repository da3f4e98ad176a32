"""examples/readme_picture.py runs end to end (small, to a temporary file) and draws what it says."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from obbmeta import nvds

if not nvds.available():
    pytest.skip("NVIDIA's libnvds_meta is not available", allow_module_level=True)

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "readme_picture.py"


def load_script():
    spec = importlib.util.spec_from_file_location("readme_picture", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_picture_script_writes_both_panels(tmp_path):
    script = load_script()
    out = tmp_path / "picture.png"
    stats = script.main(out, width=320, height=180)
    picture = np.asarray(Image.open(out).convert("RGB"))
    assert picture.shape[0] > 180 and picture.shape[1] > 640
    assert stats["objects"] == stats["drawn"] == 22 and stats["labels"] == 22
    assert 4 * 21 <= stats["lines"] <= 4 * 22  # one ship leaves the frame: some of its edges are clipped away
    scene, _, _ = script.make_scene(320, 180)
    band = picture.shape[0] - 180
    left = picture[band:, :320]
    right = picture[band:, -320:]
    assert (left != scene).any(axis=2).mean() > 0.01 and (right != scene).any(axis=2).mean() > 0.01
    assert not np.array_equal(left, right)  # overlay lines, labels and grey AABBs differ from the raster
