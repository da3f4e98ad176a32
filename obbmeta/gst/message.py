"""``obbmessage``: per frame, the objects and their rotated boxes for nvmsgconv.

Put it after ``obbinfer`` (and nvtracker, so the ids are tracking ids) and before ``nvmsgconv``. ``payload`` chooses
what it attaches to every frame meta:

* ``blob`` (default, for ``msg2p-newapi=1``): one ``NVDS_CUSTOM_MSG_BLOB`` user meta (``NvDsCustomMsgInfo``) holding
  :func:`obbmeta.nvds.messages.obb_message_json` of the frame, which nvmsgconv puts in its payload's
  ``"customMessage"`` array;
* ``event`` (for ``msg2p-newapi=0``): one ``NVDS_EVENT_MSG_META`` user meta per object
  (:func:`obbmeta.nvds.messages.attach_obb_events`), the rotated box in ``objSignature``;
* ``both``.

Frames are not touched: any caps pass. Schema: docs/messages.md.
"""
from __future__ import annotations

from typing import Any

from ._element import ObbmetaElement, one_of
from ._gi import Gst

PAYLOADS = ("blob", "event", "both")


def _check_meta_type(value: Any) -> int:
    from ..nvds.messages import check_meta_type

    return check_meta_type(value)


class ObbMessage(ObbmetaElement):
    element_name = "obbmessage"
    gtype_name = "GstObbMessage"
    long_name = "obbmeta oriented-box messages"
    klass = "Filter/Metadata"
    description = ("Attaches every frame's objects with their rotated boxes for nvmsgconv: an NVDS_CUSTOM_MSG_BLOB "
                   "JSON message (msg2p-newapi=1) and / or NvDsEventMsgMeta per object (msg2p-newapi=0)")
    debug_description = "obbmeta oriented-box messages for nvmsgconv"
    property_specs = {
        "meta-type": (int, "meta type", "NvDsMetaType of the blob: 0 = NVDS_CUSTOM_MSG_BLOB, what nvmsgconv reads "
                      "($OBBMETA_CUSTOM_MSG_BLOB_TYPE, else counted in the installed nvdsmeta.h, else 29: 28 in "
                      "DeepStream 7.0, 29 in 8.0 and 9.x); or that value, or a user meta type >= 8193 "
                      "(NVDS_START_USER_META) for a reader of your own. Types DeepStream reserves are refused",
                      0, 0x7FFFFFFF, 0),
        "skip-empty": (bool, "skip empty", "attach no blob to frames without objects", False),
        "payload": (str, "payload", "what to attach per frame: blob (NVDS_CUSTOM_MSG_BLOB JSON, msg2p-newapi=1), "
                    "event (one NVDS_EVENT_MSG_META per object, rotated box in objSignature, msg2p-newapi=0) or "
                    "both", "blob"),
    }
    _checks = {"meta-type": lambda v: v if v == 0 else _check_meta_type(v), "payload": one_of(*PAYLOADS)}

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
        payload = self.prop("payload")
        for frame in batch.frames:
            if payload != "blob":
                messages.attach_obb_events(batch, frame)  # no objects, no events
            if payload == "event" or (self.prop("skip-empty") and frame.num_obj_meta == 0):
                continue
            messages.attach_obb_message(batch, frame, meta_type=kind)
        return Gst.FlowReturn.OK
