"""Sparse solves of large Dyson Jacobians (docs/solving.md §3.4): double precision by sparse LU against LAPACK, and
refinement at any precision against python-flint's dense elimination, on random arrow matrices and on the Jacobian of
a token covariance of eight levels."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from gemhsa_sym import presets
from gemhsa_sym.free.numeric.flint_linalg import solve as dense_solve
from gemhsa_sym.free.numeric.sparse import MIN_SIZE, double_solve, refined_solve
from gemhsa_sym.free.numeric.systems import MP
from gemhsa_sym.laws.attention import AttentionLaw


def _arrow(rng: np.random.Generator, k: int, real: bool) -> np.ndarray:
    """A well-conditioned sparse k x k matrix: a dominant diagonal, three entries per row, two full columns."""
    a = np.diag(3 + rng.random(k)).astype(float if real else complex)
    for i in range(k):
        a[i, rng.integers(0, k, 3)] += rng.standard_normal(3)
    a[:, :2] += rng.standard_normal((k, 2))
    if not real:
        a = a + 1j * np.where(a != 0, rng.standard_normal((k, k)), 0)
    return a


def _mp(a: np.ndarray) -> np.ndarray:
    """An object array of mpmath numbers, a third of each entry (not a double)."""
    out = np.empty(a.shape, dtype=object)
    for idx in np.ndindex(a.shape):
        v = a[idx]
        out[idx] = mpmath.mpf(v.real) / 3 if np.isrealobj(a) else mpmath.mpc(v.real, v.imag) / 3
    return out


@pytest.mark.parametrize("real", [True, False])
def test_refinement_agrees_with_the_dense_solve_at_60_digits(real: bool) -> None:
    rng = np.random.default_rng(3)
    with mpmath.workdps(60):
        J, F = _mp(_arrow(rng, 150, real)), _mp(rng.standard_normal(150) + (0 if real else 1j * rng.standard_normal(150)))
        x, want = refined_solve(J, F), dense_solve(J[None], F[None])[0]
        assert x is not None
        assert all(isinstance(v, mpmath.mpf if real else mpmath.mpc) for v in x)
        assert max(abs(a - b) for a, b in zip(x, want)) < mpmath.mpf(10) ** -55 * max(abs(v) for v in want)


def test_small_dense_and_ill_conditioned_systems_are_left_to_the_dense_solve() -> None:
    rng = np.random.default_rng(4)
    with mpmath.workdps(50):
        small = _mp(_arrow(rng, MIN_SIZE - 1, True))
        assert refined_solve(small, _mp(np.ones(MIN_SIZE - 1))) is None
        dense = _mp(rng.standard_normal((100, 100)) + 10 * np.eye(100))
        assert refined_solve(dense, _mp(np.ones(100))) is None
        # two rows equal to 1e-18: singular to double precision, regular at 50 digits
        a = _mp(_arrow(rng, 100, True))
        a[1] = a[0]
        a[1, 1] += mpmath.mpf(10) ** -18
        F = _mp(rng.standard_normal(100))
        assert refined_solve(a, F) is None
        x = MP.solve(a[None], F[None])[0]
        residual = F - a.dot(x)  # backward stable: small against |a| |x| (|x| is about 1e18 here)
        assert max(abs(v) for v in residual) < mpmath.mpf(10) ** -45 * max(abs(v) for v in x)


def test_double_solve_agrees_with_lapack_and_marks_a_singular_matrix() -> None:
    rng = np.random.default_rng(5)
    J = np.stack([_arrow(rng, 120, False) for _ in range(3)])
    F = rng.standard_normal((3, 120)) + 1j * rng.standard_normal((3, 120))
    J[2] = 0
    x = double_solve(J, F)
    assert x is not None
    np.testing.assert_allclose(x[:2], np.linalg.solve(J[:2], F[:2, :, None])[..., 0], rtol=1e-11, atol=1e-13)
    assert np.all(np.isnan(x[2]))
    assert double_solve(J[:, :10, :10], F[:, :10]) is None


def test_the_jacobian_of_eight_token_levels_is_solved_as_the_dense_solve_does() -> None:
    """The Dyson Jacobian of eight token levels (113 unknowns, 7 % of its entries nonzero) at a point of the upper half
    plane: the sparse LU against LAPACK, and the refinement at 40 digits against the dense elimination."""
    eight = {"values": [f"{k}/4" for k in range(1, 9)], "weights": ["1/8"] * 8}
    solver = AttentionLaw(presets()["single-head"].replace(tokens="covariance", token_covariance=eight)).solver("dyson")
    w = np.array([3.0 + 1.0j])
    g = solver.branch(w, dyson=True)
    F, J = solver.dyson.residual_jacobian(w, g)
    F = F + 1e-3  # a right-hand side that is not zero
    np.testing.assert_allclose(double_solve(J, F), np.linalg.solve(J, F[..., None])[..., 0], rtol=1e-10, atol=1e-12)
    with mpmath.workdps(40):
        system = solver.mp(40)
        Fm, Jm = system.residual_jacobian(MP.array(w), MP.array(g))
        Fm = Fm + mpmath.mpf(10) ** -3
        x, want = refined_solve(Jm[0], Fm[0]), dense_solve(Jm, Fm)[0]
        assert x is not None
        assert max(abs(a - b) for a, b in zip(x, want)) < mpmath.mpf(10) ** -35 * max(abs(v) for v in want)
