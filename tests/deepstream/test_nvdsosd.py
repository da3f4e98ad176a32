"""NVIDIA's nvdsosd draws obbinfer's objects (and obboverlay's lines) in CPU (process-mode=0) and GPU
(process-mode=1) mode at batch sizes 1, 8 and 16, each pipeline in a process of its own so that a crash inside
nvdsosd is this test's failure with its exit status (DeepStream machine; skipped elsewhere)."""
from __future__ import annotations

import pytest

from . import install
from .pipelines_ds import INFER, muxed_sources, run_isolated


@pytest.fixture
def osd(ds_gst):
    for factory, plugin in (("nvstreammux", "libnvdsgst_multistream.so"),
                            ("nvvideoconvert", "libnvdsgst_nvvideoconvert.so"), ("nvdsosd", "libnvdsgst_osd.so")):
        install.require_element(ds_gst, factory, plugin)
    pytest.importorskip("torch").cuda.is_available() or pytest.skip("obbinfer device=cuda needs a CUDA device")


@pytest.mark.parametrize("batch", [1, 8, 16])
@pytest.mark.parametrize("process_mode", [0, 1])
def test_nvdsosd_draws_obbinfers_objects(osd, process_mode, batch):
    status, counts, stderr = run_isolated(
        f"{muxed_sources(batch, 20)} ! {INFER} ! obboverlay mode=meta ! nvvideoconvert "
        f"! video/x-raw(memory:NVMM),format=RGBA ! nvdsosd process-mode={process_mode} ! fakesink name=out")
    assert status == 0, f"exit status {status} (negative: killed by that signal):\n{stderr}"
    assert counts["eos"] and counts["error"] is None, counts
    assert counts["frames"] == 20 * batch and counts["max_batch"] == batch and counts["obbs"] > 0
