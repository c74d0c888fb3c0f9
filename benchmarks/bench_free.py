"""Time the free-probability engine on three tasks, with baselines from the same run.

(a) density of MP(1/2) ⊠ MP(1/4) (Y = X2^T X1, entries of variance 1/(2p) and 1/(4p),
    ratios p : N1 : N2 = 1 : 2 : 4) on a grid in double precision: seconds for
    ``density`` alone (on a law object built beforehand), and the largest error against
    50-digit values from the cubic of the product's Stieltjes transform at about 20 grid
    points;
(b) density of (X W1 X^T + s Z) X W2 (s = 1/2; n : d : d_v = 1 : 1/2 : 1/4) on a grid,
    as a ratio to one numpy Monte Carlo draw of the same matrix at N = 2000 (draws,
    matrix products, Gram matrix and eigvalsh);
(c) seconds for one value of the Stieltjes transform at 50 digits.

(a) and (b) are timed twice: from the Dyson system alone, once ``law.solver()`` has prepared it
(the reduced system in double precision and its kernel tables), and from the root of P(m, w) = 0
(``method="polynomial"``) once ``law.algebraic()`` has found it and ``law.solver("polynomial")``
has prepared it (the Dyson system as before, P in double precision and its start at i top). The
preparations are printed beside, paid once per law, as is the load of the compiled continuation
kernel (both methods) from numba's cache, paid once per process (before the timings).

With ``--json`` the figures come as one object instead: ``"density_ratio"`` is (b) from the
Dyson system (the default method; target: at most 0.01), ``"density_ratio_with_setup"`` the same
with the preparation counted, ``"density_ratio_polynomial"`` from the root of P, and
``"prepare_s"`` and ``"prepare_s_polynomial"`` the preparations of (b).

    python benchmarks/bench_free.py [--points 1000] [--N 2000] [--repeat 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import time

import mpmath
import numpy as np
import sympy as sp
from timing import best_times

from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.laws.spectral import spectral_law

R = sp.Rational


def product_law():
    p, n1, n2 = Dim("p"), Dim("N1"), Dim("N2")
    x1 = Gaussian("X1", p, n1, scale=R(1, 2))
    x2 = Gaussian("X2", p, n2, scale=R(1, 4))
    return spectral_law(x2.T @ x1, {p: 1, n1: 2, n2: 4})


def attention_law():
    n, d, dv = Dim("n"), Dim("d"), Dim("d_v")
    x, w1, w2, z = Gaussian("X", n, d), Gaussian("W1", d, d), Gaussian("W2", d, dv), Gaussian("Z", n, n)
    return spectral_law((x @ w1 @ x.T + z / 2) @ x @ w2, {n: 1, d: R(1, 2), dv: R(1, 4)})


def eliminate_all(laws: list) -> tuple[float, float]:
    """Find P(m, w) for every law, then prepare its root (``law.solver("polynomial")``); the mean
    seconds per law of each."""
    start = time.perf_counter()
    for law in laws:
        if law.algebraic().polynomial is None:
            raise RuntimeError(f"no P(m, w) for {law}")
    found = time.perf_counter()
    for law in laws:
        law.solver("polynomial")
    return (found - start) / len(laws), (time.perf_counter() - found) / len(laws)


def prepare_dyson(laws: list) -> float:
    """Build every law's Dyson system in double precision and its kernel tables; the mean seconds
    per law."""
    start = time.perf_counter()
    for law in laws:
        _ = law.solver().dyson.tables
    return (time.perf_counter() - start) / len(laws)


def load_kernel() -> float:
    """Seconds to load the compiled continuation kernel (numba's cache; a compile on the first run
    ever): the first law built in the process (its reductions follow the branch) against a second."""
    start = time.perf_counter()
    product_law().density(np.array([0.5]))
    first = time.perf_counter()
    product_law().density(np.array([0.5]))
    return 2 * first - start - time.perf_counter()


def product_density_50(x: mpmath.mpf) -> mpmath.mpf:
    """Density of the N1 x N1 product law at x from its cubic, 2 m^3 x^2 + m^2 x - 4 m x - m + 4 = 0.

    (The p x p product's G = -m_p solves -G^3 z^2/8 + G^2 z/2 + G (z - 3/8) + 1 = 0 and
    m = m_p/2 + 1/(2x).) Inside the support exactly one root has Im m < 0.
    """
    with mpmath.workdps(60):
        roots = mpmath.polyroots([2 * x**2, x, -4 * x - 1, 4], maxsteps=200, extraprec=200)
        return max(mpmath.mpf(0), -min(mpmath.im(r) for r in roots)) / mpmath.pi


def monte_carlo_draw(N: int, seed: int) -> np.ndarray:
    """One draw of the eigenvalues of Y^T Y, Y = (X W1 X^T + Z/2) X W2, at n = N."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, N // 2)) / np.sqrt(N)
    w1 = rng.standard_normal((N // 2, N // 2)) / np.sqrt(N)
    w2 = rng.standard_normal((N // 2, N // 4)) / np.sqrt(N)
    z = rng.standard_normal((N, N)) / np.sqrt(N)
    y = (x @ w1 @ x.T + z / 2) @ x @ w2
    return np.linalg.eigvalsh(y.T @ y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--N", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    figures: dict[str, float] = {}

    def say(line: str) -> None:
        if not args.json:
            print(line)

    loaded = load_kernel()
    figures["kernel_load_s"] = loaded
    say(f"compiled continuation kernel loaded in {loaded:.2f} s (once per process)")
    # (a) product density in double, error against 50 digits
    grid = np.linspace(0.0, 4.0, args.points + 1)[1:]
    check = np.arange(0, args.points, max(1, args.points // 20))
    with mpmath.workdps(60):
        ref = [product_density_50(mpmath.mpf(float(grid[i]))) for i in check]
    for label, with_p in (("Dyson system", False), ("root of P", True)):
        start = time.perf_counter()
        laws = [product_law() for _ in range(args.repeat)]
        built = (time.perf_counter() - start) / args.repeat
        eliminated, prepared = eliminate_all(laws) if with_p else (0.0, prepare_dyson(laws))
        values: list[np.ndarray] = []
        method = "polynomial" if with_p else "dyson"
        seconds = best_times([lambda: values.append(laws.pop().density(grid, method=method))], args.repeat)[0]
        rho = values[0]
        err = max(abs(float(r) - rho[i]) for i, r in zip(check, ref))
        rel = max(abs(float(r) - rho[i]) / float(r) for i, r in zip(check, ref) if r > 0)
        key = "polynomial" if with_p else "dyson"
        figures |= {f"product_density_s_{key}": seconds, f"product_error_{key}": err}
        say(f"(a) MP(1/2) x MP(1/4) density, {args.points} points in double, {label}: {seconds:.4f} s "
            f"(law built in {built:.3f} s, P in {eliminated:.3f} s, prepared in {prepared:.4f} s); max error vs 50 digits at "
            f"{check.size} points: {err:.2e} absolute, {rel:.2e} relative")

    # (b) attention-type polynomial density vs one Monte Carlo draw
    mc = best_times([lambda: monte_carlo_draw(args.N, 0)], args.repeat)[0]
    top = 1.1 * float(monte_carlo_draw(args.N, 1)[-1])
    grid_b = np.linspace(0.0, top, args.points + 1)[1:]
    for label, with_p in (("Dyson system", False), ("root of P", True)):
        laws = [attention_law() for _ in range(args.repeat)]
        eliminated, prepared = eliminate_all(laws) if with_p else (0.0, prepare_dyson(laws))
        method = "polynomial" if with_p else "dyson"
        dens = best_times([lambda: laws.pop().density(grid_b, method=method)], args.repeat)[0]
        key = "_polynomial" if with_p else ""
        figures |= {"draw_s": mc, f"density_s{key}": dens, f"density_ratio{key}": dens / mc, f"prepare_s{key}": prepared}
        if not with_p:
            figures["density_ratio_with_setup"] = (dens + prepared) / mc
        say(f"(b) (X W1 X^T + Z/2) X W2 density, {args.points} points on (0, {top:.2f}], {label}: {dens:.4f} s "
            f"(P in {eliminated:.2f} s, prepared in {prepared:.4f} s); one numpy draw at N = {args.N}: {mc:.2f} s; "
            f"ratio density / draw = {dens / mc:.4f}")

    # (c) one Stieltjes value at 50 digits
    w = mpmath.mpc("0.7", "0.25")
    for name, make in (("MP(1/2) x MP(1/4)", product_law), ("(X W1 X^T + Z/2) X W2", attention_law)):
        fresh = [make() for _ in range(args.repeat)]
        sec = best_times([lambda fresh=fresh: fresh.pop().stieltjes(w, dps=50)], args.repeat)[0]
        figures[f"stieltjes_50_digits_s_{'product' if make is product_law else 'attention'}"] = sec
        say(f"(c) {name}: m(0.7 + 0.25i) at 50 digits: {sec:.3f} s")
    if args.json:
        print(json.dumps({k: float(f"{v:.4g}") for k, v in figures.items()}))


if __name__ == "__main__":
    main()
