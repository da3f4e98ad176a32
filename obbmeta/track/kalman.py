"""Constant-velocity Kalman filters for many tracks at once, one per state dimension.

SORT and ByteTrack filter (cx, cy, w, h) with a constant-velocity model whose noise matrices are diagonal; such a
filter splits exactly into one 2-state filter (value, velocity) per dimension. obbmeta's state is (cx, cy, w, h,
angle): the angle is one more such dimension, kept continuous by :func:`obbmeta.track.angles.align_to` before each
update (the residual is then small, so no wrapping inside the filter). Splitting keeps every step a handful of
NumPy operations on (tracks, dims) arrays: no per-track Python, no batched matrix products.
"""
from __future__ import annotations

import numpy as np


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
        """New filters at ``value`` (K, D) with zero velocity and the given standard deviations (K, D)."""
        self.mean = np.concatenate((self.mean, value))
        self.velocity = np.concatenate((self.velocity, np.zeros_like(value)))
        self.p00 = np.concatenate((self.p00, np.square(value_std)))
        self.p01 = np.concatenate((self.p01, np.zeros_like(value)))
        self.p11 = np.concatenate((self.p11, np.square(velocity_std)))

    def keep(self, index) -> None:
        """Keep only the filters selected by ``index`` (boolean mask or indices), in that order."""
        for name in self.__slots__:
            setattr(self, name, getattr(self, name)[index])

    def predict(self, value_std: np.ndarray, velocity_std: np.ndarray, rows=None) -> None:
        """One step: value += velocity; process noise of the given standard deviations (T, D) or (K, D) for
        ``rows``."""
        sel = slice(None) if rows is None else rows
        p00, p01, p11 = self.p00[sel], self.p01[sel], self.p11[sel]
        self.mean[sel] = self.mean[sel] + self.velocity[sel]
        self.p00[sel] = p00 + 2.0 * p01 + p11 + np.square(value_std)
        self.p01[sel] = p01 + p11
        self.p11[sel] = p11 + np.square(velocity_std)

    def update(self, rows, value: np.ndarray, measurement_std: np.ndarray, dims=None) -> None:
        """Measure ``value`` (K, d) for filters ``rows`` (K,) with noise ``measurement_std`` (K, d); ``dims``
        restricts the update to some dimensions (e.g. only the centre)."""
        at = (rows, slice(None)) if dims is None else np.ix_(np.asarray(rows), np.asarray(dims))
        p00, p01, p11 = self.p00[at], self.p01[at], self.p11[at]
        residual = value - self.mean[at]
        s = p00 + np.square(measurement_std)
        k0, k1 = p00 / s, p01 / s
        self.mean[at] = self.mean[at] + k0 * residual
        self.velocity[at] = self.velocity[at] + k1 * residual
        self.p00[at] = (1.0 - k0) * p00
        self.p01[at] = (1.0 - k0) * p01
        self.p11[at] = p11 - k1 * p01
