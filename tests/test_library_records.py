"""Presets answered from the library's records (docs/exports.md §5.3): the same record as a fresh derivation, edges
refined on P by default for a new one, a record of another configuration or version left alone with a warning, and a
tampered P(m, w) refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import mpmath
import pytest

import gemhsa_sym as gs
from gemhsa_sym.cli import main
from gemhsa_sym.export.record import record_from_json
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.library import LIBRARY
from gemhsa_sym.library.catalogue import library_law, library_record

#: Keys of numbers computed in floating point, and the relative agreement asked of them.
FLOATS = {"float", "mass", "error"}
FLOAT_TOL = 1e-9
#: Agreement asked of two edges found by different methods (docs/solving.md §3.3).
EDGE_TOL = mpmath.mpf(10) ** -25


def same(a: Any, b: Any, key: str = "") -> None:
    """``a`` equals ``b``: exact fields exactly, floats to FLOAT_TOL, edge locations to EDGE_TOL."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), key
        for k in a:
            same(a[k], b[k], k)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), key
        for x, y in zip(a, b):
            same(x, y, key)
    elif key in FLOATS and isinstance(a, float):
        assert a == pytest.approx(b, rel=FLOAT_TOL, abs=FLOAT_TOL), key
    elif key == "location" and isinstance(a, str):
        with mpmath.workdps(40):
            assert abs(mpmath.mpf(a) - mpmath.mpf(b)) <= EDGE_TOL * (1 + abs(mpmath.mpf(a))), key
    else:
        assert a == b, key


def same_edges(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    """The same edges (side, hardness, location to EDGE_TOL), found by different methods."""
    assert [(e["side"], e["hard"]) for e in a] == [(e["side"], e["hard"]) for e in b]
    same([e["location"] for e in a], [e["location"] for e in b], "location")


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["derive", *argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_preset_read_from_the_library_is_the_fresh_derivation(capsys: pytest.CaptureFixture[str]) -> None:
    read = run_json(capsys, "single-head")
    assert read.pop("timing")["source"] == "the library's record"
    fresh = run_json(capsys, "single-head", "--recompute", "--edges", "discriminant")
    assert fresh.pop("timing")["source"] == "derived"
    same(read, fresh)
    default = run_json(capsys, "single-head", "--recompute")  # a new derivation refines the folds on P
    assert default["edge_method"] == "polynomial"
    same_edges(read["edges"], default["edges"])


def test_a_preset_with_a_change_is_derived(capsys: pytest.CaptureFixture[str]) -> None:
    changed = run_json(capsys, "single-head", "--beta", "1/2")
    assert changed["timing"]["source"] == "derived" and changed["config"]["beta"] == "1/2"


def test_the_library_law_takes_p_and_the_record_from_the_library() -> None:
    law = gs.law("tied-kv")
    committed = json.loads((LIBRARY / "tied-kv.json").read_text())
    assert isinstance(law, AttentionLaw) and law.record() is law.known
    same(law.record().to_json(), committed)
    elimination = law.algebraic()
    assert elimination.method == "series guess" and (elimination.degree_m, elimination.degree_w) == (26, 19)
    refined = law.edges(30, "polynomial")  # the folds refined on the record's P against the record's discriminant edges
    same_edges([{"location": mpmath.nstr(e.location, 30), "side": e.side, "hard": e.hard} for e in refined],
               committed["edges"])
    assert law.record(dps=20) is not law.known  # another request is computed, with the record's P


def test_a_tampered_polynomial_is_refused() -> None:
    data = json.loads((LIBRARY / "mha.json").read_text())
    terms = data["exact"]["polynomial"]["terms"]
    terms[0][1] = str(int(terms[0][1].split("/")[0]) + 1)
    law = AttentionLaw(gs.presets()["mha"], known=record_from_json(data))
    with pytest.raises(ValueError, match="does not vanish on the physical solution"):
        law.algebraic()


@pytest.mark.parametrize("change, why", [({"version": "0.0.1"}, "was written by version 0.0.1"),
                                         ({"config": {"beta": "2"}}, "is the record of another configuration")])
def test_a_record_of_another_version_or_configuration_is_not_used(tmp_path: Path, change: dict[str, Any], why: str) -> None:
    for suffix in (".toml", ".json"):
        shutil.copy(LIBRARY / f"mha{suffix}", tmp_path / f"mha{suffix}")
    data = json.loads((tmp_path / "mha.json").read_text())
    data.update({k: {**data[k], **v} if isinstance(v, dict) else v for k, v in change.items()})
    (tmp_path / "mha.json").write_text(json.dumps(data))
    with pytest.warns(UserWarning, match=f"mha.json is not used \\(it {why}"):
        assert library_record("mha", gs.presets()["mha"], tmp_path) is None
    with pytest.warns(UserWarning, match=why):
        assert library_law("mha", tmp_path) is None
