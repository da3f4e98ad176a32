"""NvDsInferTensorMeta as nvinfer's output-tensor-meta attaches it, read back through NVIDIA's libnvds_meta lists
with byte offsets worked out from the public headers (gstnvdsinfer.h, nvdsinfer.h; LP64), copied and released by
NVIDIA's own functions."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from obbmeta import nvds
from obbmeta.nvds import tensors

from . import raw

# NvDsInferTensorMeta: unique_id 0, num_output_layers 4, output_layers_info 8, out_buf_ptrs_host 16,
# out_buf_ptrs_dev 24, gpu_id 32, priv_data 40, network_info 48 (width, height, channels), maintain_aspect_ratio 60,
# symmetric_padding 64. NvDsInferLayerInfo (72 bytes): dataType 0, inferDims 4 (numDims, d[8], numElements: 40
# bytes), bindingIndex 44, layerName 48, buffer 56, isInput 64.
TENSOR_META = 12
LAYER_SIZE = 72


def tensor_metas(user_list_head: int) -> list[int]:
    out = []
    node = user_list_head
    while node:
        um = raw.ptr(node)
        if raw.i32(um + raw.BASE_TYPE) == TENSOR_META:
            out.append(raw.ptr(um + raw.USER["user_meta_data"]))
        node = raw.ptr(node + 8)
    return out


def read(meta: int) -> dict:
    n = raw.u32(meta + 4)
    layers = []
    for i in range(n):
        info = raw.ptr(meta + 8) + i * LAYER_SIZE
        dims = [raw.u32(info + 8 + 4 * k) for k in range(raw.u32(info + 4))]
        count = raw.u32(info + 40)
        host = raw.ptr(raw.ptr(meta + 16) + 8 * i)
        dtype = {0: np.float32, 1: np.float16, 3: np.int32, 4: np.int64, 5: np.uint8}[raw.i32(info)]
        data = np.frombuffer(ctypes.string_at(host, count * np.dtype(dtype).itemsize), dtype).reshape(dims)
        layers.append(dict(name=ctypes.string_at(raw.ptr(info + 48)).decode(), dims=dims, data=data.copy(),
                           binding=raw.i32(info + 44), is_input=raw.i32(info + 64), buffer=raw.ptr(info + 56),
                           host=host, dev=raw.ptr(raw.ptr(meta + 24) + 8 * i)))
    return dict(unique_id=raw.u32(meta), gpu_id=raw.i32(meta + 32), priv=raw.ptr(meta + 40),
                network=(raw.u32(meta + 48), raw.u32(meta + 52), raw.u32(meta + 56)),
                maintain=raw.i32(meta + 60), symmetric=raw.i32(meta + 64), layers=layers)


def layers_of_frame(frame_address: int) -> list[dict]:
    return [read(m) for m in tensor_metas(raw.ptr(frame_address + raw.FRAME["frame_user_meta_list"]))]


@pytest.fixture
def filled(make_batch):
    batch = make_batch(max_frames=3, frames=3)
    rng = np.random.default_rng(0)
    head = rng.random((3, 20, 16)).astype(np.float32)
    half = rng.random((3, 4)).astype(np.float16)
    ids = np.arange(3 * 5, dtype=np.int64).reshape(3, 5)
    tensors.attach_tensor_outputs(batch, batch.frames, [("output0", head), ("scores/half", half), ("ids", ids)],
                                  unique_id=7, network=(640, 384, 3), gpu_id=1, maintain_aspect_ratio=True,
                                  device_addresses=[[1000 + 10 * j + i for i in range(3)] for j in range(3)],
                                  handle=42)
    return batch, (head, half, ids)


def test_each_frame_gets_its_slice_of_every_layer_in_nvidias_layout(filled):
    batch, arrays = filled
    for j, f in enumerate(batch.frames):
        (m,) = layers_of_frame(f.address)
        assert (m["unique_id"], m["gpu_id"], m["network"], m["maintain"], m["symmetric"]) == (7, 1, (640, 384, 3),
                                                                                              1, 0)
        assert [la["name"] for la in m["layers"]] == ["output0", "scores/half", "ids"]
        assert [la["dims"] for la in m["layers"]] == [[20, 16], [4], [5]]
        assert [la["binding"] for la in m["layers"]] == [0, 1, 2] and not any(la["is_input"] for la in m["layers"])
        for la, a in zip(m["layers"], arrays):
            assert np.array_equal(la["data"], a[j]) and la["buffer"] == la["host"]
        assert [la["dev"] for la in m["layers"]] == [1000 + 10 * j + i for i in range(3)]


def test_obbmetas_reader_agrees_with_the_raw_offsets(filled):
    batch, _ = filled
    for f in batch.frames:
        (ours,) = tensors.read_tensor_outputs(f)
        (theirs,) = layers_of_frame(f.address)
        assert ours.network == theirs["network"] and ours.unique_id == theirs["unique_id"]
        assert all(np.array_equal(a.data, b["data"]) and a.name == b["name"] for a, b in zip(ours.layers,
                                                                                         theirs["layers"]))


def test_nvidias_batch_copy_shares_the_data_and_the_last_release_frees_it(lib, filled):
    batch, arrays = filled
    tensors.released_handles()  # what earlier tests' batches released
    before = tensors.live_tensor_metas()
    copy = lib.nvds_batch_meta_copy_func(batch.address, None)
    assert tensors.live_tensor_metas() == before + 3
    for f_orig, f_copy in zip(raw.frames_of(batch.address), raw.frames_of(copy)):
        (a,), (b,) = layers_of_frame(f_orig), layers_of_frame(f_copy)
        assert b["priv"] == a["priv"]  # shallow: the shared block, as nvinfer's copy_func
        assert all(x["host"] == y["host"] and np.array_equal(x["data"], y["data"]) for x, y in zip(a["layers"],
                                                                                                   b["layers"]))
    lib.nvds_batch_meta_release_func(copy, None)
    assert tensors.live_tensor_metas() == before
    assert tensors.released_handles() == []  # the originals still hold the handle
    batch.destroy()
    assert tensors.live_tensor_metas() == before - 3
    assert tensors.released_handles() == [42] * 3  # once per frame the handle was attached to


def test_a_released_user_meta_leaves_nothing_of_ours_in_the_pool(lib, make_batch):
    batch = make_batch(max_frames=1, frames=1)
    (um,) = tensors.attach_tensor_outputs(batch, batch.frames, [("o", np.zeros((1, 3), np.float32))], unique_id=1,
                                          network=(8, 8, 3))
    (f,) = batch.frames
    clear = lib.nvds_clear_frame_user_meta_list
    clear.argtypes, clear.restype = [ctypes.c_void_p, ctypes.c_void_p], None
    clear(f.address, raw.ptr(f.address + raw.FRAME["frame_user_meta_list"]))
    assert raw.ptr(um + raw.USER["user_meta_data"]) == 0 and raw.ptr(um + raw.BASE_COPY) == 0
    assert raw.i32(um + raw.BASE_TYPE) == raw.NVDS_USER_META


def test_object_tensor_metas_go_on_the_objects_user_list(make_batch):
    batch = make_batch(max_frames=1, frames=1)
    (f,) = batch.frames
    res = nvds.attach_obbs(batch, f, xywhr=np.array([[20, 20, 10, 5, 0.3], [40, 30, 8, 8, 0.0]], np.float32),
                           scores=np.array([0.9, 0.8], np.float32), labels=np.array([0, 1]))
    logits = np.arange(2 * 4, dtype=np.float32).reshape(2, 4)
    tensors.attach_tensor_outputs(batch, [int(a) for a in res.addresses], [("logits", logits)], unique_id=3,
                                  network=(224, 224, 3), to_objects=True)
    for k, obj in enumerate(res.addresses):
        (m,) = [read(x) for x in tensor_metas(raw.ptr(int(obj) + raw.OBJ["obj_user_meta_list"]))]
        assert m["unique_id"] == 3 and np.array_equal(m["layers"][0]["data"], logits[k])
        (ours,) = tensors.read_object_tensor_outputs(batch, int(obj))
        assert np.array_equal(ours.layers[0].data, logits[k])


@pytest.mark.parametrize("layers,match", [
    ([], "1 to 64"),
    ([("a", np.zeros((2, 3), np.float32))], "first dimension must be the 1 targets"),
    ([("a", np.zeros((1, 3), np.complex64))], "no NvDsInferDataType"),
    ([("a", np.zeros((1,) + (1,) * 9, np.float32))], "NvDsInferDims holds 8"),
])
def test_bad_layers_are_refused_by_name(make_batch, layers, match):
    batch = make_batch(max_frames=1, frames=1)
    with pytest.raises((ValueError, TypeError), match=match):
        tensors.attach_tensor_outputs(batch, batch.frames, layers, unique_id=1, network=(1, 1, 1))
