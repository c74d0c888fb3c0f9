"""The causal layer's masked scores as a two-point Dyson equation, checked against Monte Carlo.

docs/extensions.md §8.6: the masked scores of the causal Gaussian equivalent act like masked scores
whose queries are fresh tokens, so that, given the tokens and weights, the rows of the equivalent
without c_0 are independent Gaussian vectors; row t (t = i / n) has covariance C_t / n with

    C_t = t^-2 V^T (mu_1^2 B_t M B_t + sigma^2 B_t) V,   B_t = X^T P_t X,

X the tokens (entries N(0, 1/n)), P_t keeping the keys u <= t, M = W^T W for the query-key weights
W and V the value-output weights. Two steps give m(w) = tau((w - Y^T Y)^-1):

1. *Rows given the tokens* (the deterministic equivalent of a Gram matrix with independent rows):
   R = (H - w)^-1 with H = int C_t / (1 + delta(t)) dt and delta(t) = (1/n) tr(C_t R), m = -tau(R).
   The query positions t are the nodes t_k of a graded Gauss-Legendre rule (weights omega_k), so
   H = sum_k phi_k C_k with phi_k = omega_k / (1 + delta_k).
2. *H given the weights phi_k* is a polynomial in Gaussian matrices in which the tokens X occur
   *masked*: X^T P_k X for every node; its Dyson equation is the two-point equation of
   docs/equations.md §2.11.

The equation is the engine's (``gemhsa_sym.free.positions.two_point``, docs/solving.md §3.13); this study
checks it against Monte Carlo of the models, m(w) as the mean of 1 / (w - lambda) over pooled spectra:
(w) the model without weights with fresh queries, and the single-head causal Gaussian equivalent
without c_0 at unit ratios (softmax coefficients mu_1 = beta, sigma^2 = e^{beta^2} - 1 - beta^2): (b)
with its own queries and (f) with fresh ones, spectra of the column-centred Y as in ``causal_parts.py``;
and the contrast: the same equation with the masked scores replaced by independent noise of the same
variance (mu_1 = 0, sigma^2 -> mu_1^2 + sigma^2), which Monte Carlo tells apart from (b). The
generic pairings are checked against the equations written out by hand in tests/test_two_point.py.

numpy, and the engine; seeds from numpy's SeedSequence. For example

    OMP_NUM_THREADS=2 python docs/studies/causal_two_point.py --n 1000 2000 --draws 2

and, for the distribution function of the single head's law (the engine's, with its achieved error,
docs/solving.md §3.11) against the pooled spectra of (b), with quantiles and the Kolmogorov-Smirnov
distance:

    OMP_NUM_THREADS=2 python docs/studies/causal_two_point.py --n 2000 --draws 4 --cdf
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence

import numpy as np

from gemhsa_sym.free.positions.masked_pencil import heads_pencil, weightless_pencil
from gemhsa_sym.free.positions.profiles import Quadrature
from gemhsa_sym.free.positions.two_point import TwoPointSystem, solve
from gemhsa_sym.laws.causal import QUANTILES, causal_distribution
from gemhsa_sym.laws.causal_law import CausalLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.verification.distances import empirical_ks

#: Points of the upper half plane where m(w) is compared.
POINTS: tuple[complex, ...] = (0.2 + 0.5j, 1 + 1j, 5 + 2j, 20 + 5j)
#: The node levels (Gauss-Legendre order per panel, octaves) at which m(w) is printed.
LEVELS: tuple[tuple[int, int], ...] = ((3, 8), (4, 8), (6, 8))
UNIT = {"d": 1.0, "d_k": 1.0, "d_v": 1.0, "d_out": 1.0}


def draw(n: int, seed: np.random.SeedSequence, mu1: float, sigma2: float) -> dict[str, np.ndarray]:
    """Spectra of one draw at unit ratios: (w) the weightless model with fresh queries (eigenvalues of
    Y^T Y), (b) and (f) the single head without c_0, own and fresh queries (column-centred Y, as in
    ``causal_parts.py``: tokens N(0, 1), weights N(0, 1 / width), scores / sqrt(d_k), rows / i)."""
    rng = np.random.default_rng(seed)
    rows = np.arange(1, n + 1, dtype=float)[:, None]
    X = rng.standard_normal((n, n))
    G = rng.standard_normal((n, n))
    Z = rng.standard_normal((n, n))
    W_Q, W_K, W_V = (rng.normal(0.0, n**-0.5, (n, n)) for _ in range(3))
    W_O = rng.normal(0.0, n**-0.5, (n, n))
    sigma = math.sqrt(sigma2)
    out = {}
    A = np.tril(mu1 * (G @ X.T) / n + sigma * Z / math.sqrt(n))  # entries of the normalised model
    out["w"] = np.linalg.eigvalsh(((A @ X) / math.sqrt(n) * (n / rows)).T @ ((A @ X) / math.sqrt(n) * (n / rows)))
    VW = (X @ W_V) @ W_O
    K = X @ W_K
    for name, queries in (("b", X), ("f", G)):
        S = np.tril(mu1 * (queries @ W_Q) @ K.T / math.sqrt(n) + sigma * Z)
        Y = (S @ VW) / rows
        Y -= Y.mean(axis=0)
        out[name] = np.linalg.eigvalsh(Y.T @ Y)
    return out


def compare_distribution(n: int, draws: int, seed: int, mu1: float, sigma2: float) -> None:
    """Quantiles and KS of the single head's law (the engine's distribution function on its grid, with its
    achieved error) against the pooled spectra of (b), and the floor: KS between the first draw and the others."""
    config = Config(mask="causal", beta=mu1)
    spectra = [draw(n, s, mu1, sigma2)["b"] for s in np.random.SeedSequence(seed).spawn(draws)]
    pooled = np.sort(np.concatenate(spectra))
    first, rest = np.sort(spectra[0]), np.sort(np.concatenate(spectra[1:]))
    floor = np.max(np.abs(np.searchsorted(first, pooled, side="right") / first.size
                          - np.searchsorted(rest, pooled, side="right") / rest.size))
    print(f"n = {n}, {draws} draws of (b): quantiles 0.1, 0.5, 0.9, 0.99 "
          + ", ".join(f"{np.quantile(pooled, q):.4g}" for q in QUANTILES)
          + f"; F(1e-4) {np.mean(pooled < 1e-4):.4f}; KS(one draw, the others) {floor:.4f}", flush=True)
    start = time.perf_counter()
    law = causal_distribution(config)
    print(f"  law at {law.nodes} nodes, level {law.level} ({time.perf_counter() - start:.0f} s, achieved error {law.error:.1e}): "
          "quantiles " + ", ".join(f"{q:.4g}" for q in law.covered_quantiles(QUANTILES))
          + f"; F(1e-4) {law.cdf[0]:.4f}; F(1e4) {law.cdf[-1]:.4f}; KS {empirical_ks(CausalLaw(config, law), pooled):.4f}", flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="*", default=[1000, 2000], help="token counts (= every width) of the draws")
    parser.add_argument("--draws", type=int, default=2, help="draws per n")
    parser.add_argument("--seed", type=int, default=7, help="root of numpy's SeedSequence")
    parser.add_argument("--beta", type=float, default=1.0, help="inverse temperature of the softmax score")
    parser.add_argument("--cdf", action="store_true", help="instead: the law's distribution function against (b) at the last --n")
    args = parser.parse_args(argv)
    mu1, sigma2 = args.beta, math.exp(args.beta**2) - 1 - args.beta**2
    if args.cdf:
        compare_distribution(args.n[-1], args.draws, args.seed, mu1, sigma2)
        return
    w = np.array(POINTS)
    print(f"mu_1 = {mu1}, sigma^2 = {sigma2:.6f}; m(w) at w = {', '.join(f'{x:g}' for x in POINTS)}")
    for order, octaves in LEVELS:
        rule = Quadrature.graded(1, octaves, order)
        start = time.perf_counter()
        mw = solve(TwoPointSystem(weightless_pencil(rule.size, 1.0), rule, mu1**2, sigma2), w)[0]
        ms = solve(TwoPointSystem(heads_pencil(rule.size, 1, UNIT), rule, mu1**2, sigma2), w)[0]
        mn = solve(TwoPointSystem(heads_pencil(rule.size, 1, UNIT), rule, 0.0, mu1**2 + sigma2), w)[0]
        print(f"K = {rule.size} nodes ({time.perf_counter() - start:.1f} s)")
        print("  weightless  " + "  ".join(f"{m:.5f}" for m in mw))
        print("  single head " + "  ".join(f"{m:.5f}" for m in ms))
        print("  noise only  " + "  ".join(f"{m:.5f}" for m in mn), flush=True)
    root = np.random.SeedSequence(args.seed)
    for n in args.n:
        spectra = [draw(n, s, mu1, sigma2) for s in root.spawn(args.draws)]
        for name in ("w", "b", "f"):
            ms = np.array([[np.mean(1 / (x - lam[name])) for x in POINTS] for lam in spectra])
            spread = np.max(np.abs(ms - ms.mean(0))) if args.draws > 1 else float("nan")
            print(f"n = {n} ({name}) " + "  ".join(f"{m:.5f}" for m in ms.mean(0)) + f"   spread {spread:.1e}", flush=True)


if __name__ == "__main__":
    main()
