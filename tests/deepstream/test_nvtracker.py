"""NVIDIA's nvtracker after obbinfer: matched objects keep obbmeta's OBB user meta and get tracking ids that last
across frames; objects the tracker adds itself carry no OBB (DeepStream machine; skipped elsewhere)."""
from __future__ import annotations

from collections import Counter

import pytest
import readback
from pipelines import buffer_probe, run

from . import install
from .pipelines_ds import INFER, muxed_sources

CONFIGS = ("samples/configs/deepstream-app/config_tracker_IOU.yml",
           "samples/configs/deepstream-app/config_tracker_NvSORT.yml")


@pytest.fixture
def tracker(ds_gst):
    install.require_element(ds_gst, "nvstreammux", "libnvdsgst_multistream.so")
    install.require_element(ds_gst, "nvvideoconvert", "libnvdsgst_nvvideoconvert.so")
    install.require_element(ds_gst, "nvtracker", "libnvdsgst_tracker.so")
    pytest.importorskip("torch").cuda.is_available() or pytest.skip("obbinfer device=cuda needs a CUDA device")
    lib = install.library("libnvds_nvmultiobjecttracker.so")
    config = next((install.root() / c for c in CONFIGS if (install.root() / c).is_file()), None)
    if config is None:
        pytest.skip(f"none of {CONFIGS} is in {install.root()}")
    return ds_gst, f"nvtracker ll-lib-file={lib} ll-config-file={config} tracker-width=320 tracker-height=240"


def test_tracked_objects_keep_their_obb_user_meta_and_their_ids(tracker):
    from obbmeta import nvds

    gst, element = tracker
    p = gst.parse_launch(f"{muxed_sources(1, 60)} ! {INFER} ! {element} ! fakesink name=out")
    ids, kept, added = Counter(), [], []

    def check(buf):
        for frame in nvds.BatchMeta.from_gst_buffer(buf).frames:
            for info, obb in readback.pairs(frame):
                assert info.tracked  # nvtracker removes what it does not track
                ids[info.object_id] += 1
                if info.confidence == pytest.approx(-0.1):  # an object nvtracker made itself: no detector OBB
                    added.append(obb.source)
                else:  # a matched detection: the same object meta, the OBB user meta travels with it
                    kept.append(obb.source)
                    cx, cy = obb.xywhr[:2]
                    left, top, width, height = info.rect  # now the tracker's box
                    assert left - width <= cx <= left + 2 * width and top - height <= cy <= top + 2 * height

    errors = buffer_probe(p.get_by_name("out"), "sink", check)
    outcome = run(p, timeout_s=120)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert kept and set(kept) == {"user_meta"}
    assert "user_meta" not in added
    assert max(ids.values()) >= 20  # the ball keeps one id over many frames
