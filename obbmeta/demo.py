"""`obbmeta demo`: the library's main job on an embedded input, end to end on this machine.

The default input is a synthetic YOLO-OBB head output for one 1920x1080 aerial frame letterboxed to 640x640:
around each of a few ground-truth vehicles and ships, a cluster of jittered proposals with decaying scores, plus
background noise — the shape and value ranges an Ultralytics OBB model emits (B, 4+nc+1, N). The demo decodes
it, suppresses duplicates with exact rotated NMS, maps boxes back to source pixels and prints them next to the
truth. When NVIDIA's metadata library is available it also writes them into a real NvDsBatchMeta, reads them back
through NVIDIA's lists and plans the nvdsosd overlay (display-meta lines).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from . import decode, ops
from .boxes import OrientedBoxes
from .letterbox import Letterbox

CLASS_NAMES = ["vehicle", "ship", "plane"]
SOURCE_SIZE = (1920, 1080)
INPUT_SIZE = (640, 640)

# Ground truth in source pixels: cx, cy, w, h, angle (rad, clockwise on screen), class.
TRUTH = [
    (400.0, 300.0, 90.0, 40.0, math.radians(30), 0),
    (470.0, 330.0, 90.0, 40.0, math.radians(30), 0),  # parked next to the first: must survive NMS
    (1200.0, 640.0, 300.0, 70.0, math.radians(-15), 1),
    (1500.0, 250.0, 160.0, 150.0, math.radians(60), 2),
    (800.0, 900.0, 60.0, 25.0, math.radians(95), 0),
]


def synthetic_output(seed: int = 0, proposals: int = 40, noise: int = 2000):
    """(1, 4 + nc + 1, N) raw head output in input pixels, and the letterbox used."""
    rng = np.random.default_rng(seed)
    lb = Letterbox.fit(SOURCE_SIZE, INPUT_SIZE)
    rows = []
    for cx, cy, w, h, a, cls in TRUTH:
        for k in range(proposals):
            jitter = 0 if k == 0 else 1
            score = 0.92 - 0.015 * k + rng.normal(0, 0.01)
            box = [cx * lb.scale + lb.pad_x + jitter * rng.normal(0, 0.7),
                   cy * lb.scale + lb.pad_y + jitter * rng.normal(0, 0.7),
                   w * lb.scale * (1 + jitter * rng.normal(0, 0.02)), h * lb.scale * (1 + jitter * rng.normal(0, 0.02)),
                   a + jitter * rng.normal(0, 0.02)]
            scores = rng.uniform(0, 0.05, len(CLASS_NAMES))
            scores[cls] = max(score, 0.0)
            rows.append(box + list(scores))
    for _ in range(noise):
        box = [rng.uniform(0, 640), rng.uniform(0, 640), rng.uniform(4, 60), rng.uniform(4, 60), rng.uniform(-0.78, 2.35)]
        rows.append(box + list(rng.uniform(0, 0.2, len(CLASS_NAMES))))
    rows = np.array(rows, dtype=np.float32)
    # Head layout: [cx, cy, w, h, class scores..., angle] along dim 1.
    out = np.concatenate([rows[:, :4], rows[:, 5:], rows[:, 4:5]], axis=1).T[None]
    return torch.from_numpy(np.ascontiguousarray(out)), lb


def run(print_fn=print) -> OrientedBoxes:
    output, lb = synthetic_output()
    print_fn(f"model output {tuple(output.shape)} (B, 4+nc+1, N), letterbox scale={lb.scale:.4f} "
             f"pad=({lb.pad_x:.0f}, {lb.pad_y:.0f})")
    dets = decode.yolo_obb(output, conf=0.25, iou=0.5, letterbox=lb)[0]
    truth = torch.tensor([t[:5] for t in TRUTH])
    iou = ops.box_iou_rotated(dets.xywhr, truth)
    print_fn(f"kept {len(dets)} of {output.shape[2]} candidates after greedy rotated NMS (exact IoU 0.5):")
    print_fn(f"{'class':>8} {'score':>6} {'cx':>8} {'cy':>8} {'w':>7} {'h':>7} {'angle°':>7} {'IoU with truth':>15}")
    for (cx, cy, w, h, a), s, c, best in zip(dets.xywhr.tolist(), dets.scores.tolist(), dets.labels.tolist(),
                                             iou.max(dim=1).values.tolist()):
        print_fn(f"{CLASS_NAMES[c]:>8} {s:6.3f} {cx:8.1f} {cy:8.1f} {w:7.1f} {h:7.1f} {math.degrees(a):7.1f} {best:15.3f}")
    _write_deepstream_meta(dets, print_fn)
    return dets


def _write_deepstream_meta(dets: OrientedBoxes, print_fn) -> None:
    try:
        from . import nvds

        nvds.describe  # noqa: B018  (the metadata layer is present)
    except (ImportError, AttributeError) as exc:
        print_fn(f"(DeepStream metadata step skipped: {exc})")
        return
    try:
        batch = nvds.BatchMeta.create(max_frames=1)
    except Exception as exc:  # library not found: say why, the rest of the demo stands
        print_fn(f"(DeepStream metadata step skipped: {exc})")
        return
    try:
        frame = batch.add_frame(source_id=0, width=SOURCE_SIZE[0], height=SOURCE_SIZE[1], frame_num=0)
        result = nvds.attach_obbs(batch, frame, dets, class_names=CLASS_NAMES)
        print_fn(f"wrote {result.written} objects ({result.filtered} filtered) into a real NvDsBatchMeta at "
                 f"{hex(batch.address)}; read back through NVIDIA's obj_meta_list:")
        print_fn(f"{'label':>8} {'rect_params left,top,width,height (AABB)':>42} {'OBB user meta cx,cy,w,h,angle°':>36}")
        for obj, obb in nvds.read_obbs(frame):
            rect = ",".join(f"{v:.1f}" for v in obj.rect)
            cx, cy, w, h, a = obb.xywhr
            print_fn(f"{obj.label:>8} {rect:>42} {f'{cx:.1f},{cy:.1f},{w:.1f},{h:.1f},{math.degrees(a):.1f}':>36}")
        from .osd import add_obb_overlay

        overlay = add_obb_overlay(batch, frame, hide_aabb=True)
        print_fn(f"nvdsosd overlay (any DeepStream version): {overlay.lines} lines in {overlay.display_metas} "
                 f"display metas for {overlay.drawn} oriented boxes; AABB borders hidden, rect_params kept for nvtracker")
    finally:
        batch.destroy()
