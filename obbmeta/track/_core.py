"""The tracker's C core (kernels/track_cpu.c, the library ``obbmeta.track._tracker``) through ctypes: the Kalman
filters, the motion noise, the angle alignment, the candidate pairs and one frame of one stream of
:class:`~obbmeta.track.OrientedTracker`. Each is one implementation, called by :mod:`obbmeta.track.kalman`,
:class:`~obbmeta.track.MotionNoise`, :func:`~obbmeta.track.align_to`, :mod:`obbmeta.track.association` and the
tracker itself; ctypes releases the interpreter lock for every call, so streams tracked on several threads run in
parallel. The struct mirrors are checked against the library when it loads (obbmeta/_native.py)."""
from __future__ import annotations

import ctypes

import numpy as np

from .._native import NativeLibrary

_p, _i64, _int, _d = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_double


class TrackParams(ctypes.Structure):
    """``obb_track_params``: OrientedTracker's settings and its MotionNoise."""
    _fields_ = [(name, _d) for name in ("match_iou", "low_match_iou", "tentative_match_iou", "high_score",
                                        "low_score", "new_track_score", "buffer", "position", "velocity", "angle",
                                        "angle_process", "angle_velocity")] + \
               [(name, _i64) for name in ("min_hits", "max_age", "output_lost", "aabb_association", "class_aware",
                                          "heading")]


class Tracks(ctypes.Structure):
    """``obb_tracks``: a stream's tracks as parallel arrays (pointers) of ``n`` rows."""
    _fields_ = [(name, _p) for name in ("ids", "labels", "hits", "lost", "confirmed", "score", "mean", "velocity",
                                        "p00", "p01", "p11")] + [("n", _i64)]


class Detections(ctypes.Structure):
    """``obb_detections``: one frame's boxes, scores and class ids."""
    _fields_ = [("xywhr", _p), ("scores", _p), ("labels", _p), ("n", _i64)]


class TrackReport(ctypes.Structure):
    """``obb_track_report``: what a frame reports (TrackStep's arrays)."""
    _fields_ = [(name, _p) for name in ("det_ids", "det_xywhr", "pred_ids", "pred_labels", "pred_xywhr",
                                        "pred_scores")] + [("n_pred", _i64)]


TRACKER = NativeLibrary(
    "track._tracker", "C tracker core", abi=1, abi_function="obbmeta_track_abi_version",
    functions={
        "obbmeta_kalman_predict": (None, [_p] * 5 + [_i64, _p, _i64, _p, _p]),
        "obbmeta_kalman_update": (None, [_p] * 5 + [_i64, _p, _i64, _p, _i64, _p, _p]),
        "obbmeta_motion_noise": (None, [_p, _p, _i64, _p, _p, _p]),
        "obbmeta_align_to": (None, [_p, _p, _i64, _int]),
        "obbmeta_candidate_ious": (_i64, [_p, _p, _i64, _p, _p, _i64, _int, _d, _p, _p, _p, _i64]),
        "obbmeta_track_step": (_i64, [_p, _p, _p, _int, _int, _p, _p, _p]),
        "obbmeta_track_step_many": (_i64, [_p, _i64, _p, _p, _p, _i64, _p, _p, _p]),
    },
    structs={"obb_track_params": TrackParams, "obb_tracks": Tracks, "obb_detections": Detections,
             "obb_track_report": TrackReport},
    table_function="obbmeta_track_abi_table")


def library() -> ctypes.CDLL:
    """The checked, declared tracker core (loaded on first use)."""
    return TRACKER.load()


def address(a: np.ndarray | None) -> int | None:
    """The data pointer of a C-contiguous array (None: NULL)."""
    if a is None:
        return None
    assert a.flags.c_contiguous, "the C tracker core reads C-contiguous arrays"
    return a.ctypes.data


def rows_f64(value, width: int, n: int | None = None, name: str = "value") -> np.ndarray:
    """``value`` as a C-contiguous (n, width) float64 array (broadcast when ``n`` is given), or ValueError naming
    ``name`` and the shape expected."""
    a = np.asarray(value, dtype=np.float64)
    try:
        if n is not None:
            a = np.broadcast_to(a, (n, width))
        return np.ascontiguousarray(a.reshape(-1, width))
    except ValueError:
        want = f"({n}, {width})" if n is not None else f"(N, {width})"
        raise ValueError(f"{name} must have shape {want} (or broadcast to it), got {a.shape}") from None


def motion_noise(params: TrackParams, wh: np.ndarray, out: np.ndarray) -> None:
    """``obbmeta_motion_noise``: the (3, n, 5) ``out`` from (n, 2) ``wh``."""
    n = wh.shape[0]
    if n:
        library().obbmeta_motion_noise(ctypes.byref(params), address(wh), n, address(out[0]), address(out[1]),
                                       address(out[2]))


def track_step(params: TrackParams, tracks_in: Tracks, detections: Detections, detection: bool, first_frame: bool,
               next_id: int, tracks_out: Tracks, report: TrackReport) -> int:
    """``obbmeta_track_step``; returns the next free track id (MemoryError when C ran out of memory)."""
    nid = ctypes.c_int64(next_id)
    if library().obbmeta_track_step(ctypes.byref(params), ctypes.byref(tracks_in), ctypes.byref(detections),
                                    int(detection), int(first_frame), ctypes.byref(nid), ctypes.byref(tracks_out),
                                    ctypes.byref(report)) < 0:
        raise MemoryError("OrientedTracker: out of memory in the C step")
    return nid.value


def track_step_rows(params: TrackParams, tracks_in: np.ndarray, detections: np.ndarray, first_frame: np.ndarray,
                    threads: int, next_id: int, tracks_out: np.ndarray, reports: np.ndarray) -> int:
    """``obbmeta_track_step_many`` over struct arrays held as NumPy rows (``tracks_in`` / ``tracks_out`` (k, 12)
    uint64 ``obb_tracks``, ``detections`` (k, 4) ``obb_detections``, ``reports`` (k, 7) ``obb_track_report``,
    ``first_frame`` (k,) uint8), so a batch's structs are built by array arithmetic, not one ctypes object per field;
    C writes the counts (``n``, ``n_pred``) into the rows. Returns the next free track id."""
    k = tracks_in.shape[0]
    for name, a, width in (("tracks_in", tracks_in, _TRACKS_WORDS), ("tracks_out", tracks_out, _TRACKS_WORDS),
                           ("detections", detections, _DETECTIONS_WORDS), ("reports", reports, _REPORT_WORDS)):
        assert a.dtype == np.uint64 and a.shape == (k, width) and a.flags.c_contiguous, name
    assert first_frame.dtype == np.uint8 and first_frame.shape == (k,)
    nid = ctypes.c_int64(next_id)
    if library().obbmeta_track_step_many(ctypes.byref(params), k, tracks_in.ctypes.data, detections.ctypes.data,
                                         first_frame.ctypes.data, int(threads), ctypes.byref(nid),
                                         tracks_out.ctypes.data, reports.ctypes.data) < 0:
        raise MemoryError("OrientedTracker: out of memory in the C step")
    return nid.value


# the structs as rows of 64-bit words (pointers and int64 counts only: no padding), checked against ctypes here
_TRACKS_WORDS, _DETECTIONS_WORDS, _REPORT_WORDS = (ctypes.sizeof(t) // 8 for t in (Tracks, Detections, TrackReport))
assert (_TRACKS_WORDS, _DETECTIONS_WORDS, _REPORT_WORDS) == (12, 4, 7)
