"""Constant-velocity Kalman filters for many tracks at once, one per state dimension.

SORT and ByteTrack filter (cx, cy, w, h) with a constant-velocity model whose noise matrices are diagonal; such a
filter splits exactly into one 2-state filter (value, velocity) per dimension. obbmeta's state is (cx, cy, w, h,
angle): the angle is one more such dimension, kept continuous by :func:`obbmeta.track.angles.align_to` before each
update (the residual is then small, so no wrapping inside the filter). The arithmetic is in C (kernels/track_cpu.c),
the same code the tracker's step runs; :class:`KalmanBank` holds the (tracks, dims) arrays of FollowTracker.
"""
from __future__ import annotations

import numpy as np

from ._core import address, library, rows_f64


class KalmanBank:
    """T independent constant-velocity filters over D dimensions: ``mean``/``velocity`` (T, D) and the 2x2
    covariance of each (value, velocity) pair as ``p00``, ``p01``, ``p11`` (T, D)."""

    __slots__ = ("mean", "velocity", "p00", "p01", "p11")

    def __init__(self, dims: int):
        z = np.zeros((0, dims))
        self.mean, self.velocity, self.p00, self.p01, self.p11 = z, z.copy(), z.copy(), z.copy(), z.copy()

    def __len__(self) -> int:
        return self.mean.shape[0]

    def append(self, value: np.ndarray, value_std: np.ndarray, velocity_std: np.ndarray) -> None:
        """New filters at ``value`` (K, D) with zero velocity and the given standard deviations (K, D, or
        broadcasting to it)."""
        dims = self.mean.shape[1]
        z = rows_f64(value, dims, name="value")
        k = z.shape[0]
        v, u = rows_f64(value_std, dims, k, "value_std"), rows_f64(velocity_std, dims, k, "velocity_std")
        self.mean = np.concatenate((self.mean, z))
        self.velocity = np.concatenate((self.velocity, np.zeros_like(z)))
        self.p00 = np.concatenate((self.p00, np.square(v)))
        self.p01 = np.concatenate((self.p01, np.zeros_like(z)))
        self.p11 = np.concatenate((self.p11, np.square(u)))

    def keep(self, index) -> None:
        """Keep only the filters selected by ``index`` (boolean mask or indices), in that order."""
        for name in self.__slots__:
            setattr(self, name, getattr(self, name)[index])

    def predict(self, value_std: np.ndarray, velocity_std: np.ndarray, rows=None) -> None:
        """One step: value += velocity; process noise of the given standard deviations (T, D) or (K, D) for
        ``rows`` (boolean mask or indices). One C call (kernels/track_cpu.c, the tracker's own filter)."""
        self._contiguous()
        dims = self.mean.shape[1]
        index = None if rows is None else _indices(rows, len(self))
        if index is not None and np.unique(index).size != index.size:
            raise ValueError("rows must be distinct: each filter moves on once per step")
        n = len(self) if index is None else index.size
        q_value = rows_f64(value_std, dims, n, "value_std")
        q_velocity = rows_f64(velocity_std, dims, n, "velocity_std")
        if n:
            library().obbmeta_kalman_predict(*self._pointers(), dims, address(index), n, address(q_value),
                                             address(q_velocity))

    def update(self, rows, value: np.ndarray, measurement_std: np.ndarray, dims=None) -> None:
        """Measure ``value`` (K, d) for filters ``rows`` (K,) (distinct) with noise ``measurement_std`` (K, d);
        ``dims`` restricts the update to some dimensions (e.g. only the centre). One C call."""
        self._contiguous()
        width = self.mean.shape[1]
        index = _indices(rows, len(self))
        if np.unique(index).size != index.size:
            raise ValueError("rows must be distinct: each filter is measured once per step")
        cols = None if dims is None else np.ascontiguousarray(np.arange(width)[np.asarray(dims)], np.int64)
        d = width if cols is None else cols.size
        z = rows_f64(value, d, index.size, "value")
        r = rows_f64(measurement_std, d, index.size, "measurement_std")
        if index.size and d:
            library().obbmeta_kalman_update(*self._pointers(), width, address(index), index.size, address(cols), d,
                                            address(z), address(r))

    def _contiguous(self) -> None:
        """Every array C-contiguous float64 and of ``mean``'s (T, D) shape: the C code walks them as one table."""
        shape = np.shape(self.mean)
        if len(shape) != 2:
            raise ValueError(f"KalmanBank.mean must be (T, D), got shape {shape}")
        for name in self.__slots__:
            a = getattr(self, name)
            if np.shape(a) != shape:
                raise ValueError(f"KalmanBank.{name} has shape {np.shape(a)}, mean {shape}: the five arrays must "
                                 "have one (T, D) shape")
            if not (a.flags.c_contiguous and a.flags.writeable and a.dtype == np.float64):
                setattr(self, name, np.array(a, dtype=np.float64, order="C"))

    def _pointers(self) -> tuple:
        return tuple(address(getattr(self, name)) for name in self.__slots__)


def _indices(rows, n: int) -> np.ndarray:
    """``rows`` (a boolean mask of length n, or indices) as C-contiguous int64 indices in [0, n)."""
    r = np.asarray(rows)
    if r.dtype != np.bool_ and r.dtype.kind not in "iu" and r.size:
        raise IndexError(f"rows must be a boolean mask or integer indices, got dtype {r.dtype}")
    if r.dtype == np.bool_:
        if r.shape != (n,):
            raise ValueError(f"a boolean rows mask must have shape ({n},), got {r.shape}")
        return np.flatnonzero(r).astype(np.int64)
    index = np.ascontiguousarray(r.reshape(-1), dtype=np.int64)
    if index.size and (index.min() < -n or index.max() >= n):
        raise IndexError(f"rows must index {n} filters, got {index.min()}..{index.max()}")
    return np.ascontiguousarray(np.where(index < 0, index + n, index))
