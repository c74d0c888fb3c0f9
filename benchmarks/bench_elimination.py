"""Time the exact elimination P(m, w) = 0 of case v of the reference table, flint against SymPy.

Y = (X W1 X^T + Z/2) X W2 with n : d : d_v = 1 : 1/2 : 1/4 (docs/reference-values.md §9.2;
P has degree 12 in m and 9 in w). The same resultant elimination
(:func:`gemhsa_sym.free.algebraic.elimination.eliminate`) runs with python-flint's ``fmpq_mpoly``
and with SymPy's ``resultant``/``factor_list``, each in a child process stopped at
``--limit`` seconds; the physical solutions that choose the factors are computed once
beforehand. Prints both times and their ratio (SymPy / flint;
a lower bound when SymPy reaches the limit).

    python benchmarks/bench_elimination.py [--limit 600]
"""

from __future__ import annotations

import argparse

import sympy as sp

from gemhsa_sym.free.algebraic.elimination import available_backends, eliminate
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.laws.spectral import spectral_law

R = sp.Rational


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=600.0, help="time limit of each elimination, seconds")
    args = parser.parse_args()
    if "flint" not in available_backends():
        raise SystemExit("python-flint is not installed: nothing to compare")
    n, d, dv = Dim("n"), Dim("d"), Dim("d_v")
    X, W1, W2, Z = Gaussian("X", n, d), Gaussian("W1", d, d), Gaussian("W2", d, dv), Gaussian("Z", n, n)
    law = spectral_law((X @ W1 @ X.T + Z / 2) @ X @ W2, {n: 1, d: R(1, 2), dv: R(1, 4)})
    solutions = law.solver().solutions()
    seconds = {}
    for backend in ("flint", "sympy"):
        e = eliminate(law.system, law.values, lambda: solutions, time_limit=args.limit, backend=backend)
        seconds[backend] = e.seconds
        found = f"degree {e.degree_m} in m, {e.degree_w} in w" if e.polynomial is not None else e.reason
        print(f"{backend:6s} {e.seconds:9.2f} s  {found}")
    bound = "" if seconds["sympy"] < args.limit else " (at least: SymPy reached the limit)"
    print(f"ratio sympy / flint: {seconds['sympy'] / seconds['flint']:.1f}{bound}")


if __name__ == "__main__":
    main()
