"""Dense multiprecision solves through python-flint against mpmath's own LU (docs/solving.md §3.4)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from gemhsa_sym.free.numeric.flint_linalg import inverse, solve


def _batch(rng: np.random.Generator, shape: tuple[int, ...], real: bool) -> np.ndarray:
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(shape):
        re, im = rng.standard_normal(2)
        out[idx] = mpmath.mpf(re) / 3 if real else mpmath.mpc(re, im) / 3
    return out


@pytest.mark.parametrize("real", [True, False])
def test_solve_and_inverse_agree_with_mpmath_at_60_digits(real: bool) -> None:
    rng = np.random.default_rng(5)
    with mpmath.workdps(60):
        J, F = _batch(rng, (3, 7, 7), real), _batch(rng, (3, 7), real)
        x, inv = solve(J, F), inverse(J)
        for b in range(3):
            want = mpmath.lu_solve(mpmath.matrix(J[b].tolist()), mpmath.matrix(F[b].tolist()))
            assert max(abs(x[b, i] - want[i]) for i in range(7)) < mpmath.mpf(10) ** -55
            eye = mpmath.matrix(J[b].tolist()) * mpmath.matrix(inv[b].tolist())
            assert max(abs(eye[i, j] - (i == j)) for i in range(7) for j in range(7)) < mpmath.mpf(10) ** -55
        assert all(isinstance(v, mpmath.mpf if real else mpmath.mpc) for v in x.flat)


def test_the_working_precision_is_the_callers() -> None:
    with mpmath.workdps(15):
        low = solve(np.array([[mpmath.mpf(3)]], dtype=object), np.array([mpmath.mpf(1)], dtype=object))[0]
    with mpmath.workdps(80):
        high = solve(np.array([[mpmath.mpf(3)]], dtype=object), np.array([mpmath.mpf(1)], dtype=object))[0]
        assert abs(high - mpmath.mpf(1) / 3) < mpmath.mpf(10) ** -78
        assert abs(low - mpmath.mpf(1) / 3) > mpmath.mpf(10) ** -30


def test_a_singular_matrix_raises_like_mpmath() -> None:
    singular = np.array([[mpmath.mpf(1), mpmath.mpf(2)], [mpmath.mpf(2), mpmath.mpf(4)]], dtype=object)
    with mpmath.workdps(30), pytest.raises(ZeroDivisionError):
        solve(singular[None], np.array([[mpmath.mpf(1), mpmath.mpf(0)]], dtype=object))
    with mpmath.workdps(30), pytest.raises(ZeroDivisionError):
        inverse(singular[None])
