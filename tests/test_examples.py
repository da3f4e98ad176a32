import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_gst_detector_example_writes_and_reads_back_every_frame(tmp_path):
    pytest.importorskip("gi")
    out = tmp_path / "last.png"
    run = subprocess.run([sys.executable, str(ROOT / "examples" / "gst_detector.py"), "--num-buffers", "4",
                          "--width", "960", "--height", "540", "--save", str(out)],
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("frame ")]
    assert [line.split(":")[0] for line in lines] == ["frame 0", "frame 1", "frame 2", "frame 3"]
    assert all("5 objects read back" in line for line in lines)
    from PIL import Image

    img = Image.open(out)
    assert img.size == (960, 540)
