"""A pyds (deepstream_python_apps) pad probe reading obbmeta's rotated boxes, both ways between pyds and obbmeta.

Written for DeepStream 7.1 (pyds 1.2.0) and 8.0 (pyds 1.2.2); DeepStream 9.x has no pyds (use
examples/servicemaker_pipeline.py). It could not run on obbmeta's development machines (no pyds there); the calls
it uses are checked against the pyds-stubs 1.2.2 signatures and a pyds stand-in over NVIDIA's real metadata library
(tests/nvds/test_pyds_bridge.py).

Attach it downstream of obbinfer (and nvtracker): ``pad.add_probe(Gst.PadProbeType.BUFFER, obb_probe, None)``.
"""
import pyds
from gi.repository import Gst

from obbmeta import nvds
from obbmeta.nvds import messages, pyds_bridge


def obb_probe(pad, info, user_data):
    buf = info.get_buffer()
    batch_meta = pyds.gst_buffer_get_nvds_batch_meta(hash(buf))
    batch = pyds_bridge.batch_from_pyds(batch_meta)           # obbmeta's view of the same NvDsBatchMeta
    l_frame = batch_meta.frame_meta_list
    while l_frame is not None:
        frame_meta = pyds.NvDsFrameMeta.cast(l_frame.data)
        frame = pyds_bridge.frame_from_pyds(frame_meta, batch)
        boxes = nvds.read_boxes(frame)                          # obbmeta -> pyds: the same object as pyds sees it
        for address, xywhr in zip(boxes["address"].tolist(), boxes.xywhr.tolist()):
            obj = pyds_bridge.to_pyds(address)
            print(frame_meta.frame_num, obj.object_id, obj.obj_label, [round(v, 1) for v in xywhr])
        l_obj = frame_meta.obj_meta_list                          # pyds -> obbmeta: the OBB of a pyds object
        while l_obj is not None:
            obj_meta = pyds.NvDsObjectMeta.cast(l_obj.data)
            obb = pyds_bridge.obb_of_object(obj_meta)             # one-row OrientedBoxes; None if obbmeta wrote none
            if obb is not None:
                print("  angle", round(float(obb.xywhr[0, 4]), 3), "rad, corners", obb["corners"][0].tolist())
            l_obj = l_obj.next
        messages.attach_obb_message(batch, frame)                 # the frame's JSON for nvmsgconv msg2p-newapi=1
        l_frame = l_frame.next
    return Gst.PadProbeReturn.OK
