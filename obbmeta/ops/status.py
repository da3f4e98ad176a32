"""The status flags of the CUDA NMS and fused decode, one set of values with the C code's.

The CUDA NMS and the fused YOLO-OBB decode (kernels/obbmeta_nms_core.cuh) write a status word beside their results,
``[kept, flags, candidate words needed]``, instead of synchronising with the host; the padded results carry the flags
(``PaddedDetections.status``; ``nms_rotated_padded``'s count of -1), and the CPU padded NMS and decode set the same
flags from Python. The flag values live in kernels/obb_status.h; :func:`check_status_flags` compares these constants
with the host library's copy when it loads.
"""
from __future__ import annotations

import ctypes

STATUS_BOXES = 1  # a box (the decodes: a candidate's) holds NaN / inf, or float64 values beyond 1e150
STATUS_SCORES = 2  # a score is NaN / inf (the decodes: a candidate's score is inf)
STATUS_OVERFLOW = 4  # the candidate words outgrew the pool given (status[2]: how many the data needed)
STATUS_CLASSES = 8  # end-to-end heads: a class above conf is not an id (set by obbmeta.decode in Python only)
STATUS_FLAGS = (STATUS_BOXES, STATUS_SCORES, STATUS_OVERFLOW, STATUS_CLASSES)  # kernels/obb_status.h's order


def check_status_flags(lib: ctypes.CDLL) -> None:
    """The host library (kernels/obb_status.h, as compiled) and these constants must give the flags the same values."""
    export = getattr(lib, "obbmeta_status_flags", None)
    if export is None:
        raise ImportError("obbmeta's compiled geometry core is out of date (no obbmeta_status_flags); rebuild it with "
                          "`pip install -e .`")
    export.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
    export.restype = ctypes.c_int
    out = (ctypes.c_int64 * 16)()
    count = export(out, 16)
    got, want = list(out[:min(count, 16)]), list(STATUS_FLAGS)
    if got != want:
        raise ImportError(f"kernels/obb_status.h and obbmeta/ops/status.py disagree on the status flags: C {got}, "
                          f"Python {want}; rebuild obbmeta (`pip install -e .`)")
