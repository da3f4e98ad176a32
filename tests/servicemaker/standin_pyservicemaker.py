"""TEST-ONLY stand-in for pyservicemaker (DeepStream Service Maker for Python), which cannot be installed here.

It exposes the part of pyservicemaker's Python surface that obbmeta.servicemaker uses, with pyservicemaker's names
(reference: deepstream-metadata.md §1.2-§1.7, from the 9.2 binding sources and the 8.0 samples), working on NVIDIA's
real libnvds_meta through obbmeta.nvds' struct layouts: ``BatchMetadataOperator``, ``osd.Color`` / ``osd.Line``,
``BatchMetadata`` (``frame_items``, ``acquire_object_meta``, ``acquire_display_meta``), ``FrameMetadata``
(``frame_number``, ``source_id``, ``pipeline_width/height``, ``source_width/height``, ``object_items``,
``append``), ``ObjectMetadata`` (``class_id``, ``confidence``, ``object_id``, ``unique_component_id``, ``label``,
``rect_params`` written through), ``DisplayMetadata.add_line`` (drops the 17th element silently, as the real
one does). Never used by obbmeta itself.
"""
from __future__ import annotations

import ctypes
import types

from obbmeta.nvds import _core, layouts


class BatchMetadataOperator:
    def __init__(self):
        pass

    def handle_metadata(self, batch_meta):  # overridden by subclasses
        raise NotImplementedError


class Color:
    def __init__(self, r=0.0, g=0.0, b=0.0, a=0.0):
        self.r, self.g, self.b, self.a = r, g, b, a


class Line:
    def __init__(self):
        self.x1 = self.y1 = self.x2 = self.y2 = self.width = 0
        self.color = Color()


osd = types.SimpleNamespace(Color=Color, Line=Line)


class _Rect:
    """NvOSD_RectParams by reference (pyservicemaker returns rect_params by reference: writes go through)."""

    def __init__(self, struct):
        object.__setattr__(self, "_s", struct)

    def __getattr__(self, name):
        if name == "rotation_angle" and not _core.get().layout.has_rotation_angle:
            raise AttributeError(name)  # 8.0 has no such field
        return getattr(self._s, name)

    def __setattr__(self, name, value):
        if name == "border_color":
            c = self._s.border_color
            c.red, c.green, c.blue, c.alpha = value.r, value.g, value.b, value.a
        else:
            setattr(self._s, name, value)


class ObjectMetadata:
    def __init__(self, address):
        self._m = _core.get().layout.object_meta.from_address(address)
        self.address = address

    class_id = property(lambda s: s._m.class_id, lambda s, v: setattr(s._m, "class_id", v))
    confidence = property(lambda s: s._m.confidence, lambda s, v: setattr(s._m, "confidence", v))
    object_id = property(lambda s: s._m.object_id, lambda s, v: setattr(s._m, "object_id", v))
    unique_component_id = property(lambda s: s._m.unique_component_id,
                                   lambda s, v: setattr(s._m, "unique_component_id", v))
    rect_params = property(lambda s: _Rect(s._m.rect_params))

    @property
    def label(self):
        return bytes(self._m.obj_label).split(b"\0", 1)[0].decode("utf-8")

    @label.setter
    def label(self, value: str):
        raw = value.encode("utf-8")
        if len(raw) > 127:
            raise ValueError("the real setter overflows obj_label at 128 bytes")
        ctypes.memmove(ctypes.addressof(self._m) + type(self._m).obj_label.offset, raw + b"\0", len(raw) + 1)


class DisplayMetadata:
    def __init__(self, address):
        self._m = _core.get().layout.display_meta.from_address(address)
        self.address = address

    n_lines = property(lambda s: s._m.num_lines)

    def add_line(self, line):
        if self._m.num_lines >= 16:
            return  # DisplayMetadata::add returns false; the Python binding drops that result
        p = self._m.line_params[self._m.num_lines]
        p.x1, p.y1, p.x2, p.y2, p.line_width = line.x1, line.y1, line.x2, line.y2, line.width
        p.line_color.red, p.line_color.green, p.line_color.blue, p.line_color.alpha = \
            line.color.r, line.color.g, line.color.b, line.color.a
        self._m.num_lines += 1


class FrameMetadata:
    def __init__(self, address):
        self._h = layouts.FrameMetaHead.from_address(address)
        self.address = address

    frame_number = property(lambda s: s._h.frame_num)
    source_id = property(lambda s: s._h.source_id)
    batch_id = property(lambda s: s._h.batch_id)
    pipeline_width = property(lambda s: s._h.pipeline_width)
    pipeline_height = property(lambda s: s._h.pipeline_height)
    source_width = property(lambda s: s._h.source_frame_width)
    source_height = property(lambda s: s._h.source_frame_height)

    @property
    def object_items(self):
        node = self._h.obj_meta_list
        while node:
            yield ObjectMetadata(node.contents.data)
            node = node.contents.next

    def append(self, item):
        m = _core.get().libs.meta
        if isinstance(item, ObjectMetadata):
            m.nvds_add_obj_meta_to_frame(self.address, item.address, None)  # parent is always NULL
        elif isinstance(item, DisplayMetadata):
            m.nvds_add_display_meta_to_frame(self.address, item.address)
        else:
            raise TypeError("Invalid type for FrameMetadata.append")


class BatchMetadata:
    def __init__(self, address):
        self.address = address

    @property
    def n_frames(self):
        return layouts.BatchMetaHead.from_address(self.address).num_frames_in_batch

    @property
    def frame_items(self):
        node = layouts.BatchMetaHead.from_address(self.address).frame_meta_list
        while node:
            yield FrameMetadata(node.contents.data)
            node = node.contents.next

    def acquire_object_meta(self):  # no defaults applied: object_id stays 0 (as in 9.2's metadata.cpp)
        return ObjectMetadata(_core.get().libs.meta.nvds_acquire_obj_meta_from_pool(self.address))

    def acquire_display_meta(self):
        return DisplayMetadata(_core.get().libs.meta.nvds_acquire_display_meta_from_pool(self.address))
