"""Tests of the folds refined on P = dP/dm = 0 by Newton's method (docs/solving.md §3.3, ``method="polynomial"``).

Expected values come from outside the engine: the real roots of the product law's discriminant (computed by hand
from its cubic), the closed-form edges of the reference cases ii–iv, Marchenko–Pastur's (1 +- sqrt c)^2, and, for a
preset, the classified real roots of the exact discriminant.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import mpmath
import pytest
import sympy as sp
from test_free_engine import PRODUCT_EDGES, REFERENCE, mp_law, product_law, reference_law

from gemhsa_sym.cli import main
from gemhsa_sym.export.document import document
from gemhsa_sym.free.algebraic.polynomial_edges import polynomial_edges
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.layer.presets import PRESETS

TOL = mpmath.mpf(10) ** -28


def test_product_edges_refined_on_p_are_the_discriminant_s_roots():
    edges = product_law().edges(30, method="polynomial")
    assert [(e.side, e.hard, e.method, e.digits) for e in edges] == [("lower", False, "polynomial", 30), ("upper", False, "polynomial", 30)]
    with mpmath.workdps(40):
        assert all(abs(e.location - mpmath.mpf(want)) < TOL for e, want in zip(edges, PRODUCT_EDGES))


@pytest.mark.parametrize("name", ["ii", "iii", "iv"])
def test_reference_edges_refined_on_p(name):
    edges = reference_law(name).edges(30, method="polynomial")
    assert [e.side for e in edges] == ["lower", "upper"] and edges[0].hard == (name == "iii")
    with mpmath.workdps(40):
        assert all(abs(e.location - mpmath.mpf(want)) < TOL for e, want in zip(edges, REFERENCE[name].edges))


def test_marchenko_pastur_edges_refined_on_p():
    edges = mp_law(sp.Rational(1, 4)).edges(30, method="polynomial")
    with mpmath.workdps(40):
        want = [(1 - mpmath.sqrt(mpmath.mpf(1) / 4)) ** 2, (1 + mpmath.sqrt(mpmath.mpf(1) / 4)) ** 2]
        assert all(abs(e.location - w) < TOL for e, w in zip(edges, want))


def test_newton_on_p_restores_the_digits_of_a_rough_edge():
    """Folds known to 12 digits come back to 30: Newton's method, not the folds, gives the digits."""
    law = product_law()
    elimination = law.algebraic()
    rough = [dataclasses.replace(e, location=mpmath.mpf(mpmath.nstr(e.location, 12)), digits=12) for e in law.edges(30)]
    with mpmath.workdps(40):
        assert all(abs(e.location - mpmath.mpf(want)) > mpmath.mpf(10) ** -20 for e, want in zip(rough, PRODUCT_EDGES))
    refined = polynomial_edges(rough, law.stieltjes, law.scale, elimination, 30)
    with mpmath.workdps(40):
        assert all(abs(e.location - mpmath.mpf(want)) < TOL for e, want in zip(refined, PRODUCT_EDGES))


def test_a_point_inside_the_support_is_refused():
    """A 'fold' at x = 1.5, inside the product law's support, is no solution of P = dP/dm = 0 near its m."""
    law = product_law()
    inside = dataclasses.replace(law.edges(30)[1], location=mpmath.mpf("1.5"), digits=30)
    with pytest.raises(ValueError, match="not the fold|did not converge"):
        polynomial_edges([inside], law.stieltjes, law.scale, law.algebraic(), 30)


def test_mha_edges_refined_on_p_are_its_classified_discriminant_edges():
    law = AttentionLaw(PRESETS["mha"])
    refined = law.edges(30, method="polynomial")
    classified = law.algebraic_edges(30)
    assert classified is not None
    assert [(e.side, e.hard) for e in refined] == [(e.side, e.hard) for e in classified.edges]
    with mpmath.workdps(40):
        assert all(abs(a.location - b.location) <= TOL * (1 + abs(b.location)) for a, b in zip(refined, classified.edges))


def test_derive_with_polynomial_edges_skips_the_discriminant(capsys: pytest.CaptureFixture[str]):
    """``derive --edges polynomial``: the record's edges are the folds refined on P (no candidates), the product
    law's discriminant roots to 28 digits (the default of a new derivation); ``--edges discriminant`` classifies every real
    root."""
    wishart = str(Path(__file__).resolve().parents[1] / "derivations" / "wishart-product.toml")
    assert main(["derive", wishart, "--edges", "polynomial", "--json"]) == 0
    refined = json.loads(capsys.readouterr().out)
    assert refined["edge_method"] == "polynomial" and refined["edge_candidates"] == []
    with mpmath.workdps(40):
        assert all(abs(mpmath.mpf(e["location"]) - mpmath.mpf(want)) < TOL for e, want in zip(refined["edges"], PRODUCT_EDGES))
    assert main(["derive", wishart, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["edge_method"] == "polynomial"
    assert main(["derive", wishart, "--edges", "discriminant", "--json"]) == 0
    classified = json.loads(capsys.readouterr().out)
    assert classified["edge_method"] == "discriminant" and len(classified["edge_candidates"]) == 4


def test_a_record_refuses_an_unknown_edge_method():
    with pytest.raises(ValueError, match="^edges: unknown method 'fold'"):
        product_law().record(edges="fold")


def test_the_document_says_how_the_edges_were_found():
    law = product_law()
    assert "refined as a solution of $P = \\partial_m P = 0$" in document(law.record(edges="polynomial"))
    assert "real root of the discriminant of $P$" in document(law.record())
