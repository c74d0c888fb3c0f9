"""The Python examples of the README and docs run as printed, use only the public face, and print what
their comments say."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import sympy as sp

import gemhsa_sym as gs

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _examples() -> list[tuple[Path, str]]:
    files = [README, *sorted((ROOT / "docs").glob("*.md"))]
    return [(path, block) for path in files for block in re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)]


def test_every_example_imports_only_the_public_face():
    examples = _examples()
    assert examples
    for path, block in examples:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gemhsa_sym"):
                assert node.module == "gemhsa_sym" and {a.name for a in node.names} <= set(gs.__all__), (path.name, node.module)
            if isinstance(node, ast.Import):
                assert all(a.name == "gemhsa_sym" or not a.name.startswith("gemhsa_sym") for a in node.names), path.name
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "gs":
                assert node.attr in gs.__all__, (path.name, node.attr)


def test_readme_example_prints_the_product_edges_to_25_digits(tmp_path: Path):
    ((_, block),) = [(path, block) for path, block in _examples() if path == README]
    # a fresh interpreter (mpmath's global precision is the default 15 digits there) in a folder of its own
    out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    edges, moments, polynomial, mha, mine, causal, reason, stack = out.splitlines()
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
    # docs/reference-values.md §9.5: the mean e, and mu_2 = 8 + 3 e^2 + (2 + 2 e + 2 e^2) / H at H = 4
    first, second = sp.sympify(mha[:mha.index("]") + 1])
    assert first == sp.E and sp.simplify(second - (8 + 3 * sp.E**2 + (2 + 2 * sp.E + 2 * sp.E**2) / 4)) == 0
    assert 0 < float(mine) < 1 and (tmp_path / "mine.toml").is_file()
    median, error, answers = causal.split()
    assert 0 < float(median) and float(error) < 0.01 and answers == "False"
    assert "heavy tail" in reason
    # the law after layer 2 of stack-2, read from its record (which derivations --check solves again): a mean and a second
    # moment above its square, the 0.9 quantile above the mean (a right-skewed law), and no edges
    (first, second), (top, *why) = sp.sympify(stack[:stack.index("]") + 1]), stack[stack.index("]") + 1:].split(maxsplit=1)
    assert 0 < first < float(top) and second > first**2 and "lognormal" in why[0]
