"""TEST-ONLY stand-in for pyds (NVIDIA's deepstream_python_apps bindings), which cannot be installed here.

It has only the names obbmeta.nvds.pyds_bridge uses, with pyds' signatures (checked against pyds-stubs 1.2.2 in
test_pyds_bridge.py), working on real addresses in NVIDIA's real libnvds_meta: ``get_ptr(obj) -> int`` and
``<Struct>.cast(int)``. Never used by obbmeta itself.
"""
from __future__ import annotations

from obbmeta.nvds import _core, layouts


class _Struct:
    def __init__(self, address: int):
        self._address = address

    @classmethod
    def cast(cls, self: int):  # pyds-stubs: ``def cast(self: int) -> NvDsObjectMeta`` (a static overload)
        if not isinstance(self, int):
            raise TypeError(f"cast(): incompatible function arguments ({type(self).__name__})")
        return cls(self)


class NvDsBatchMeta(_Struct):
    pass


class NvDsFrameMeta(_Struct):
    @property
    def frame_num(self) -> int:
        return layouts.FrameMetaHead.from_address(self._address).frame_num


class NvDsObjectMeta(_Struct):
    @property
    def class_id(self) -> int:
        t = _core.get().layout.object_meta
        return t.from_address(self._address).class_id


class NvDsUserMeta(_Struct):
    pass


def get_ptr(ptr) -> int:  # pyds-stubs: ``def get_ptr(ptr: typing.Any) -> int``
    return ptr._address
