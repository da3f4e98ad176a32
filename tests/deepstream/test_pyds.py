"""NVIDIA's pyds reads the objects obbinfer writes field for field as obbmeta's reader does (DeepStream machine
with the pyds wheel; skipped elsewhere). pyds 1.2.0 has no ``rotation_angle``: the rotated box is obbmeta's user
meta, read with obbmeta.nvds.read_obbs or obbmeta.nvds.pyds_bridge."""
from __future__ import annotations

import pytest
import readback
from pipelines import buffer_probe, run

from . import install
from .pipelines_ds import INFER, muxed_sources


def test_pyds_reads_obbinfers_objects_as_obbmeta_does(ds_gst):
    pyds = pytest.importorskip("pyds", reason="NVIDIA's pyds wheel is not installed")
    install.require_element(ds_gst, "nvstreammux", "libnvdsgst_multistream.so")
    install.require_element(ds_gst, "nvvideoconvert", "libnvdsgst_nvvideoconvert.so")
    pytest.importorskip("torch").cuda.is_available() or pytest.skip("obbinfer device=cuda needs a CUDA device")
    from obbmeta import nvds

    p = ds_gst.parse_launch(f"{muxed_sources(2, 20)} ! {INFER} ! fakesink name=out")
    seen = []

    def check(buf):
        batch = pyds.gst_buffer_get_nvds_batch_meta(hash(buf))
        ours = {(f.source_id, f.batch_id): f for f in nvds.BatchMeta.from_gst_buffer(buf).frames}
        node = batch.frame_meta_list
        while node is not None:
            frame = pyds.NvDsFrameMeta.cast(node.data)
            objects, obj_node = [], frame.obj_meta_list
            while obj_node is not None:
                o = pyds.NvDsObjectMeta.cast(obj_node.data)
                r = o.rect_params
                objects.append((o.class_id, o.object_id, o.confidence, o.obj_label, o.unique_component_id,
                                (r.left, r.top, r.width, r.height)))
                obj_node = obj_node.next
            mine = [(i.class_id, i.object_id, i.confidence, i.label, i.component_id, i.rect)
                    for i, _ in readback.pairs(ours[frame.source_id, frame.batch_id])]
            assert [o[:2] + (pytest.approx(o[2]),) + o[3:5] for o in objects] == [
                m[:2] + (pytest.approx(m[2]),) + m[3:5] for m in mine]
            assert [pytest.approx(o[5]) for o in objects] == [m[5] for m in mine]
            assert frame.bInferDone
            seen.append(len(objects))
            node = node.next

    errors = buffer_probe(p.get_by_name("out"), "sink", check)
    outcome = run(p, timeout_s=120)
    assert outcome.eos and not errors, (outcome, errors[:1])
    assert len(seen) == 40 and sum(seen) > 0
