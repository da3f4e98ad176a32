"""``obbmessage``: per frame, the objects and their rotated boxes as an nvmsgconv message blob.

Put it after ``obbinfer`` (and nvtracker, so the ids are tracking ids) and before ``nvmsgconv msg2p-newapi=1``: it
attaches to every frame meta one ``NVDS_CUSTOM_MSG_BLOB`` user meta (``NvDsCustomMsgInfo``) holding
:func:`obbmeta.nvds.messages.obb_message_json` of the frame, which nvmsgconv puts in its payload's
``"customMessage"`` array. Frames are not touched: any caps pass. Schema: docs/messages.md.
"""
from __future__ import annotations

from typing import Any

from ._element import PACKED_FORMATS, PLANAR_FORMATS, ObbmetaElement, templates
from ._gi import GObject, Gst

RW = GObject.ParamFlags.READWRITE


def _check_meta_type(value: Any) -> int:
    from ..nvds.messages import check_meta_type

    return check_meta_type(value)


class ObbMessage(ObbmetaElement):
    __gtype_name__ = "GstObbMessage"
    __gstmetadata__ = (
        "obbmeta oriented-box message blob", "Filter/Metadata",
        "Attaches every frame's objects with their rotated boxes as an NVDS_CUSTOM_MSG_BLOB JSON message for "
        "nvmsgconv (msg2p-newapi=1)", "obbmeta")
    __gsttemplates__ = templates(PACKED_FORMATS + PLANAR_FORMATS)
    _specs = {
        "meta-type": (int, "meta type", "NvDsMetaType of the blob: NVDS_CUSTOM_MSG_BLOB, 29 in DeepStream 8.0 and "
                      "9.x headers (0: $OBBMETA_CUSTOM_MSG_BLOB_TYPE or 29)", 0, 4095, 0, RW),
        "skip-empty": (bool, "skip empty", "attach no blob to frames without objects", False, RW),
    }
    __gproperties__ = _specs
    _checks = {"meta-type": lambda v: v if v == 0 else _check_meta_type(v)}

    def start(self) -> None:
        from ..nvds import messages

        messages.custom_msg_blob_type()  # a bad environment variable stops the pipeline at start, with the reason

    def process(self, buf: Gst.Buffer) -> Gst.FlowReturn:
        from .. import nvds
        from ..nvds import messages

        try:
            batch = nvds.BatchMeta.from_gst_buffer(buf)
        except LookupError:
            return Gst.FlowReturn.OK  # nothing upstream wrote metadata: no frames to describe
        kind = self.prop("meta-type") or None
        for frame in batch.frames:
            if self.prop("skip-empty") and frame.num_obj_meta == 0:
                continue
            messages.attach_obb_message(batch, frame, meta_type=kind)
        return Gst.FlowReturn.OK


GObject.type_register(ObbMessage)
