"""The GPU peers of obbmeta's rotated NMS and YOLO-OBB decode, for benchmarks measured in one process on the same
boxes: mmcv 2.2.0's CUDA ``nms_rotated`` (its CUDA sources built here with torch's extension builder), Ultralytics
8.4.190's rotated NMS (Fast-NMS on ProbIoU) and its ``non_max_suppression(..., rotated=True)``, and torchvision's
axis-aligned ``nms`` (a speed anchor, not an equivalent).

Each factory returns a callable, or None after printing why the peer is unavailable. The third-party files come
from the carried, git-ignored folder ``.peers/`` (``benchmarks/prepare_peers.sh`` builds it; on the GPU machine
``source benchmarks/gpu_peers.sh`` installs its wheels and sets ``OBBMETA_PEERS``).

Box conventions, so that the same boxes mean the same thing to every peer (obbmeta: ``(cx, cy, w, h, angle)``,
radians, a positive angle turns the width axis clockwise on screen, y down — ``tests/reference.rect``):

* mmcv 2.2.0 ``nms_rotated(dets, scores, iou_threshold, labels=None, clockwise=True)`` (mmcv/ops/nms.py): dets are
  ``(x_ctr, y_ctr, width, height, angle_radian)``; with the default ``clockwise=True`` they go to the kernel as
  they are (``clockwise=False`` only negates the angle). Its corners (``get_rotated_vertices`` in
  mmcv/ops/csrc/common/box_iou_rotated_utils.hpp: ``theta = box.a``, no degree conversion; corner
  ``(cx - sin*h/2 - cos*w/2, cy + cos*h/2 - sin*w/2)``) are the standard rotation of ``(-w/2, h/2)`` with y down:
  the same convention as obbmeta, so the boxes are passed unchanged. Scores are ordered by ``scores.sort(
  descending=True)`` (not a stable sort: equal scores may come in any order; obbmeta puts the lower index first).
  Suppression is IoU > threshold (strict), exact polygon IoU in the input dtype.
* mmcv's ``labels`` quirk: with labels it appends them as a 6th column and sets ``multi_label``, but the CUDA
  kernel's multi-label branch (mmcv/ops/csrc/common/cuda/nms_rotated_cuda.cuh) only changes the row stride and
  never reads the label, so suppression stays class-agnostic. Compare with mmcv class-agnostic only.
* Ultralytics 8.4.190: ``xywhr`` in radians, the same rotation (``ultralytics/utils/ops.py`` ``xywhr2xyxyxyxy``),
  so again unchanged. Its rotated NMS (``ultralytics/utils/nms.py``, the rotated branch of
  ``non_max_suppression``) is ``TorchNMS.fast_nms(boxes, scores, iou, iou_func=batch_probiou)``: Fast-NMS (a box
  already suppressed still suppresses) on the N x N ProbIoU matrix — not the same keep set as greedy exact IoU.
  ``non_max_suppression`` separates classes by adding ``cls * 7680`` to the centres (``agnostic=False``).

    python benchmarks/peers.py [--sizes 1000 3000 10000 30000] [--repeats 10] [--json PATH]

runs every peer on ``tests/reference.clustered_scene(n, seed=n)`` (the boxes of benchmarks/nms_cuda.py), checks
mmcv's keep set against obbmeta's CUDA ``nms_rotated`` class-agnostic, and prints timings and peak memory.
"""
from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
BINDING = Path(__file__).resolve().parent / "mmcv_nms_rotated_binding.cpp"
MMCV_SOURCES = ("nms_rotated_cuda.cu",)  # + the headers beside it in .peers/mmcv (prepare_peers.sh)


def _skip(peer: str, reason: str) -> None:
    print(f"[skip] {peer}: {reason}", file=sys.stderr)


def peers_dir() -> Path:
    """The carried third-party folder: ``$OBBMETA_PEERS`` or ``<repo root>/.peers``."""
    return Path(os.environ.get("OBBMETA_PEERS") or ROOT / ".peers")


def _cuda_missing() -> str | None:
    return None if torch.cuda.is_available() else "no CUDA device"


# ---------------------------------------------------------------------------------------------------------- mmcv
def _cuda_include_paths() -> list[str]:
    """Torch's CUDA headers include cusparse.h / cublas_v2.h; when the toolkit in CUDA_HOME lacks them, take the
    headers of the nvidia-* wheels that torch itself was installed with."""
    from torch.utils.cpp_extension import CUDA_HOME

    if CUDA_HOME and (Path(CUDA_HOME) / "include" / "cusparse.h").exists():
        return []
    paths = []
    for site in map(Path, sys.path):
        nvidia = site / "nvidia"
        if nvidia.is_dir():
            paths += sorted(str(p) for p in nvidia.glob("*/include") if p.is_dir())
    return paths


def _build_mmcv(verbose: bool = False):
    from torch.utils.cpp_extension import load

    folder = peers_dir() / "mmcv"
    return load(name="mmcv_nms_rotated", sources=[str(BINDING)] + [str(folder / s) for s in MMCV_SOURCES],
                extra_include_paths=[str(folder)] + _cuda_include_paths(), verbose=verbose)


def mmcv_nms_rotated(verbose: bool = False):
    """mmcv 2.2.0's CUDA ``nms_rotated``, class-agnostic: ``fn(boxes (N, 5) xywhr, scores (N,), iou) -> keep``
    (int64 indices into the input, by descending score). The first call of this factory builds the extension
    (about a minute; cached by torch in ~/.cache/torch_extensions)."""
    reason = _cuda_missing()
    if reason is None and not (peers_dir() / "mmcv" / MMCV_SOURCES[0]).exists():
        reason = f"no mmcv sources in {peers_dir() / 'mmcv'} (benchmarks/prepare_peers.sh, then carry .peers)"
    if reason is None:
        try:
            ext = _build_mmcv(verbose)
        except Exception as exc:  # noqa: BLE001 - a compiler or ninja failure is a reason to skip the peer
            text = str(exc).strip() or repr(exc)
            reason = "building its CUDA sources failed: " + "\n".join(text.splitlines()[-20:])
    if reason is not None:
        _skip("mmcv nms_rotated", reason)
        return None

    def nms(boxes: torch.Tensor, scores: torch.Tensor, iou: float) -> torch.Tensor:
        # The steps of mmcv.ops.nms_rotated(dets, scores, iou) for labels=None on CUDA (mmcv/ops/nms.py): sort the
        # scores, gather the boxes, run the kernel (its host side reads the mask back and scans it on the CPU),
        # then build the (kept boxes, score) result it returns — part of the cost a caller pays.
        _, order = scores.sort(0, descending=True)
        dets_sorted = boxes.index_select(0, order)
        keep = ext.nms_rotated_cuda(boxes, scores, order, dets_sorted.contiguous(), float(iou), 0)
        torch.cat((boxes[keep], scores[keep].reshape(-1, 1)), dim=1)
        return keep

    return nms


# ---------------------------------------------------------------------------------------------------- Ultralytics
def _opencv_stand_in() -> bool:
    """Ultralytics imports cv2 at import time (for image I/O we never call); OpenCV is too large to carry to the GPU
    machine. When it is missing, put in a module with only the names Ultralytics reads while importing, which raises
    on anything else — so the NMS path is shown not to use it. Returns whether the stand-in is in use."""
    try:
        import cv2  # noqa: F401

        return False
    except ImportError:
        pass
    stand_in = types.ModuleType("cv2")
    stand_in.__version__ = "0.0.0 (obbmeta benchmark stand-in)"
    stand_in.IMREAD_COLOR, stand_in.COLORMAP_INFERNO, stand_in.COLORMAP_JET = 1, 11, 2  # module-level defaults
    stand_in.setNumThreads = lambda n: None  # ultralytics/utils/__init__.py at import

    def refuse(*args, **kwargs):
        raise RuntimeError("OpenCV is not installed (benchmark stand-in)")

    stand_in.imshow = refuse  # ultralytics/utils/patches.py keeps a reference at import

    def missing(name):
        raise AttributeError(f"OpenCV is not installed: cv2.{name} (benchmark stand-in)")

    stand_in.__getattr__ = missing
    sys.modules["cv2"] = stand_in
    return True


def _ultralytics():
    """Import Ultralytics' NMS pieces, or return the reason they cannot be imported."""
    try:
        _opencv_stand_in()
        from ultralytics.utils.metrics import batch_probiou
        from ultralytics.utils.nms import TorchNMS, non_max_suppression
    except Exception as exc:  # noqa: BLE001 - any import failure is a reason to skip the peer
        return None, f"{type(exc).__name__}: {exc}"
    return (TorchNMS, batch_probiou, non_max_suppression), None


def ultralytics_nms_rotated():
    """Ultralytics' rotated NMS, class-agnostic: ``fn(boxes (N, 5) xywhr, scores, iou) -> keep`` — the call the
    rotated branch of ``non_max_suppression`` makes (Fast-NMS on the N x N ProbIoU matrix)."""
    parts, reason = _ultralytics()
    if reason is not None:
        _skip("ultralytics", reason)
        return None
    fast_nms, probiou = parts[0].fast_nms, parts[1]

    def nms(boxes: torch.Tensor, scores: torch.Tensor, iou: float) -> torch.Tensor:
        return fast_nms(boxes, scores, iou, iou_func=probiou)

    return nms


def ultralytics_decode():
    """Ultralytics' OBB post-processing: ``fn(head, conf, iou, max_det=300, img_shape=None, orig_shape=None)`` with
    the raw head ``(B, 4 + nc + 1, N)`` (``[cx, cy, w, h, class scores..., angle]``) -> per image a ``(n, 7)``
    tensor ``[cx, cy, w, h, conf, class, angle]``: ``non_max_suppression(head, conf, iou, nc=nc, max_det=max_det,
    rotated=True)`` (best class, class-aware by centre offset, Fast-NMS on ProbIoU; its defaults ``max_nms=30000``
    and a time limit of 2 s + 0.05 s per image, past which it warns and stops). With ``img_shape`` (network input
    h, w) and ``orig_shape`` (frame h, w) each image's boxes are then mapped back as OBBPredictor.construct_result
    does (``ops.scale_boxes(..., xywh=True)``: the letterbox inverse)."""
    parts, reason = _ultralytics()
    if reason is not None:
        _skip("ultralytics decode", reason)
        return None
    non_max_suppression = parts[2]
    from ultralytics.utils.ops import scale_boxes

    def decode(head: torch.Tensor, conf: float, iou: float, max_det: int = 300, img_shape=None, orig_shape=None):
        nc = head.shape[1] - 5  # the angle is the one extra channel; nc=0 would count it as a class
        out = non_max_suppression(head, conf, iou, nc=nc, max_det=max_det, rotated=True)
        if img_shape is None:
            return out
        for pred in out:
            pred[:, :4] = scale_boxes(img_shape, pred[:, :4].clone(), orig_shape, xywh=True)
        return out

    return decode


# ---------------------------------------------------------------------------------------------------- torchvision
def torchvision_nms():
    """torchvision's axis-aligned ``nms`` as a speed anchor: ``fn(boxes, scores, iou) -> keep`` with boxes either
    ``(N, 4)`` xyxy (used as they are) or ``(N, 5)`` xywhr (their axis-aligned bounding boxes, by obbmeta's
    ``obb_to_aabb``, inside the call)."""
    try:
        from torchvision.ops import nms as tv_nms

        from obbmeta.ops import obb_to_aabb
    except Exception as exc:  # noqa: BLE001 - a torchvision built for another torch fails in many ways
        _skip("torchvision", f"{type(exc).__name__}: {exc}")
        return None

    def nms(boxes: torch.Tensor, scores: torch.Tensor, iou: float) -> torch.Tensor:
        return tv_nms(boxes if boxes.shape[-1] == 4 else obb_to_aabb(boxes), scores, iou)

    return nms


# ------------------------------------------------------------------------------------------------------- memory
def peak_memory(fn, device=None) -> int:
    """Peak device memory (bytes) that one call of ``fn()`` takes through torch's allocator above what was allocated
    before it (its result included while it is alive). Memory a library takes with cudaMalloc directly is not
    seen; obbmeta's, mmcv's, Ultralytics' and torchvision's scratch all come from torch tensors."""
    torch.cuda.synchronize(device)
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    result = fn()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - base
    del result
    return int(peak)


def versions() -> dict:
    """What each peer is, for a benchmark's JSON."""
    info = {}
    source = peers_dir() / "mmcv" / "SOURCE"
    info["mmcv"] = source.read_text().strip() if source.exists() else None
    for name in ("ultralytics", "torchvision"):
        module = sys.modules.get(name)
        info[name] = getattr(module, "__version__", None) if module else None
    cv2 = sys.modules.get("cv2")
    info["cv2"] = getattr(cv2, "__version__", None) if cv2 else None
    return info


# ------------------------------------------------------------------------------------------------- self-check
def _keep_sets_agree(ours: torch.Tensor, theirs: torch.Tensor) -> dict:
    a, b = set(ours.tolist()), set(theirs.tolist())
    return {"same_set": a == b, "same_order": ours.tolist() == theirs.tolist(), "only_obbmeta": len(a - b),
            "only_peer": len(b - a)}


def main():
    import json
    import time

    sys.path.insert(0, str(ROOT / "tests"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import reference
    from _common import arguments, cuda_sync, machine, median_time

    from obbmeta.ops import nms_rotated

    ap = arguments(__doc__, repeats=10)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000, 30000])
    ap.add_argument("--agreement-seeds", type=int, default=30,
                    help="extra clustered scenes per size in 500/1000/3000 for the mmcv keep-set check")
    ap.add_argument("--ultralytics-max", type=int, default=30000, help="largest N for Ultralytics' N x N matrix")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA device")
    iou, sync = 0.5, cuda_sync()
    t0 = time.perf_counter()
    peers = {"mmcv_cuda": mmcv_nms_rotated(), "ultralytics_fast_nms_probiou": ultralytics_nms_rotated(),
             "torchvision_aabb": torchvision_nms()}
    print(f"peers ready in {time.perf_counter() - t0:.1f} s: {versions()}", flush=True)
    peers["obbmeta_cuda"] = lambda b, s, t: nms_rotated(b, s, t)
    rows = []
    for n in args.sizes:
        b, s, _ = (torch.from_numpy(a).cuda() for a in reference.clustered_scene(n, seed=n))
        ours = nms_rotated(b, s, iou)
        row = {"n": n, "kept_obbmeta": int(ours.numel()), "methods": {}}
        for name, fn in peers.items():
            if fn is None or (name.startswith("ultralytics") and n > args.ultralytics_max):
                continue
            try:
                keep = fn(b, s, iou)
                timing = median_time(lambda: fn(b, s, iou), args.repeats, 2, sync)
                timing["peak_bytes"] = peak_memory(lambda: fn(b, s, iou))
            except torch.cuda.OutOfMemoryError as exc:
                row["methods"][name] = {"error": f"out of memory: {exc}".splitlines()[0]}
                torch.cuda.empty_cache()
                continue
            timing["kept"] = int(keep.numel())
            if name == "mmcv_cuda":
                timing.update(_keep_sets_agree(ours, keep))
            row["methods"][name] = timing
        rows.append(row)
        print(n, {k: (f"{v['median_s'] * 1e3:.3f} ms, {v['peak_bytes'] / 2**20:.1f} MiB, kept {v['kept']}"
                      + (f", same set as obbmeta: {v['same_set']}" if "same_set" in v else "")) if "median_s" in v
                  else v["error"] for k, v in row["methods"].items()}, flush=True)
    agreement = None
    if peers["mmcv_cuda"] is not None and args.agreement_seeds:
        agreement = {}
        for n in (500, 1000, 3000):
            same = 0
            for seed in range(args.agreement_seeds):
                b, s, _ = (torch.from_numpy(a).cuda() for a in reference.clustered_scene(n, seed=100_000 + seed))
                same += _keep_sets_agree(nms_rotated(b, s, iou), peers["mmcv_cuda"](b, s, iou))["same_set"]
            agreement[n] = f"{same}/{args.agreement_seeds}"
        print("mmcv keep set == obbmeta CUDA keep set (clustered scenes, seeds 100000+):", agreement, flush=True)
    decode = {}
    ultra_decode = ultralytics_decode()
    if ultra_decode is not None:
        from decode import head_output

        for batch in (1, 16):
            head = head_output(batch).cuda()
            out = ultra_decode(head, 0.25, 0.5)
            decode[batch] = median_time(lambda: ultra_decode(head, 0.25, 0.5), args.repeats, 2, sync)
            decode[batch]["kept_per_image"] = [len(o) for o in out][:4]
            print(f"ultralytics decode batch {batch}: {decode[batch]['median_s'] * 1e3:.3f} ms, kept "
                  f"{decode[batch]['kept_per_image']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "versions": versions(), "iou_threshold": iou,
                                         "rows": rows, "mmcv_agreement": agreement, "ultralytics_decode": decode},
                                        indent=2) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
