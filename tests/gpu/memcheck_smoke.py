"""Exercise every CUDA entry point once on small inputs, for compute-sanitizer's memcheck, racecheck (shared
memory) and synccheck tools:

    compute-sanitizer --tool memcheck --error-exitcode 1 python3 tests/gpu/memcheck_smoke.py
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import reference  # noqa: E402

from obbmeta.decode import yolo_obb, yolo_obb_padded  # noqa: E402
from obbmeta.ops import box_iou_rotated, nms_rotated, nms_rotated_padded  # noqa: E402
from obbmeta.osd import draw_obbs  # noqa: E402

for n in (1, 64, 65, 300):
    b, s, lab = (torch.from_numpy(a).cuda() for a in reference.clustered_scene(n, n, extent=300.0))
    box_iou_rotated(b, b)
    box_iou_rotated(b, b, aligned=True)
    nms_rotated(b, s, 0.5)
    nms_rotated(b, s, 0.5, labels=lab)
    nms_rotated(b.double(), s.double(), 0.3, labels=lab)
    nms_rotated_padded(b, s, 0.5, labels=lab)
    b[:, :2] -= 50  # partly outside the frame
    draw_obbs(torch.zeros(240, 320, 4, dtype=torch.uint8, device="cuda"), b, thickness=3)
    draw_obbs(torch.zeros(240, 400, 3, dtype=torch.uint8, device="cuda")[:, 40:360], b)  # strided rows
# The fused decode: plain, top-k cut (two sorts), multi-label, class filter, overlap pools too small.
head = torch.rand(3, 4 + 5 + 1, 700, device="cuda")
head[:, :2] *= 200
head[:, 2:4] = head[:, 2:4] * 30 + 2
yolo_obb(head, 0.6, 0.5)
yolo_obb(head, 0.6, 0.5, max_nms=40, max_det=5)
yolo_obb(head, 0.8, 0.5, multi_label=True, agnostic=True, classes=[0, 2])
yolo_obb(head, 0.6, 0.5, multi_label=True, class_iou={0: 0.1, 2: 0.9})  # per-class thresholds
yolo_obb(head, 0.6, 0.5, class_conf={1: 0.9, 3: 0.2}, class_iou={3: 0.3})
yolo_obb_padded(head, 0.6, 0.5, overlap_words=3)
many = torch.rand(60, 4 + 5 + 1, 80, device="cuda")
many[:, :2] *= 200
many[:, 2:4] = many[:, 2:4] * 30 + 2
yolo_obb(many, 0.5, 0.5)  # 300 (image, class) segments: two calls of the segmented sort
one = torch.rand(1, 4 + 5 + 1, 6000, device="cuda")
one[:, :2] *= 400
one[:, 2:4] = one[:, 2:4] * 20 + 2
one[:, 4] += 1.0
yolo_obb(one, 0.5, 0.5, max_det=2000)  # one segment of 6 000 candidates (sorted in passes over global memory),
# more kept boxes than the output ranking holds in shared memory
nms_rotated_padded(b, s, 0.5, overlap_words=1)
nms_rotated(*(torch.from_numpy(a).cuda() for a in reference.clustered_scene(2000, 7, extent=100.0)[:2]), 0.5)
torch.cuda.synchronize()
print("memcheck smoke: ok")
