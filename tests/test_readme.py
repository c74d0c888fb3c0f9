"""The README's Python example runs as printed and prints what its comments say."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import sympy as sp

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_prints_the_product_edges_to_25_digits():
    (block,) = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    # a fresh interpreter: mpmath's global precision is the default 15 digits there
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, check=True).stdout
    edges, moments, polynomial = out.splitlines()[:3]
    # docs/reference-values.md §9.3: edges of MP(1/2) ⊠ MP(1/4); mean 1 and second moment 7/4
    # of the p x p product, halved for Y^T Y (N1 = 2p: an atom 1/2 at 0)
    assert "Edge(location=0.0559355743188757665634401" in edges
    assert "Edge(location=3.7466902226770647839650331" in edges
    assert moments.startswith("[1/2, 7/8, ")
    # the cubic of docs/reference-values.md §9.3 for the p x p transform G (s there),
    # -G^3 z^2/8 + G^2 z/2 + G (z - 3/8) + 1 = 0, with G = 1/z - 2m (the N1 x N1 law adds
    # the atom: m = -G/2 + 1/(2z))
    m, z = sp.symbols("m w")
    G = 1 / z - 2 * m
    cubic = sp.numer(sp.together(-G**3 * z**2 / 8 + G**2 * z / 2 + G * (z - sp.Rational(3, 8)) + 1))
    assert sp.rem(sp.Poly(cubic, m), sp.Poly(sp.sympify(polynomial), m)).is_zero
