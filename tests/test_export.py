"""Records, LaTeX documents and the derivations library.

The documents are compiled with pdflatex when it is installed (CI installs it):
no errors, no line wider than the page. The library's committed records must be
reproduced by a fresh derivation (``derivations --check``).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import sympy as sp

from gemhsa_sym.cli import main
from gemhsa_sym.export.document import document
from gemhsa_sym.export.latex import WIDTH, broken_sum, collected_terms, entry, named_terms, packed, printed_width, terms_of
from gemhsa_sym.export.record import LawRecord, record_from_json
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.laws.polynomial import ModelLaw
from gemhsa_sym.laws.spectral import spectral_law
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.library.catalogue import load, verification
from gemhsa_sym.library.check import check

LIBRARY = Path(__file__).resolve().parent.parent / "derivations"
#: Derivations cheap enough for the default run; the whole library is checked in the slow run.
QUICK = ["marchenko-pastur", "wishart-product", "head-plus-noise", "single-head", "causal-single-head", "causal-mha", "stack-2"]


def compile_latex(text: str, tmp_path: Path) -> str:
    """pdflatex ``text``; returns the log (skips when pdflatex is missing)."""
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex is not installed")
    src = tmp_path / "doc.tex"
    src.write_text(text)
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", src.name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert run.returncode == 0, log[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 1000
    return log


def overfull(log: str, limit_pt: float = 1.0) -> list[str]:
    """Overfull horizontal boxes wider than ``limit_pt``."""
    return [m.group(0) for m in re.finditer(r"Overfull \\hbox \(([\d.]+)pt too wide\)[^\n]*", log) if float(m.group(1)) > limit_pt]


def test_long_sums_are_broken_and_short_ones_are_not() -> None:
    x = sp.Symbol("x")
    long = sum(sp.Rational(k, 7) * x**k for k in range(1, 40))
    block = broken_sum("P(x)", terms_of(long))
    lines = block.split(r" \\")
    assert len(lines) > 3
    for line in lines:
        assert printed_width(line.replace(r"\begin{align*}", "").replace(r"\end{align*}", "")) <= 62 + 20
    assert r" \\" not in broken_sum("y", terms_of(x + 1))
    assert broken_sum("y", terms_of(-x - 1)).count("- ") == 2  # minus signs survive the joins


def test_packed_equations_fill_lines() -> None:
    items = [f"a_{{{k}}} = {k}" for k in range(60)]
    block = packed(items)
    assert block.count(r" \\") >= 3 and all(item in block for item in items)


@pytest.fixture(scope="module")
def product_record() -> LawRecord:
    X1 = Gaussian("X1", Dim("p"), Dim("N1"), scale=sp.Rational(1, 2))
    X2 = Gaussian("X2", Dim("p"), Dim("N2"), scale=sp.Rational(1, 4))
    return spectral_law(X2.T @ X1, {Dim("p"): 1, Dim("N1"): 2, Dim("N2"): 4}).record(30)


def test_record_is_json_and_holds_the_exact_results(product_record: LawRecord) -> None:
    record = json.loads(json.dumps(product_record.to_json()))
    assert record_from_json(record) == product_record
    # docs/reference-values.md §9.3: MP(1/2) ⊠ MP(1/4) has mean 1 and second moment 7/4 on p;
    # on N1 (twice as many eigenvalues, half of them zero) mean 1/2 and second moment 7/8;
    # edges 0.05593..., 3.74669...
    assert [m["exact"] for m in record["moments"][:2]] == ["1/2", "7/8"]
    assert [e["location"][:28] for e in record["edges"]] == ["0.05593557431887576656344017", "3.74669022267706478396503313"]
    assert record["atoms"][0]["exact"] == "1/2"
    assert sp.degree(sp.sympify(record["polynomial"]), sp.Symbol("m")) == 3


def test_document_compiles_without_overfull_lines(product_record: LawRecord, tmp_path: Path) -> None:
    log = compile_latex(document(product_record), tmp_path)
    assert overfull(log) == []


def test_single_head_document_compiles(tmp_path: Path) -> None:
    """An attention preset: P of degree 20, symbolic moments in beta, a 6 x 6 sector."""
    record = record_from_json(json.loads((LIBRARY / "single-head.json").read_text()))
    text = (LIBRARY / "single-head.tex").read_text()
    assert text == document(record, verification(LIBRARY / "single-head.toml"))
    assert "Monte Carlo" in text
    log = compile_latex(text, tmp_path)
    assert overfull(log) == []


def test_law_to_latex_and_notebook_repr() -> None:
    law = spectral_law(Gaussian("X", Dim("n"), Dim("d")), {Dim("n"): 1, Dim("d"): sp.Rational(1, 2)})
    text = law.to_latex()
    assert text.startswith(r"\documentclass") and r"\end{document}" in text and "P(m, w)" in text
    shown = law._repr_latex_()
    assert shown.startswith("$") and "X" in shown and r"\allowbreak" not in shown
    # the minimal system of Marchenko–Pastur: g_ss = -2/(g_tt - 2) and m = g_tt = 1/(w - g_ss)
    assert r"g_{s,s} &= - \frac{2}{g_{t,t} - 2}" in shown and r"m(w) &= g_{t,t}" in shown


def test_polynomial_models_read_from_toml(tmp_path: Path) -> None:
    law = ModelLaw(PolynomialModel({"polynomial": "X * W", "dimensions": {"n": "1", "d": "1/2", "m": "3/4"},
                                    "gaussians": {"X": {"rows": "n", "cols": "d"}, "W": {"rows": "d", "cols": "m"}}}))
    assert law.moments(2) == [sp.Rational(1, 2), sp.Rational(13, 16)]  # docs/reference-values.md §9.2, case ii
    with pytest.raises(ValueError, match="polynomial"):
        ModelLaw(PolynomialModel({"polynomial": "X *", "dimensions": {"n": "1"}, "gaussians": {"X": {"rows": "n", "cols": "n"}}}))
    with pytest.raises(ValueError, match="missing field"):
        ModelLaw(PolynomialModel({"polynomial": "X"}))


def test_library_has_every_preset_and_the_examples() -> None:
    from gemhsa_sym.layer.presets import PRESETS

    names = {p.stem for p in LIBRARY.glob("*.toml")}
    assert set(PRESETS) | {"marchenko-pastur", "wishart-product", "head-plus-noise"} <= names
    for name in names:
        assert (LIBRARY / f"{name}.json").exists() and (LIBRARY / f"{name}.tex").exists()
    assert load(LIBRARY / "mqa.toml").config.name == "mqa"


def test_wide_sums_are_named_in_one_sequence_across_formulas() -> None:
    """A product of two wide sums names them F_1, F_2; a second formula named from 3 on (as a key-weighted record names
    those of S after those of Y) does not repeat a name."""
    from gemhsa_sym.free.expressions.matrices import Dim, Gaussian

    n = Dim("n")
    W = [Gaussian(f"W_{{Q,{k}}}", n, n) for k in range(8)]
    wide = sp.MatAdd(*[W[k] * W[(k + 1) % 8] * W[(k + 2) % 8] for k in range(8)])
    assert [name for name, _ in named_terms(wide * W[0] * wide)[1]] == [r"\mathcal{F}_{1}", r"\mathcal{F}_{2}"]
    assert [name for name, _ in named_terms(wide * W[0] * wide, first=3)[1]] == [r"\mathcal{F}_{3}", r"\mathcal{F}_{4}"]


def test_polynomials_are_collected_in_powers_of_m_with_factored_coefficients() -> None:
    m, w = sp.symbols("m w")
    P = sp.expand((w**2 - 1) * m**2 - 3 * w * m + 2)
    assert collected_terms(P, m) == [r"\left(w - 1\right) \left(w + 1\right) m^{2}", "-3 w m", "2"]
    wide = sp.expand(w**3 * sum((k + 1) * w**k for k in range(40)) * m + m**2)  # an irreducible factor of 40 terms
    terms = collected_terms(wide, m)
    assert terms[0] == "m^{2}" and terms[1].startswith(r"w^{3} m \bigl(") and terms[-1].endswith(r"\bigr)")
    assert len(terms) == 41
    assert all(printed_width(line) <= 62 + 20 for line in broken_sum("P", terms).split(r" \\"))


def test_check_catches_a_changed_record(tmp_path: Path) -> None:
    for suffix in (".toml", ".json", ".tex", ".verify.json"):
        shutil.copy(LIBRARY / f"marchenko-pastur{suffix}", tmp_path / f"marchenko-pastur{suffix}")
    assert check(tmp_path) == []
    record = json.loads((tmp_path / "marchenko-pastur.json").read_text())
    record["moments"][1]["exact"] = "7/4"
    record["edges"][1]["location"] = record["edges"][1]["location"][:-3] + "999"  # beyond 30 digits: tolerated
    (tmp_path / "marchenko-pastur.json").write_text(json.dumps(record, indent=2) + "\n")
    assert {d.where for d in check(tmp_path)} == {"moments[1].exact", "document"}


def test_check_finds_the_edges_the_way_the_committed_record_did(tmp_path: Path) -> None:
    """A record written with the folds refined on P (as where the discriminant ran out of time) is checked with
    them, not against the discriminant's classification that the default would try first."""
    for suffix in (".toml", ".verify.json"):
        shutil.copy(LIBRARY / f"wishart-product{suffix}", tmp_path / f"wishart-product{suffix}")
    path = tmp_path / "wishart-product.toml"
    record = dataclasses.replace(load(path).record(30, edges="polynomial"), name="wishart-product")
    assert record.edge_method == "polynomial" and not record.edge_candidates
    assert json.loads((LIBRARY / "wishart-product.json").read_text())["edge_method"] == "discriminant"
    (tmp_path / "wishart-product.json").write_text(json.dumps(record.to_json(), indent=2) + "\n")
    (tmp_path / "wishart-product.tex").write_text(document(record, verification(path)))
    assert check(tmp_path) == []
    shutil.copy(LIBRARY / "wishart-product.json", tmp_path / "wishart-product.json")
    shutil.copy(LIBRARY / "wishart-product.tex", tmp_path / "wishart-product.tex")
    assert check(tmp_path) == []


def test_derivations_check_quick(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["derivations", "--check", "--dir", str(LIBRARY), "--only", *QUICK]) == 0
    assert "OK" in capsys.readouterr().out


@pytest.mark.slow
def test_derivations_check_whole_library(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["derivations", "--check", "--dir", str(LIBRARY)]) == 0


def appendix_page(pdf: Path) -> int:
    """The page on which the word "Appendix" first appears (pdftotext; skips when it is missing)."""
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext is not installed")
    pages = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split("\f")
    return next(k for k, page in enumerate(pages, 1) if "Appendix" in page)


@pytest.mark.parametrize("name", sorted(p.stem for p in LIBRARY.glob("*.tex")))
def test_every_library_document_compiles(name: str, tmp_path: Path) -> None:
    """No overfull box over 1 pt, and the main part (before "Appendix") within two pages."""
    log = compile_latex((LIBRARY / f"{name}.tex").read_text(), tmp_path)
    assert overfull(log) == []
    assert appendix_page(tmp_path / "doc.pdf") <= 2


def test_verification_records_enter_the_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """derivations --verify draws the Monte Carlo, writes NAME.verify.json and a document that states its figures;
    --check then reads the record and finds the library consistent."""
    for suffix in (".toml", ".json", ".tex"):
        shutil.copy(LIBRARY / f"marchenko-pastur{suffix}", tmp_path / f"marchenko-pastur{suffix}")
    assert main(["derivations", "--verify", "--dir", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "marchenko-pastur.verify.json").read_text())
    assert [row["n"] for row in data["by_n"]] == [1000, 2000] and data["seed"] == 0
    tex = (tmp_path / "marchenko-pastur.tex").read_text()
    for row in data["by_n"]:
        assert f"at $n = {row['n']}$ KS to the samples {row['ks']['theory_polynomial']:.4f} (floor {row['floor']['ks']:.4f}" in tex
        assert row["ks"]["theory_polynomial"] < 0.02  # Marchenko–Pastur(1/2) against its own Gaussian samples
    assert check(tmp_path) == []
    (tmp_path / "marchenko-pastur.verify.json").write_text(json.dumps({"by_n": []}))
    capsys.readouterr()
    assert main(["derivations", "--check", "--dir", str(tmp_path)]) == 2
    assert "marchenko-pastur.verify.json: not a verification record" in capsys.readouterr().err
    (tmp_path / "marchenko-pastur.verify.json").write_text("{")
    assert main(["derivations", "--write", "--dir", str(tmp_path)]) == 2
    assert "marchenko-pastur.verify.json is not valid JSON" in capsys.readouterr().err


def causal_entry(folder: Path) -> dict:
    """A causal entry in ``folder``: the square score's causal layer, with F(x) = x / (1 + x) on a log grid standing
    for its law (the check does not recompute a law: docs/exports.md §5.5), its record and document."""
    import numpy as np

    from gemhsa_sym.export.positional_document import causal_document
    from gemhsa_sym.export.positional_record import causal_record
    from gemhsa_sym.free.positions.distribution_function import Distribution
    from gemhsa_sym.layer.config import Config

    config = Config(name="square-causal", mask="causal", score="square")
    x = np.geomspace(1e-4, 1e4, 65)
    record = causal_record(config, Distribution(x, x / (1 + x), (1 + x) ** -2.0, 1e-3, 2, 99), "square-causal")
    (folder / "square-causal.toml").write_text(config.to_toml())
    (folder / "square-causal.json").write_text(json.dumps(record, indent=2) + "\n")
    (folder / "square-causal.tex").write_text(causal_document(record))
    return record


def test_causal_records_are_checked_without_recomputing_their_law(tmp_path: Path) -> None:
    """check passes on a causal record and its document; a quantile that does not follow from the committed table, a
    moved probe (m(w) solved again on the first level) and a table that is no distribution function are named."""
    record = causal_entry(tmp_path)
    assert record["quantiles"]["x"][1] == pytest.approx(1.0, rel=1e-3) and record["tail_exponent"] == pytest.approx(1, abs=0.05)
    assert check(tmp_path) == []
    for change, where in ((lambda r: r["quantiles"]["x"].__setitem__(1, 2.0), "quantiles.x[1]"),
                          (lambda r: r["probes"]["m"][1].__setitem__(0, r["probes"]["m"][1][0] * 1.001), "probes.m(1+1i)"),
                          (lambda r: r["cdf"]["F"].__setitem__(3, 0.9), "cdf")):
        changed = json.loads(json.dumps(record))
        change(changed)
        (tmp_path / "square-causal.json").write_text(json.dumps(changed))
        assert where in {d.where for d in check(tmp_path)}


def test_fill_cache_keeps_the_checked_causal_laws_where_verify_reads_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--fill-cache stores the committed table (the stand-in F(x) = x / (1 + x), which no solve gives) where the cache
    of verify and claims finds it; a record that fails its check is refused before anything is stored."""
    import numpy as np

    from gemhsa_sym.layer.config import Config
    from gemhsa_sym.verification.theory import cache_file, theory_task

    folder, cache = tmp_path / "library", tmp_path / "cache"
    folder.mkdir()
    record = causal_entry(folder)
    assert main(["derivations", "--fill-cache", "--dir", str(folder)]) == 2
    assert "cache: --fill-cache needs --cache DIR" in capsys.readouterr().err
    (folder / "mp.toml").write_text((LIBRARY / "marchenko-pastur.toml").read_text())
    assert main(["derivations", "--fill-cache", "--dir", str(folder), "--cache", str(cache), "--only", "mp"]) == 2
    assert "only: mp is not a causal entry" in capsys.readouterr().err and not cache.exists()
    assert main(["derivations", "--fill-cache", "--dir", str(folder), "--cache", str(cache)]) == 0
    assert "kept 1 causal laws" in capsys.readouterr().out
    config = Config(name="square-causal", mask="causal", score="square")
    table = theory_task(config, True, str(cache))
    x = np.array(record["cdf"]["x"])
    assert np.array_equal(table.grid, x) and np.array_equal(table.table, x / (1 + x)) and table.detail["nodes"] == 99
    cache_file(cache, config, True).unlink()
    record["quantiles"]["x"][1] *= 2
    (folder / "square-causal.json").write_text(json.dumps(record))
    assert main(["derivations", "--fill-cache", "--dir", str(folder), "--cache", str(cache)]) == 2
    assert "differs from its regeneration (square-causal: quantiles.x[1]" in capsys.readouterr().err
    assert not cache_file(cache, config, True).exists()


def test_derive_reads_a_causal_law_kept_in_the_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """derive --cache reads a causal law kept before (here the stand-in F(x) = x / (1 + x), whose median 1 no solve
    gives) and says so; a law that is not causal is refused the option before any work."""
    folder, cache = tmp_path / "library", tmp_path / "cache"
    folder.mkdir()
    causal_entry(folder)
    assert main(["derivations", "--fill-cache", "--dir", str(folder), "--cache", str(cache)]) == 0
    capsys.readouterr()
    assert main(["derive", str(folder / "square-causal.toml"), "--cache", str(cache), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["timing"]["source"] == "read from the cache"
    assert dict(zip(report["quantiles"]["q"], report["quantiles"]["x"]))[0.5] == pytest.approx(1.0, rel=1e-3)
    assert main(["derive", str(folder / "square-causal.toml"), "--cache", str(cache)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("read from the cache in ")
    assert main(["derive", "mha", "--cache", str(cache)]) == 2
    assert "--cache: only a causal layer's law is kept" in capsys.readouterr().err


def test_causal_document_compiles_with_its_monte_carlo(tmp_path: Path) -> None:
    from gemhsa_sym.export.positional_document import causal_document

    record = causal_entry(tmp_path)
    point = {"n": 1000, "ks": {"theory_softmax": 0.0123, "theory_ge": 0.0045}, "softmax_ge": {"ks": 0.011}, "floor": {"ks": 0.004},
             "quantiles": {"softmax": [0.01, 0.9, 9.0, 99.0], "ge": [0.011, 1.0, 9.5, 101.0]}}
    tex = causal_document(record, {"seed": 0, "draws": 2, "by_n": [point]})
    assert "KS to the softmax layer 0.0123" in tex and r"softmax, $n = 1000$ & 0.01 & 0.9 & 9 & 99" in tex
    assert r"$10^{0}$" in tex and "0.5000" in tex  # F(1) = 1/2 in the table of decades
    log = compile_latex(tex, tmp_path)
    assert overfull(log) == []


#: What a formula or a reference looks like when it was left in text mode: escaped signs, numbers in e-notation, a
#: power written t^2, a path of the repository.
TEXT_MODE_FORMULA = re.compile(r"\\textgreater|\\textless|\\~\{\}|\\\^\{\}|\b\d(\.\d+)?e[-+]?\d|docs/|\.md\b|\.py\b")


def _text_outside_math(tex: str) -> str:
    """The document without its math ($...$, equation and gather blocks) and its verbatim configuration."""
    tex = re.sub(r"\\begin\{(verbatim|equation\*|gather\*|align\*)\}.*?\\end\{\1\}", "", tex, flags=re.S)
    return re.sub(r"\$[^$]*\$", "", tex)


def test_documents_typeset_every_formula(tmp_path: Path) -> None:
    """Every document of the library and a causal one generated here are in paper form (docs/exports.md §5.2, §5.5): no
    escaped comparison sign, tilde or caret, no number in e-notation and no path of the repository in their text; the
    configuration line typesets H, the ratios, the shared projections and beta."""
    from gemhsa_sym.export.positional_document import causal_document

    record = causal_entry(tmp_path)
    documents = {"square": causal_document(record)} | {path.stem: path.read_text() for path in sorted(LIBRARY.glob("*.tex"))}
    assert len(documents) > 20
    for name, tex in documents.items():
        found = TEXT_MODE_FORMULA.search(_text_outside_math(tex))
        assert found is None, (name, found.group(0) if found else None)
    assert r"$H = 1$; $d = n$, $d_k = n$" in documents["square"]
    assert r"$\beta = 1$, square, row-normalised; causal mask: query $i$ sees the keys $j \le i$" in documents["square"]
    from gemhsa_sym.layer.presets import PRESETS

    mqa = json.loads((LIBRARY / "causal-mha.json").read_text()) | {"config": PRESETS["causal-mqa"].to_dict()}
    assert r"(ratios to $n$); $W_K$, $W_V$ shared by all heads; $\beta = 1$" in causal_document(mqa)
    from gemhsa_sym.export.positional_record import causal_latex
    from gemhsa_sym.layer.config import Config

    ruled = {r"R = X + \alpha \sqrt{n}\, Y": Config(mask="causal", residual="1/2"),
             r"A_{t}^{T} \Sigma A_{t}": Config(mask="causal", tokens="covariance", token_covariance={"values": ["1/4", "7/4"],
                                                                                                    "weights": ["1/2", "1/2"]}),
             r"\rho = - \frac{1}{2}": Config(mask="causal", kv="correlated", rho="-1/2", heads=2, output="keys", d_k="1/2", d_v="1/2"),
             r"V^{(h)} = W_K^{(h)} W_O^{(h)}": Config(mask="causal", kv="tied")}
    for formula, config in ruled.items():  # the record's formulas follow the configuration's rules
        tex = causal_document(mqa | {"config": config.to_dict(), "statement": config.statement, "latex": causal_latex(config)})
        found = TEXT_MODE_FORMULA.search(_text_outside_math(tex))
        assert found is None and formula in tex, (formula, found.group(0) if found else None)


def test_the_computer_algebra_exports_read_back_to_the_records_polynomial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """P(m, w) written for SymPy (read back by the package's grammar, never eval) and for Mathematica (read by SymPy's
    Mathematica parser) is the record's P; for the product of two Wisharts it is the cubic of docs/reference-values.md
    §9.3 (2 m^3 w^2 + m^2 w - 4 m w - m + 4); a law with parameters keeps them, renamed for Mathematica and Maple."""
    from sympy.parsing.mathematica import parse_mathematica

    from gemhsa_sym.export.exact import from_table, read_srepr
    from gemhsa_sym.export.writers import WRITERS, write

    m, w = sp.symbols("m w")
    for name in ("wishart-product", "heads-infinite"):
        record = load(LIBRARY / f"{name}.toml").record(30, edges="polynomial")
        P = from_table(record.exact.polynomial)
        lines = dict(line.split(" = ", 1) for line in write("sympy", record).splitlines() if not line.startswith("#"))
        assert read_srepr(lines["P"]) == P and read_srepr(lines["stieltjes"]) == sp.Symbol("g_{t,t}")
        mathematica = write("mathematica", record)
        text = next(line for line in mathematica.splitlines() if line.startswith("P = "))
        names = dict(pair.split(" = ") for pair in mathematica.splitlines()[2][len("(* identifiers: "):-3].split(", "))
        back = parse_mathematica(text[4:].rstrip(";"))
        back = back.subs({s: sp.Symbol(names.get(s.name, s.name)) for s in back.free_symbols})
        assert sp.expand(back - P.subs({s: sp.Symbol(s.name) for s in P.free_symbols})) == 0
        maple = write("maple", record)
        assert "P := " in maple and "moments := [" in maple and set(WRITERS) == {"latex", "json", "mathematica", "maple", "sympy"}
    assert P.free_symbols >= {sp.Symbol("mu_1", real=True), sp.Symbol("sigma", nonnegative=True)}
    product = read_srepr(dict(line.split(" = ", 1) for line in write("sympy", load(LIBRARY / "wishart-product.toml").record(16))
                              .splitlines() if not line.startswith("#"))["P"])
    assert sp.expand(product - (2 * m**3 * w**2 + m**2 * w - 4 * m * w - m + 4)) == 0
    out = tmp_path / "product.m"
    assert main(["derive", str(LIBRARY / "wishart-product.toml"), "--export", f"mathematica={out}", "--export",
                 f"json={tmp_path / 'product.json'}"]) == 0
    assert out.read_text().splitlines()[3] == "P = 2*m^3*w^2 + m^2*w - 4*m*w - m + 4;"
    assert json.loads((tmp_path / "product.json").read_text())["exact"]["polynomial"]["terms"][0] == [[3, 2], "2"]
    capsys.readouterr()
    assert main(["derive", "causal-single-head", "--export", f"maple={tmp_path / 'x.mpl'}"]) == 2
    assert "export: maple prints P(m, w)" in capsys.readouterr().err and not (tmp_path / "x.mpl").exists()


def test_exact_data_is_read_only_through_its_grammar() -> None:
    """Trees and srepr text are read node by node from a whitelist: anything else is refused naming the field."""
    from gemhsa_sym.export.exact import from_table, from_tree, read_srepr

    for bad, message in ((["Symbol", "x", {"evil": True}], "assumptions"), (["__import__", ["Integer", "1"]], "unknown node"),
                         (["Integer", "1/0"], "cannot read"), (["Rational", "sqrt(2)"], "not a rational"),
                         (["Pow", ["Integer", "2"]], "other arguments"), (["Add"] + [["Add"]] * 0 + [7], "expected a node")):
        with pytest.raises(ValueError, match=message):
            from_tree(bad)
    deep: list = ["Integer", "1"]
    for _ in range(300):
        deep = ["exp", deep]
    with pytest.raises(ValueError, match="deeper than 200"):
        from_tree(deep)
    with pytest.raises(ValueError, match="is not rational"):
        from_table({"generators": [["Symbol", "m", {}]], "terms": [[[1], "E"]]})
    for text in ("__import__('os').system('true')", "Add(Integer(1), Symbol('x', evil=True))", "Integer(1); Integer(2)",
                 "exec(Integer(1))", "Add(" * 250 + "Integer(1)" + ")" * 250):
        with pytest.raises(ValueError, match="^sympy: "):
            read_srepr(text)


def test_a_wide_product_names_its_sums_and_a_wide_entry_breaks() -> None:
    """A product of long sums is printed with each sum named F_k and given term by term; a wide sector entry is broken
    over aligned lines with its long rationals as decimals (docs/exports.md §5.2)."""
    n = Dim("n")
    X = [Gaussian(f"X_{k}", n, n) for k in range(1, 9)]
    W = [Gaussian(f"W_{k}", n, n) for k in range(1, 9)]
    Y = sp.MatAdd(*[x * w for x, w in zip(X, W)]) * sp.MatAdd(*X) + X[0]
    terms, factors = named_terms(Y)
    assert [name for name, _ in factors] == [r"\mathcal{F}_{1}", r"\mathcal{F}_{2}"]
    assert any(r"\mathcal{F}_{1} \mathcal{F}_{2}" in t for t in terms) and "X_{1}" in terms
    assert all(printed_width(t) <= WIDTH for _, parts in factors for t in parts)
    g = sp.symbols("g_1:12")
    wide = entry("M_{s,s}", sum(sp.Rational(10**20 + k, 3**50) * x for k, x in enumerate(g)))
    assert wide.startswith(r"M_{s,s} = \begin{aligned}[t] & 0.000139295556909854 g_{1}") and wide.count(r"\\") >= 3
    assert entry("M_{s,t}", g[0] / 2) == r"M_{s,t} = \frac{g_{1}}{2}"
