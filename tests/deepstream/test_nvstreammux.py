"""NVIDIA's new nvstreammux batches NVMM frames of several sources; obbinfer writes every frame meta's objects with
their OBB user meta (DeepStream machine; skipped elsewhere)."""
from __future__ import annotations

import pytest
import readback
from pipelines import buffer_probe, run

from . import install
from .pipelines_ds import INFER, muxed_sources


@pytest.fixture
def gst(ds_gst):
    install.require_element(ds_gst, "nvstreammux", "libnvdsgst_multistream.so")
    install.require_element(ds_gst, "nvvideoconvert", "libnvdsgst_nvvideoconvert.so")
    pytest.importorskip("torch").cuda.is_available() or pytest.skip("obbinfer device=cuda needs a CUDA device")
    return ds_gst


@pytest.mark.parametrize("sources", [1, 4])
def test_every_frame_of_a_batch_gets_obbinfers_objects_with_their_rotated_boxes(gst, sources):
    from obbmeta import nvds

    p = gst.parse_launch(f"{muxed_sources(sources, 30)} ! {INFER} ! fakesink name=out")
    batches = []

    def check(buf):
        batch = nvds.BatchMeta.from_gst_buffer(buf)
        frames = batch.frames
        assert 1 <= len(frames) <= sources
        assert len({f.batch_id for f in frames}) == len(frames) and all(f.batch_id < sources for f in frames)
        assert len({f.source_id for f in frames}) == len(frames)  # one frame meta per source in a batch
        n = 0
        for frame in frames:
            for info, obb in readback.pairs(frame):
                n += 1
                assert obb.source == "user_meta" and not info.tracked
                left, top, width, height = info.rect  # the tight AABB, clipped, in the batched surface's pixels
                assert 0 <= left and left + width <= frame.source_width + 1e-3
                assert 0 <= top and top + height <= frame.source_height + 1e-3
        batches.append((len(frames), n))

    errors = buffer_probe(p.get_by_name("out"), "sink", check)
    outcome = run(p, timeout_s=120)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert sum(f for f, _ in batches) == 30 * sources and max(f for f, _ in batches) == sources
    assert sum(n for _, n in batches) > 0  # the toy detector finds the balls
