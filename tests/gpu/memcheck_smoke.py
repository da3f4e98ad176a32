"""Exercise every CUDA entry point once on small inputs, for `compute-sanitizer --tool memcheck`:

    compute-sanitizer --tool memcheck --error-exitcode 1 python3 tests/gpu/memcheck_smoke.py
"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import reference  # noqa: E402

from obbmeta.ops import box_iou_rotated, nms_rotated  # noqa: E402
from obbmeta.osd import draw_obbs  # noqa: E402

for n in (1, 64, 65, 300):
    b, s, lab = (torch.from_numpy(a).cuda() for a in reference.clustered_scene(n, n, extent=300.0))
    box_iou_rotated(b, b)
    box_iou_rotated(b, b, aligned=True)
    nms_rotated(b, s, 0.5)
    nms_rotated(b, s, 0.5, labels=lab)
    b[:, :2] -= 50  # partly outside the frame
    draw_obbs(torch.zeros(240, 320, 4, dtype=torch.uint8, device="cuda"), b, thickness=3)
    draw_obbs(torch.zeros(240, 400, 3, dtype=torch.uint8, device="cuda")[:, 40:360], b)  # strided rows
torch.cuda.synchronize()
print("memcheck smoke: ok")
