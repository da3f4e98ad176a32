"""KalmanBank (one 2-state filter per dimension) against the textbook filter written with full matrices."""
import numpy as np

from obbmeta.track.kalman import KalmanBank


def full_filter(z0, p_value, p_velocity, steps, q_value, q_velocity, r):
    """The 2D-state constant-velocity Kalman filter over D dimensions with explicit (2D x 2D) matrices."""
    d = z0.size
    f = np.block([[np.eye(d), np.eye(d)], [np.zeros((d, d)), np.eye(d)]])
    hm = np.hstack([np.eye(d), np.zeros((d, d))])
    x = np.concatenate([z0, np.zeros(d)])
    p = np.diag(np.concatenate([p_value ** 2, p_velocity ** 2]))
    q = np.diag(np.concatenate([q_value ** 2, q_velocity ** 2]))
    for z in steps:
        x = f @ x
        p = f @ p @ f.T + q
        if z is not None:
            s = hm @ p @ hm.T + np.diag(r ** 2)
            k = p @ hm.T @ np.linalg.inv(s)
            x = x + k @ (z - hm @ x)
            p = (np.eye(2 * d) - k @ hm) @ p
    return x[:d], x[d:], p


def test_the_split_filter_equals_the_full_matrix_filter():
    rng = np.random.default_rng(3)
    d = 5
    z0 = rng.normal(size=d) * 10
    p_value, p_velocity = rng.uniform(0.5, 2, d), rng.uniform(0.1, 1, d)
    q_value, q_velocity, r = rng.uniform(0.1, 1, d), rng.uniform(0.01, 0.3, d), rng.uniform(0.2, 2, d)
    steps = [z0 + k * 1.5 + rng.normal(size=d) if k % 3 else None for k in range(1, 12)]
    bank = KalmanBank(d)
    bank.append(np.array([rng.normal(size=d), z0]), np.array([p_value, p_value]), np.array([p_velocity] * 2))
    for z in steps:
        bank.predict(np.array([q_value, q_value]), np.array([q_velocity, q_velocity]))
        if z is not None:
            bank.update(np.array([1]), z[None], r[None])
    mean, velocity, p = full_filter(z0, p_value, p_velocity, steps, q_value, q_velocity, r)
    np.testing.assert_allclose(bank.mean[1], mean, rtol=1e-10)
    np.testing.assert_allclose(bank.velocity[1], velocity, rtol=1e-10)
    np.testing.assert_allclose(bank.p00[1], np.diag(p)[:d], rtol=1e-10)
    np.testing.assert_allclose(bank.p01[1], np.diag(p[:d, d:]), rtol=1e-10)
    np.testing.assert_allclose(bank.p11[1], np.diag(p)[d:], rtol=1e-10)


def test_updating_some_dimensions_leaves_the_others_predicted():
    bank = KalmanBank(3)
    bank.append(np.zeros((2, 3)), np.ones((2, 3)), np.ones((2, 3)))
    bank.predict(np.ones((2, 3)), np.ones((2, 3)))
    before = bank.mean.copy(), bank.p00.copy()
    bank.update(np.array([0]), np.array([[5.0]]), np.array([[1.0]]), dims=[1])
    assert bank.mean[0, 1] > 0 and bank.mean[0, 0] == before[0][0, 0] and bank.mean[0, 2] == before[0][0, 2]
    assert (bank.mean[1] == before[0][1]).all() and bank.p00[0, 1] < before[1][0, 1]


def test_the_bank_refuses_what_the_c_filter_cannot_walk():
    """Arrays of different lengths, duplicated or fractional rows and misshapen noise are refused with the argument's
    name before any C call (the C code walks the five arrays as one table)."""
    import pytest

    bank = KalmanBank(5)
    with pytest.raises(ValueError, match=r"value_std must have shape \(3, 5\)"):
        bank.append(np.zeros((3, 5)), np.ones((2, 5)), np.ones((1, 5)))
    bank.append(np.zeros((3, 5)), np.ones((1, 5)), np.ones((1, 5)))  # one row broadcasts
    assert bank.p00.shape == bank.p11.shape == (3, 5)
    with pytest.raises(ValueError, match="rows must be distinct"):
        bank.predict(np.ones((2, 5)), np.ones((2, 5)), rows=[1, 1])
    with pytest.raises(IndexError, match="integer indices"):
        bank.update(np.array([0.7]), np.zeros((1, 5)), np.ones((1, 5)))
    with pytest.raises(ValueError, match=r"measurement_std must have shape \(1, 5\)"):
        bank.update(np.array([0]), np.zeros((1, 5)), np.ones((2, 5)))
    bank.p00 = np.zeros((200, 5))
    with pytest.raises(ValueError, match="one \\(T, D\\) shape"):
        bank.predict(np.ones((1, 5)), np.ones((1, 5)))
