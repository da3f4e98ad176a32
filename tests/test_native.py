"""obbmeta._native.NativeLibrary: every compiled library is declared once, loaded once, and refused with a message that
names it, the ABI expected and found, and the fix when it was built from other sources than the Python code."""
from __future__ import annotations

import ctypes
import dataclasses
import threading
import types
import warnings

import pytest

from obbmeta import _cuda_lib, _native, geometry
from obbmeta.nvds import _core as nvds_core
from obbmeta.nvds import messages as nvds_messages
from obbmeta.nvds import tensors as nvds_tensors
from obbmeta.ops import _core as ops_core
from obbmeta.osd import draw

LIBRARIES = [geometry.GEOMETRY, ops_core.CROP, draw.DRAW, nvds_core.NVDS_META, nvds_messages.NVDS_MESSAGE,
             nvds_tensors.NVDS_TENSOR]
REBUILD = r"rebuild it: `pip install -e \.` in a checkout"


@pytest.mark.parametrize("library", LIBRARIES, ids=lambda lib: lib.module)
def test_every_library_loads_and_agrees_with_its_python_mirrors(library):
    lib = library.open()  # a fresh handle: the ABI, every declared function and the C table are checked now
    assert library.status() == ("loaded", str(library.path()))
    for name, (restype, argtypes) in library.functions.items():
        assert getattr(lib, name).restype is restype and getattr(lib, name).argtypes == list(argtypes)


@pytest.mark.parametrize("library", [lib for lib in LIBRARIES if lib.table_function], ids=lambda lib: lib.module)
def test_the_c_table_reports_the_size_of_every_mirrored_struct(library):
    table = library._table(library.load(), library.path())
    for c_name, mirror in library.structs.items():
        assert table[c_name] == ctypes.sizeof(mirror)
    assert set(library.constants) <= set(table)


def test_a_stale_abi_is_refused_with_the_library_the_versions_and_the_fix():
    stale = dataclasses.replace(geometry.GEOMETRY, abi=99)
    with pytest.raises(_native.StaleLibraryError,
                       match=r"compiled C geometry core \(.*_geometry.*\) does not match this obbmeta: this Python "
                             rf"code needs ABI 99, the library reports ABI {geometry.GEOMETRY.abi} "
                             r"\(obbmeta_geometry_abi_version\); "
                             + REBUILD):
        stale.load()
    assert stale.status()[0] == "stale"
    assert issubclass(_native.StaleLibraryError, ImportError)  # callers that catch ImportError keep working


def test_the_abi_function_s_answer_is_what_is_compared():
    lib = types.SimpleNamespace(obbmeta_draw_abi_version=lambda: 0)  # as if the library were built from old sources
    with pytest.raises(_native.StaleLibraryError, match="needs ABI 1, the library reports ABI 0"):
        draw.DRAW.check_abi(lib, draw.DRAW.path())


def test_a_library_older_than_its_abi_function_is_stale():
    older = dataclasses.replace(draw.DRAW, abi_function="obbmeta_draw_abi_version_of_the_future")
    with pytest.raises(_native.StaleLibraryError, match="it has no function obbmeta_draw_abi_version_of_the_future"):
        older.open()


def test_a_missing_library_names_the_module_and_the_fix():
    missing = dataclasses.replace(draw.DRAW, module="_not_built")
    with pytest.raises(_native.MissingLibraryError, match=r"'obbmeta\._not_built' was not found in .*; " + REBUILD):
        missing.load()
    assert missing.status()[0] == "missing"


class _Swapped(ctypes.Structure):
    """obb_crop_frame with height and width swapped: the same size, so only the offsets tell."""
    _fields_ = [("data", ctypes.c_uint64), ("stride_y", ctypes.c_int64), ("stride_x", ctypes.c_int64),
                ("stride_c", ctypes.c_int64), ("width", ctypes.c_int32), ("height", ctypes.c_int32),
                ("channels", ctypes.c_int32), ("reserved", ctypes.c_int32)]


class _Longer(ctypes.Structure):
    _fields_ = ops_core.CropParams._fields_ + [("extra", ctypes.c_int32)]


def test_a_struct_mirror_of_another_size_is_refused():
    drifted = dataclasses.replace(ops_core.CROP, structs={"obb_crop_params": _Longer})
    size = ctypes.sizeof(ops_core.CropParams)
    with pytest.raises(_native.StaleLibraryError,
                       match=rf"sizeof\(obb_crop_params\) is {size} in C, {size + 4} in .*_Longer"):
        drifted.open()


def test_a_reordered_struct_mirror_of_the_same_size_is_refused_by_its_offsets():
    assert ctypes.sizeof(_Swapped) == ctypes.sizeof(ops_core.CropFrame)
    drifted = dataclasses.replace(ops_core.CROP, structs={"obb_crop_frame": _Swapped})
    with pytest.raises(_native.StaleLibraryError, match=r"offsetof\(obb_crop_frame\.height\) is 32 in C, 36 in"):
        drifted.open()


def test_a_struct_the_c_side_does_not_report_is_refused():
    drifted = dataclasses.replace(draw.DRAW, structs={"obb_draw_nothing": _Swapped}, table_function=None)
    drifted.open()  # without a table nothing is compared
    drifted = dataclasses.replace(ops_core.CROP, structs={"obb_crop_nothing": _Swapped})
    with pytest.raises(_native.StaleLibraryError, match=r"it does not report sizeof\(obb_crop_nothing\)"):
        drifted.open()


def test_the_crop_reason_codes_are_the_c_ones():
    drifted = dataclasses.replace(ops_core.CROP, constants={**ops_core.CROP.constants, "OBB_CROP_BAD_FRAME": 4})
    with pytest.raises(_native.StaleLibraryError, match="OBB_CROP_BAD_FRAME is 3 in C, 4 in Python"):
        drifted.open()


def test_a_library_is_opened_once_by_concurrent_first_calls(monkeypatch):
    library = dataclasses.replace(draw.DRAW)
    opened = []
    real_open = library.open

    def counting_open():
        opened.append(1)
        return real_open()

    object.__setattr__(library, "open", counting_open)
    start = threading.Barrier(8)
    got = []

    def first_call():
        start.wait()
        got.append(library.load())

    threads = [threading.Thread(target=first_call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(opened) == 1 and len(got) == 8 and all(lib is got[0] for lib in got)


# ---- the CUDA kernels: optional, so a missing build falls back to the host code; a stale one says so

@pytest.fixture
def cuda_spec(monkeypatch):
    def use(spec):
        monkeypatch.setattr(_cuda_lib, "CUDA", spec)
        _cuda_lib.cuda_library.cache_clear()

    yield use
    _cuda_lib.cuda_library.cache_clear()


def test_without_cuda_kernels_the_host_code_is_used_without_a_warning(cuda_spec):
    cuda_spec(dataclasses.replace(_cuda_lib.CUDA, module="_cuda_not_built"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _cuda_lib.cuda_library() is None
    assert _cuda_lib.cuda_problem() is None


@pytest.mark.skipif(_cuda_lib.CUDA.path() is None, reason="the CUDA kernels were not built (no nvcc at install)")
def test_stale_cuda_kernels_are_not_used_and_say_so_once(cuda_spec):
    built = _cuda_lib.CUDA.abi
    cuda_spec(dataclasses.replace(_cuda_lib.CUDA, abi=99))
    with pytest.warns(_native.StaleLibraryWarning, match=r"CUDA kernels are not used, CUDA tensors run the host "
                                                         rf"code on a copy: .* needs ABI 99, the library reports ABI "
                                                         rf"{built}"):
        assert _cuda_lib.cuda_library() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once: later calls are quiet
        assert _cuda_lib.cuda_library() is None
    assert "needs ABI 99" in _cuda_lib.cuda_problem()


# ---- obbmeta doctor

def test_doctor_reports_a_stale_library_as_stale_and_fails(monkeypatch, capsys):
    from obbmeta import cli

    built = geometry.GEOMETRY.abi
    monkeypatch.setattr(geometry, "GEOMETRY", dataclasses.replace(geometry.GEOMETRY, abi=99))
    assert cli._doctor() == 1
    out = capsys.readouterr().out
    assert "C geometry core: STALE — " in out and f"needs ABI 99, the library reports ABI {built}" in out
    assert "the C geometry core (obbmeta._geometry) is stale (rebuild: pip install -e ." in out
    assert "C crop core: loaded" in out and "C draw core: loaded" in out


@pytest.mark.skipif(_cuda_lib.CUDA.path() is None, reason="the CUDA kernels were not built (no nvcc at install)")
def test_doctor_reports_stale_cuda_kernels_as_a_problem(monkeypatch, capsys, cuda_spec):
    from obbmeta import cli

    cuda_spec(dataclasses.replace(_cuda_lib.CUDA, abi=99))
    assert cli._doctor() == 1
    out = capsys.readouterr().out
    assert "CUDA kernels (obbmeta._cuda): STALE — " in out and "needs ABI 99" in out
    assert "the CUDA kernels (obbmeta._cuda) are there but not usable" in out


def test_a_kernel_launch_on_another_gpu_gives_the_thread_its_device_back(monkeypatch):
    """Fake library and devices (the rule needs no GPU; the two-GPU run is for a machine with two): a launch on
    cuda:1 from a thread whose device is 0 sets 1 for the call, then 0 again, also when the kernel fails; a launch
    on the current device sets it once (binding the library's runtime) and nothing after. Every call is the
    entry point's ``_held`` form (the interpreter lock kept: a launch only queues work)."""
    import types

    import torch

    calls, code = [], [0]

    def kernel(stream):  # the releasing form: never called
        calls.append(("released", stream))
        return 0

    lib = types.SimpleNamespace(obbmeta_cuda_set_device_held=lambda i: calls.append(("set", i)) or 0,
                                obbmeta_cuda_error_string=lambda code: b"an error", kernel=kernel,
                                kernel_held=lambda stream: calls.append(("kernel", stream)) or code[0])
    monkeypatch.setattr(_cuda_lib, "cuda_library", lambda: lib)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(_cuda_lib, "_raw_stream", lambda index: 100 + index)  # each device's current stream
    _cuda_lib.launch(torch.device("cuda", 1), lib.kernel)
    assert calls == [("set", 1), ("kernel", 101), ("set", 0)]
    calls.clear()
    code[0] = 7
    with pytest.raises(RuntimeError, match="obbmeta CUDA kernel failed: an error"):
        _cuda_lib.launch(torch.device("cuda", 1), lib.kernel)
    assert calls == [("set", 1), ("kernel", 101), ("set", 0)]
    calls.clear()
    code[0] = 0
    _cuda_lib.launch(torch.device("cuda", 0), lib.kernel)
    assert calls == [("set", 0), ("kernel", 100)]
    calls.clear()
    _cuda_lib.launch(torch.device("cuda"), lib.kernel)  # no index: the current device's
    assert calls == [("set", 0), ("kernel", 100)]


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_the_launch_stream_is_torchs_current_stream_of_that_device():
    """What launch appends is the stream torch would launch on: the default stream, a side stream inside
    ``torch.cuda.stream``, and during a graph capture the capture stream."""
    import torch

    assert _cuda_lib._raw_stream(0) == torch.cuda.current_stream(0).cuda_stream
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert _cuda_lib._raw_stream(0) == side.cuda_stream != torch.cuda.default_stream(0).cuda_stream
    graph, seen = torch.cuda.CUDAGraph(), []
    with torch.cuda.graph(graph):
        seen.append((_cuda_lib._raw_stream(0), torch.cuda.current_stream(0).cuda_stream))
    assert seen[0][0] == seen[0][1]


def test_every_cuda_entry_point_that_launches_is_bound_held():
    """The CUDA library's launches and size queries keep the interpreter lock: each is in ``CUDA.held`` (checked
    by the loader against the library's symbols where it is built)."""
    launched = {n for n in _cuda_lib.CUDA.functions if n not in ("obbmeta_cuda_error_string",)}
    assert launched <= set(_cuda_lib.CUDA.held) <= set(_cuda_lib.CUDA.functions)
