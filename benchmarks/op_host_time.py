"""Where an eager CUDA op call's time goes, and an A/B of two obbmeta trees on one GPU machine (the anchor: the other
tree, measured alternately in the same session).

    TAG=new python benchmarks/op_host_time.py                         # this checkout, built in place
    TREE=/path/to/other-checkout TAG=old python benchmarks/op_host_time.py
    python benchmarks/op_host_time.py --plot                          # results/op_host_time.png from the JSON

Build the other tree in its folder first (``OBBMETA_CUDA_ARCHS=90 python setup.py -q build_ext --inplace``); run the
two alternately; each call adds one run to results/op_host_time.json. Both trees must have CUDA ABI 8 or later (the C
entry points are called directly, with that ABI's arguments); the runs of 2026-12-04 (ABI 7 against 8) came from
this script's first form.

Per call, medians in microseconds: ``nms_rotated`` on 1 000 clustered boxes (tests/reference.clustered_scene(1000,
seed=1000), IoU 0.5) and ``yolo_obb`` on benchmarks/decode.py's heads at batch 1 and 16 (letterbox 3840x2160 into
1024): the call with the device synced around it (what nms_cuda.py and decode.py time), the padded form, a CUDA-graph
replay (the GPU work alone), host-only times (synced before, not after: the enqueue), CUDA-event spans, the C entry
point alone (nms and decode), and dispatcher pieces (an empty custom_op against an empty Library op, torch.empty,
torch's stream accessors, a 3-tensor cat + tolist); torch.profiler's kernels and runtime calls a call.
"""
from __future__ import annotations

import ctypes
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = Path(os.environ.get("TREE", HERE.parent)).resolve()
sys.path[:0] = [str(ROOT), str(HERE.parent / "tests"), str(HERE)]

import reference  # noqa: E402
import torch  # noqa: E402
from _common import RESULTS, machine  # noqa: E402
from decode import head_output  # noqa: E402

from obbmeta import Letterbox  # noqa: E402
from obbmeta._cuda_lib import cuda_library, sizes  # noqa: E402
from obbmeta._native import ptr as _ptr  # noqa: E402
from obbmeta.decode import yolo_obb, yolo_obb_padded  # noqa: E402
from obbmeta.decode import yolo_padded as yp  # noqa: E402
from obbmeta.decode._head import check_head  # noqa: E402
from obbmeta.ops import _core, nms_rotated, nms_rotated_padded  # noqa: E402
from obbmeta.ops.status import pool_for  # noqa: E402

sync = torch.cuda.synchronize


def med(fn, n=200, warm=20, after=True):
    """Median us of fn with the device synced before each call and, with ``after``, after it (without: fn's host time
    alone, the enqueue)."""
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(n):
        sync()
        t = time.perf_counter()
        fn()
        if after:
            sync()
        ts.append(time.perf_counter() - t)
    sync()
    return round(statistics.median(ts) * 1e6, 2)


def host(fn, n=200, warm=20):
    """Median us of fn's host time alone (synced before, not after: the enqueue)."""
    return med(fn, n, warm, after=False)


def gpu(fn, n=100):
    """Median us between CUDA events recorded around fn (the stream's span, idle gaps included)."""
    for _ in range(10):
        fn()
    ps = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        sync()
        a.record()
        fn()
        b.record()
        ps.append((a, b))
    sync()
    return round(statistics.median([a.elapsed_time(b) for a, b in ps]) * 1e3, 2)


def graph(fn):
    fn()
    sync()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def kernels(fn, label, out):
    """torch.profiler over 10 calls: per kernel and runtime call, [calls a call, mean us]."""
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        fn()
    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(10):
            fn()
        sync()
    names, rt = {}, {}
    for e in p.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            names.setdefault(e.name[:60], []).append(
                e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total)
    for e in p.events():
        if e.name.startswith("cu"):
            rt.setdefault(e.name, []).append(e.cpu_time_total)
    out[label + "_kernels"] = {k: [len(v) / 10, round(sum(v) / len(v), 2)] for k, v in names.items()}
    out[label + "_runtime_calls"] = {k: [len(v) / 10, round(sum(v) / len(v), 2)] for k, v in rt.items()}


def pieces(dev, lib):
    x = torch.empty(8, device=dev)
    row = {
        "torch.empty cuda": host(lambda: torch.empty(1003, dtype=torch.int64, device=dev), 2000),
        "current_device": host(lambda: torch.cuda.current_device(), 2000),
        "current_stream.cuda_stream": host(lambda: torch.cuda.current_stream(dev).cuda_stream, 2000),
        "raw stream": host(lambda: torch._C._cuda_getCurrentRawStream(0), 2000),
        "set_device_held": host(lambda: lib.obbmeta_cuda_set_device_held(0), 2000),
        "sizes cached": host(lambda: sizes(dev, "obbmeta_cuda_nms_sizes", 1000, 0, 0, 1 << 21), 2000),
        "tolist 3 sync": med(lambda: x[:3].tolist(), 2000),
        "custom_op nms n=0": med(lambda: _core.nms_rotated_op(torch.empty(0, 5, device=dev), x[:0], None, 0.5), 500),
    }
    empty = torch.empty(0, device=dev)

    @torch.library.custom_op("op_host_time::noop", mutates_args=())
    def noop(b: torch.Tensor, s: torch.Tensor, labels: Optional[torch.Tensor], t: float) -> torch.Tensor:
        return empty

    @noop.register_fake
    def _(b, s, labels, t):
        return b.new_empty(0)

    plain = torch.library.Library("op_host_time2", "DEF")
    plain.define("noop(Tensor b, Tensor s, Tensor? l, float t) -> Tensor")
    plain.impl("noop", lambda b, s, labels, t: empty, "CUDA")
    b5, s1 = torch.rand(10, 5, device=dev), torch.rand(10, device=dev)
    row["custom_op noop cuda"] = host(lambda: noop(b5, s1, None, 0.5), 2000)
    row["Library noop cuda"] = host(lambda: torch.ops.op_host_time2.noop(b5, s1, None, 0.5), 2000)
    row["check_nms_args"] = host(lambda: _core.check_nms_args(b5, s1, None, 0.5), 2000)
    row["slice"] = host(lambda: b5[3:], 2000)
    row["cat3 tolist"] = med(lambda: torch.cat((s1, s1[:1], s1[:1])).tolist(), 2000)
    return row


def nms_1k(dev, lib, out):
    b, s, _ = (torch.from_numpy(a) for a in reference.clustered_scene(1000, seed=1000))
    bc, sc = b.cuda(), s.cuda()
    pool = pool_for(dev, _core.pool_bound_nms(bc, sc, None))
    ws, _ = sizes(dev, "obbmeta_cuda_nms_sizes", 1000, 0, 0, pool)
    scratch = torch.empty(ws, dtype=torch.uint8, device=dev)
    o = torch.empty(1003, dtype=torch.int64, device=dev)
    stream = torch.cuda.current_stream(dev).cuda_stream
    args = (1000, _ptr(bc), _ptr(sc), 0, None, 0.5, _ptr(scratch), ws, pool, _ptr(o), _ptr(o[1000:]), None,
            ctypes.c_void_p(stream))

    def fn_c():
        return lib.obbmeta_cuda_nms_held(*args)

    rep = graph(lambda: nms_rotated_padded(bc, sc, 0.5))
    out["nms1k_us"] = {
        "eager (synced)": med(lambda: nms_rotated(bc, sc, 0.5)),
        "padded (synced)": med(lambda: nms_rotated_padded(bc, sc, 0.5)),
        "graph replay (synced)": med(rep),
        "C entry synced": med(fn_c),
        "C entry host only": host(fn_c),
        "_nms_cuda host only": host(lambda: _core._nms_cuda(bc, sc, None, 0.5, pool)),
        "padded host only": host(lambda: nms_rotated_padded(bc, sc, 0.5)),
        "gpu events C entry": gpu(fn_c),
        "gpu events graph": gpu(rep),
    }
    kernels(fn_c, "nms1k", out)


def decode(dev, lib, out):
    lb = Letterbox.fit((3840, 2160), (1024, 1024))
    for batch in (1, 16):
        g = head_output(batch).cuda()
        b, c, n = g.shape
        k, pool = min(30000, n), 1 << 21
        ws, _ = sizes(dev, "obbmeta_cuda_yolo_obb_sizes", b, c, n, 0, 0, k, pool)
        scratch = torch.empty(ws, dtype=torch.uint8, device=dev)
        tables = [torch.empty(shape, dtype=dtype, device=dev) for shape, dtype in
                  (((b, 300, 5), torch.float32), ((b, 300), torch.float32), ((b, 300), torch.int64),
                   ((b,), torch.int64), ((), torch.int64), ((), torch.int64))]
        stream = torch.cuda.current_stream(dev).cuda_stream
        args = (_ptr(g), b, c, n, 0, 0, 0.25, 0.5, None, None, None, k, 300, lb.scale, lb.pad_x, lb.pad_y,
                _ptr(scratch), ws, pool, *[_ptr(t) for t in tables], ctypes.c_void_p(stream))

        def fn_c():
            return lib.obbmeta_cuda_yolo_obb_held(*args)

        def op():
            return yp.yolo_obb_padded_op(g, 0.25, 0.5, 300, None, False, False, 30000, lb.scale, lb.pad_x, lb.pad_y,
                                         1 << 21)

        rep = graph(lambda: yolo_obb_padded(g, conf=0.25, iou=0.5, letterbox=lb))
        row = out[f"decode_b{batch}_us"] = {
            "eager (synced)": med(lambda: yolo_obb(g, conf=0.25, iou=0.5, letterbox=lb)),
            "padded (synced)": med(lambda: yolo_obb_padded(g, conf=0.25, iou=0.5, letterbox=lb)),
            "graph (synced)": med(rep),
            "padded host only": host(lambda: yolo_obb_padded(g, conf=0.25, iou=0.5, letterbox=lb)),
            "op host only": host(op),
            "gpu events padded": gpu(lambda: yolo_obb_padded(g, conf=0.25, iou=0.5, letterbox=lb)),
            "gpu events graph": gpu(rep),
            "C entry synced": med(fn_c),
            "C entry host only": host(fn_c),
        }
        row["check_head host"] = host(lambda: check_head(g, 0.25, 0.5, 300, None, lb, 30000, None))
        p = yolo_obb_padded(g, conf=0.25, iou=0.5, letterbox=lb)
        row["unpad (synced)"] = med(lambda: p.unpad())
        print(batch, row, flush=True)
        kernels(op, f"decode_b{batch}", out)


CASES = [("nms1k_us", "nms_rotated, 1 000 boxes"), ("decode_b1_us", "yolo_obb, batch 1"),
         ("decode_b16_us", "yolo_obb, batch 16")]
FORMS = [("eager (synced)", "eager"), ("padded (synced)", "padded"), ("graph (synced)", "graph replay"),
         ("graph replay (synced)", "graph replay")]


def plot(payload) -> Path:
    """Grouped bars: each case's eager / padded / graph-replay medians, one bar per run (tag)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = payload["runs"]
    fig, axes = plt.subplots(1, len(CASES), figsize=(11, 4))
    for ax, (case, title) in zip(axes, CASES):
        forms = [(k, label) for k, label in FORMS if k in runs[0][case]]
        width = 0.8 / len(runs)
        for i, run in enumerate(runs):
            ax.bar([j + i * width for j in range(len(forms))], [run[case][k] for k, _ in forms], width,
                   label=f"{run['tag']} ({run['tree']})" if case == CASES[0][0] else None)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(forms))], [label for _, label in forms])
        ax.set_title(title)
        ax.set_ylabel("us a call (median)")
        ax.grid(True, axis="y", alpha=0.3)
    fig.legend(loc="lower center", ncol=min(len(runs), 4), fontsize=8)
    fig.suptitle(f"{payload['machine'].get('gpu', '')}, {payload.get('date', '')}: alternate runs of two trees")
    fig.tight_layout(rect=(0, 0.04 + 0.045 * ((len(runs) + 3) // 4), 1, 1))
    path = RESULTS / "op_host_time.png"
    fig.savefig(path, dpi=120)
    return path


def main():
    if sys.argv[1:] == ["--plot"]:
        print(plot(json.loads((RESULTS / "op_host_time.json").read_text())))
        return
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA device")
    dev = torch.device("cuda:0")
    lib = cuda_library()
    out = {"tag": os.environ.get("TAG", "x"), "tree": "this checkout" if ROOT == HERE.parent.resolve() else str(ROOT),
           "date": time.strftime("%Y-%m-%d"), "pieces_us": pieces(dev, lib)}
    nms_1k(dev, lib, out)
    decode(dev, lib, out)
    path = RESULTS / "op_host_time.json"
    payload = json.loads(path.read_text()) if path.exists() else {"benchmark": "op_host_time", "runs": []}
    payload.update(machine=machine(), unit="microseconds, medians (200 calls; pieces 500-2000)")
    payload["runs"].append(out)
    path.write_text(json.dumps(payload, indent=1) + "\n")
    print(f"wrote {path} and {plot(payload)}")


if __name__ == "__main__":
    main()
