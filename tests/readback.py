"""The tests' per-object view of what :func:`obbmeta.nvds.read_boxes` reads: one record per object (its
NvDsObjectMeta fields and its oriented box), for assertions object by object and comparisons of whole frames.

``pairs(frame)`` gives ``(row, row)`` per object, so that a test can name the object's fields and its box apart
(``for info, obb in pairs(frame)``); both are the same :class:`Row`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from obbmeta import nvds
from obbmeta.nvds.layouts import SOURCES


@dataclass(frozen=True)
class Row:
    address: int
    object_id: int
    class_id: int
    component_id: int
    confidence: float
    tracker_confidence: float
    label: str
    rect: tuple
    detector_bbox: tuple
    rotation_angle: float
    num_user_meta: int
    tracker_bbox: tuple
    parent: int
    xywhr: tuple
    corners: tuple
    source: str
    flags: int

    @property
    def tracked(self) -> bool:
        return self.object_id != nvds.UNTRACKED_OBJECT_ID

    @property
    def exact(self) -> bool:
        return self.source == "user_meta"


def rows_of(boxes: Any) -> list[Row]:
    """Each row of boxes read back by read_boxes / read_boxes_batch as a Row."""
    d = boxes.data
    out = []
    for k in range(len(boxes)):
        out.append(Row(
            address=int(d["address"][k]), object_id=int(d["object_id"][k]), class_id=int(boxes.labels[k]),
            component_id=int(d["component_id"][k]), confidence=float(boxes.scores[k]),
            tracker_confidence=float(d["tracker_confidence"][k]), label=d["label"][k].decode("utf-8", "replace"),
            rect=tuple(d["rect"][k].tolist()), detector_bbox=tuple(d["detector_bbox"][k].tolist()),
            rotation_angle=float(d["rotation_angle"][k]), num_user_meta=int(d["num_user_meta"][k]),
            tracker_bbox=tuple(d["tracker_bbox"][k].tolist()), parent=int(d["parent"][k]),
            xywhr=tuple(boxes.xywhr[k].tolist()), corners=tuple(map(tuple, d["corners"][k].tolist())),
            source=SOURCES[int(d["source"][k])], flags=int(d["flags"][k])))
    return out


def rows(frame: Any, batch: Any = None) -> list[Row]:
    """The frame's objects (obj_meta_list order) as Rows."""
    return rows_of(nvds.read_boxes(frame, batch))


def pairs(frame: Any, batch: Any = None) -> list[tuple[Row, Row]]:
    """``(row, row)`` per object of the frame: its fields and its box, by the names a test gives them."""
    return [(r, r) for r in rows(frame, batch)]
