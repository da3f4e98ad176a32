"""obbmeta <-> pyds: the bridge uses only pyds names that exist with those signatures (pyds-stubs 1.2.2), and with
a stand-in on real addresses every object, user meta and frame maps both ways to the same NvDsBatchMeta memory."""
from __future__ import annotations

import ast
import importlib.metadata
import re
import sys

import numpy as np
import pytest
import readback

from obbmeta import nvds
from obbmeta.nvds import pyds_bridge

from . import pyds_standin


def stub_tree():
    try:
        stub = importlib.metadata.distribution("pyds-stubs").locate_file("pyds-stubs/stub.pyi")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("pyds-stubs is not installed (requirements/stubs.txt)")
    text = open(stub, encoding="utf-8").read()
    # Python 3.12 ``type X = ...`` aliases: not needed here, and not parseable by older Pythons
    return ast.parse(re.sub(r"(?m)^type ", "# type ", text))


def test_the_pyds_names_the_bridge_uses_exist_in_pyds_with_those_signatures():
    tree = stub_tree()
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    get_ptr = functions["get_ptr"]
    assert [a.arg for a in get_ptr.args.args] == ["ptr"] and ast.unparse(get_ptr.returns) == "int"
    assert [ast.unparse(a.annotation) for a in functions["gst_buffer_get_nvds_batch_meta"].args.args] == ["int"]
    for name in ("NvDsObjectMeta", "NvDsFrameMeta", "NvDsBatchMeta", "NvDsUserMeta"):
        casts = [n for n in classes[name].body if isinstance(n, ast.FunctionDef) and n.name == "cast"]
        # an overload that takes the address as an int and returns the struct
        assert any([ast.unparse(a.annotation) for a in c.args.args] == ["int"] and ast.unparse(c.returns) == name
                   for c in casts), name
        assert getattr(pyds_standin, name).cast  # the stand-in offers the same entry point
    assert "class_id" in ast.unparse(classes["NvDsObjectMeta"])  # the field the test reads through the stand-in


@pytest.fixture
def pyds(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyds", pyds_standin)
    return pyds_standin


@pytest.fixture
def written(make_batch):
    batch = make_batch(max_frames=2, frames=2, width=640, height=480)
    boxes = np.array([[100, 100, 40, 20, 0.4], [300, 200, 60, 30, -1.0], [500, 50, 20, 20, 0.0]], np.float32)
    nvds.attach_obbs(batch, batch.frames[1], xywhr=boxes, labels=np.array([2, 0, 1]), class_names=["a", "b", "c"])
    return batch


def same_obb(got, row) -> bool:
    """obb_of_object's one-row OrientedBoxes is the object read_boxes read (the box, corners, flags, score, class)."""
    return (got is not None and got.is_numpy and len(got) == 1 and got.xywhr[0].tolist() == list(row.xywhr)
            and got["corners"][0].tolist() == [list(c) for c in row.corners] and got["flags"].tolist() == [row.flags]
            and got.scores.tolist() == [row.confidence] and got.labels.tolist() == [row.class_id]
            and got["address"].tolist() == [row.address] and got["source"].tolist() == [0])


def test_every_object_maps_to_pyds_and_back_with_its_obb(pyds, written):
    rows = readback.pairs(written.frames[1])
    assert len(rows) == 3
    for info, obb in rows:
        obj = pyds_bridge.to_pyds(info.address)
        assert isinstance(obj, pyds.NvDsObjectMeta) and pyds.get_ptr(obj) == info.address
        assert obj.class_id == info.class_id
        assert same_obb(pyds_bridge.obb_of_object(obj), obb)  # read through pyds' object, equal to read_boxes


def test_a_pyds_batch_and_frame_read_the_same_objects(pyds, written):
    pb = pyds.NvDsBatchMeta.cast(written.address)   # what pyds.gst_buffer_get_nvds_batch_meta returns
    batch = pyds_bridge.batch_from_pyds(pb)
    assert batch.address == written.address and not batch.owned
    pf = pyds.NvDsFrameMeta.cast(written.frames[1].address)
    frame = pyds_bridge.frame_from_pyds(pf, pb)
    assert frame == written.frames[1] and pf.frame_num == frame.frame_number == 1
    assert readback.pairs(frame) == readback.pairs(written.frames[1])
    assert pyds_bridge.to_pyds(frame, "NvDsFrameMeta").frame_num == 1


def test_user_metas_other_than_obbmetas_give_none(pyds, written, lib):
    um = lib.nvds_acquire_user_meta_from_pool(written.address)
    from obbmeta.nvds import layouts

    u = layouts.UserMeta.from_address(um)
    u.base_meta.meta_type, u.user_meta_data = nvds.obb_meta_type() + 1, None
    assert pyds_bridge.obb_of_user_meta(pyds.NvDsUserMeta.cast(um)) is None
    (info, obb), *_ = readback.pairs(written.frames[1])
    assert same_obb(pyds_bridge.obb_of_object(info.address), obb)
    from . import raw

    (payload,) = raw.user_metas_of(info.address)  # obbmeta's own user meta: the box, no score or class
    alone = pyds_bridge.obb_of_user_meta(pyds.NvDsUserMeta.cast(payload))
    assert alone.xywhr[0].tolist() == list(obb.xywhr) and np.isnan(alone.scores[0]) and alone.labels.tolist() == [-1]
    assert alone["corners"][0].tolist() == [list(c) for c in obb.corners] and alone["address"].tolist() == [0]


def test_an_object_without_obb_gives_none_and_bad_input_names_what_was_expected(pyds, written, lib):
    obj = lib.nvds_acquire_obj_meta_from_pool(written.address)
    lib.nvds_add_obj_meta_to_frame(written.frames[0].address, obj, None)
    assert pyds_bridge.obb_of_object(pyds.NvDsObjectMeta.cast(obj)) is None
    with pytest.raises(ValueError, match="positive address"):
        pyds_bridge.address(0)
    with pytest.raises(ValueError, match="kind must be"):
        pyds_bridge.to_pyds(obj, "NvDsDisplayMeta")


def test_without_pyds_the_error_says_where_it_comes_from(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyds", None)
    with pytest.raises(ImportError, match="deepstream_python_apps"):
        pyds_bridge.to_pyds(1234)
