"""The minimal system and the meanings of the unknowns (docs/equations.md §2.7, §2.8).

Independent checks: the minimal system against the reduced one (m(w) at 50 digits, exact
moments from its own series), the feedback set against a brute-force minimum, the Jacobian
against finite differences, and each stated meaning against the inverse of a finite pencil
built from the same random matrices.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import sympy as sp
from sympy import Rational as R
from template_laws import TEMPLATES, template_law

from gemhsa_sym.cli import main
from gemhsa_sym.free.equations.meanings import meanings
from gemhsa_sym.free.equations.minimal import CHECK_TOL, MinimalEquations, check_minimal, feedback_set
from gemhsa_sym.free.equations.series import moment_series
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian, gaussians_of
from gemhsa_sym.free.expressions.pencil import linearise
from gemhsa_sym.free.expressions.system import dyson_system
from gemhsa_sym.free.numeric.systems import DOUBLE
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.laws.spectral import spectral_law
from gemhsa_sym.layer.presets import BIDIRECTIONAL_PRESETS, PRESETS
from gemhsa_sym.sampling.polynomial import evaluate, realise, sizes_at


def _agree_with_reduced(law) -> float:
    """check_minimal's difference, after the exact moments of the minimal map's own series are
    asserted equal to those of the reduced system (parameters symbolic)."""
    minimal = law.minimal()
    assert len(minimal.unknowns) < len(law.system.unknowns)
    own, full = moment_series(law.system, 3, minimal.schedule), moment_series(law.system, 3)
    assert all(sp.expand(a - b) == 0 for a, b in zip(own, full))
    return check_minimal(minimal, law.derivation.probe, law.scale)


@pytest.mark.parametrize("name", sorted(BIDIRECTIONAL_PRESETS))
def test_minimal_system_of_every_preset_equals_the_reduced_one(name: str) -> None:
    assert _agree_with_reduced(AttentionLaw(PRESETS[name])) <= CHECK_TOL


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_minimal_system_of_the_template_laws(name: str) -> None:
    assert _agree_with_reduced(template_law(name, R(1, 2), R(3, 2), R(1, 3))) <= CHECK_TOL


def test_single_head_has_seven_unknowns_and_m_explicit() -> None:
    law = AttentionLaw(PRESETS["single-head"])
    minimal = law.minimal()
    assert len(law.system.unknowns) == 18 and len(minimal.unknowns) == 7
    assert dict(minimal.definitions)[minimal.output] == 1 / (sp.Symbol("w") - sp.Symbol("g_{v3,v3}"))
    printed, latex = str(minimal), sp.latex(minimal)
    assert printed.startswith("unknowns (7): ") and "\nwhere\n  g_{t,t} = 1/(-g_{v3,v3} + w)" in printed
    assert latex.startswith(r"\begin{aligned}") and latex.count("&=") == 7 + 8


def _acyclic(graph: dict, removed: set) -> bool:
    nodes = set(graph) - removed
    indegree = {v: sum(v in graph[u] for u in nodes) for v in nodes}
    queue = [v for v in nodes if indegree[v] == 0]
    seen = 0
    while queue:
        u = queue.pop()
        seen += 1
        for v in graph[u] & nodes:
            indegree[v] -= 1
            if indegree[v] == 0:
                queue.append(v)
    return seen == len(nodes)


def test_feedback_set_is_a_minimum_on_random_graphs() -> None:
    rng = np.random.default_rng(20261201)
    symbols = sp.symbols("a:h")
    for _ in range(40):
        graph = {u: frozenset(v for v in symbols if rng.random() < 0.3) for u in symbols}
        found = feedback_set(graph, symbols)
        assert _acyclic(graph, set(found))
        smallest = next(k for k in range(len(symbols) + 1)
                        if any(_acyclic(graph, set(c)) for c in itertools.combinations(symbols, k)))
        assert len(found) == smallest


def test_minimal_jacobian_and_w_derivative_match_finite_differences() -> None:
    law = AttentionLaw(PRESETS["single-head"])
    equations = MinimalEquations.build(law.minimal(), law.derivation.probe, DOUBLE)
    w = np.array([1.3 + 0.8j])
    c = np.array([[0.3 + 0.1j, -0.2 + 0.05j, 0.4 - 0.1j, 0.1 + 0.2j, -0.3 + 0.1j, 0.2 + 0.1j, 0.1 - 0.3j]])
    F, J, Fw = equations.linearisation(w, c)
    h = 1e-6
    for k in range(c.shape[1]):
        step = np.zeros_like(c)
        step[0, k] = h
        numeric = (equations.linearisation(w, c + step)[0] - equations.linearisation(w, c - step)[0]) / (2 * h)
        assert np.allclose(numeric[0], J[0, :, k], atol=1e-7)
    numeric_w = (equations.linearisation(w + h, c)[0] - equations.linearisation(w - h, c)[0]) / (2 * h)
    assert np.allclose(numeric_w[0], Fw[0], atol=1e-7)


def _finite_pencil_gap(polynomial, ratios, values, N: int = 40, w: complex = 1.3 + 0.7j) -> tuple[int, float]:
    """The largest gap between (1/N_a) tr R_ab of the inverse of a finite pencil of ``polynomial``
    and its meaning evaluated on the same matrices, over every unknown of its full Dyson system."""
    pencil = linearise(polynomial)
    sizes = sizes_at(ratios, values, N)
    real = realise(tuple(gaussians_of(polynomial)), sizes, values, N, np.random.default_rng(7))
    dims = [sizes[str(b.dim)] for b in pencil.blocks]
    off = np.concatenate([[0], np.cumsum(dims)])
    L = np.zeros((off[-1], off[-1]), dtype=complex)

    def add(r: int, c: int, block: np.ndarray) -> None:
        L[off[r]:off[r + 1], off[c]:off[c + 1]] += block
        if r != c:
            L[off[c]:off[c + 1], off[r]:off[r + 1]] += block.T

    for p in pencil.placements:
        add(p.row, p.col, complex(sp.sympify(p.coeff).subs(values)) * real[p.matrix])
    for c in pencil.constants:
        add(c.row, c.col, complex(sp.sympify(c.coeff).subs(values)) * np.eye(dims[c.row]))
    L[off[0]:off[1], off[0]:off[1]] -= np.eye(dims[0])  # Lambda - L, Lambda = diag(1 on s, w on t, 0)
    L[off[1]:off[2], off[1]:off[2]] -= w * np.eye(dims[1])
    R_ = np.linalg.inv(-L)
    Y = evaluate(polynomial, real, sizes, values)
    G = np.linalg.inv(w * np.eye(Y.shape[1]) - Y.T @ Y)
    middle = {"ss": np.eye(Y.shape[0]) + Y @ G @ Y.T, "st": Y @ G, "ts": G @ Y.T, "tt": G}
    names = [b.name for b in pencil.blocks]
    system = dyson_system(pencil, ratios)
    worst = 0.0
    for g, meaning in meanings(system, pencil).items():
        a, b = (names.index(x) for x in g.name[3:-1].split(","))
        true = np.trace(R_[off[a]:off[a + 1], off[b]:off[b + 1]]) / dims[a]
        M = evaluate(meaning.left, real, sizes, values) @ middle[meaning.sides] @ evaluate(meaning.right, real, sizes, values)
        if meaning.shift is not None:
            M = M + evaluate(meaning.shift, real, sizes, values)
        worst = max(worst, abs(np.trace(M) / dims[a] - true) / (1 + abs(true)))
    return len(system.unknowns), worst


@pytest.mark.parametrize("name", ["single-head", "tied-kv", "mha", "residual", "correlated-kv", "attention-matrix"])
def test_meanings_are_the_traces_of_the_finite_pencil_inverse(name: str) -> None:
    law = AttentionLaw(PRESETS[name])
    count, gap = _finite_pencil_gap(law.polynomial, law.ratios, law.derivation.probe)
    assert count > 8 and gap < 1e-10


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_meanings_of_the_template_laws(name: str) -> None:
    law = template_law(name, R(1, 2), R(3, 2), R(1, 3))
    assert _finite_pencil_gap(law.polynomial, law.ratios, law.derivation.probe)[1] < 1e-10


def test_meaning_of_the_marchenko_pastur_unknowns() -> None:
    X = Gaussian("X", Dim("n"), Dim("d"))
    law = spectral_law(X, {Dim("n"): 1, Dim("d"): R(1, 2)})
    texts = {str(g): m.text(law.pencil) for g, m in law.meanings().items()}
    assert texts["g_{t,t}"] == "(1/d) tr[G]"
    assert texts["g_{s,s}"] == "(1/n) tr[I + Y*G*Y.T]"


def test_derive_prints_the_minimal_system_and_json_has_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["derive", "single-head", "--json"]) == 0
    system = json.loads(capsys.readouterr().out)["system"]
    assert system["reduced_unknowns"] == 18 and len(system["unknowns"]) == 7
    assert len(system["meanings"]) == len(system["equations"]) == 7 and system["output"] == "g_{t,t}"
    assert {"symbol": "g_{t,t}", "meaning": "(1/d_out) tr[G]", "equation": "g_{t,t} = 1/(-g_{v3,v3} + w)"} in system["definitions"]
    assert main(["derive", "single-head"]) == 0
    out = capsys.readouterr().out
    assert "minimal system: 7 unknowns (18 in the reduced system)" in out and "reduced Dyson system" not in out
    assert "degree 20 in m, 16 in w (--full or --json prints it)" in out
    assert main(["derive", "single-head", "--full"]) == 0
    assert "reduced Dyson system" in capsys.readouterr().out

