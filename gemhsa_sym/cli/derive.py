"""``gemhsa-sym derive``: the limiting spectral law of a configuration."""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np
import sympy as sp

from gemhsa_sym.cli.sample import _overrides
from gemhsa_sym.config import load_config
from gemhsa_sym.derive import AttentionLaw, derive


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``derive`` sub-command."""
    parser = subparsers.add_parser(
        "derive",
        help="Gaussian-equivalent model, Dyson equations and limiting law of a configuration",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Derive the limiting law of the eigenvalues of Y_c^T Y_c / n for CONFIG:\n"
            "the Gaussian-equivalence coefficients (mu_1, sigma^2) of the score function,\n"
            "the Gaussian-equivalent polynomial, its reduced matrix Dyson system, and the\n"
            "solution: first three moments, support edges, atoms, and with --grid the density."
        ),
    )
    parser.add_argument("config", metavar="CONFIG", help="preset name (see `gemhsa-sym presets`) or TOML file")
    parser.add_argument("--beta", help="inverse temperature, overriding the config's")
    parser.add_argument("--heads", type=int, help="number of heads, overriding the config's (d_k follows H d_k = d)")
    parser.add_argument("--set", metavar="FIELD=VALUE", action="append", default=[], help="override a configuration field (repeatable)")
    parser.add_argument("--grid", metavar="A:B:K", help="density table on K points from A to B")
    parser.add_argument("--dps", type=int, default=30, help="digits of the support edges (default 30)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--latex", metavar="FILE", help="write a standalone LaTeX document of the derivation")
    parser.set_defaults(run=run)


def _grid(spec: str) -> np.ndarray:
    try:
        a, b, k = spec.split(":")
        grid = np.linspace(float(a), float(b), int(k))
    except ValueError:
        raise ValueError(f"grid: expected A:B:K with numbers A < B and an integer K, got {spec!r}") from None
    if not (grid.size >= 1 and float(a) < float(b)):
        raise ValueError(f"grid: expected A < B and K >= 1, got {spec!r}")
    return grid


def _document(law: AttentionLaw, report: dict) -> str:
    """A standalone LaTeX document of the derivation (SymPy's printer for every formula)."""
    c = law.coefficients
    edges = ", ".join(f"{e['location'][:20]}" for e in report["edges"]) or "none"
    atoms = ", ".join(f"{a['mass']:.12g} at {a['location']:g}" for a in report["atoms"]) or "none"
    moments = r" \\ ".join(rf"\mu_{k + 1} &= {sp.latex(sp.sympify(m['exact']))} \approx {m['float']:.12g}" for k, m in enumerate(report["moments"]))
    return "\n".join([
        r"\documentclass{article}",
        r"\usepackage{amsmath,amssymb}",
        r"\usepackage[margin=2cm]{geometry}",
        r"\begin{document}",
        rf"\section*{{Limiting spectral law: {law.config.name or 'configuration'}}}",
        r"\begin{verbatim}",
        law.config.to_toml().strip(),
        r"\end{verbatim}",
        r"\subsection*{Gaussian-equivalence coefficients}",
        rf"$\mu_1 = {sp.latex(c.mu1)}$, $\sigma^2 = {sp.latex(c.sigma2)}$ (score {c.score}, normalisation {c.normalisation}).",
        r"\subsection*{Gaussian-equivalent model}",
        rf"\[ Y = {sp.latex(law.model)} \]",
        r"\subsection*{Reduced Dyson system}",
        rf"{len(law.system.unknowns)} unknowns; $m(w) = {sp.latex(law.system.output)}$.",
        r"\begin{verbatim}",
        "\n".join(law.system.notes),
        r"\end{verbatim}",
        r"\subsection*{Moments, edges, atoms}",
        rf"\begin{{align*}} {moments} \end{{align*}}",
        rf"Support edges: {edges}. Atoms: {atoms}.",
        r"\end{document}",
        "",
    ])


def _write(path: str, text: str) -> None:
    """Write through a temporary file and rename, so nothing is half-written."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> int:
    """Derive, solve and report."""
    config = load_config(args.config)
    changes = _overrides(args)
    if args.heads is not None:
        ratios = config.ratios()
        changes["heads"] = args.heads
        if ratios["d_k"] * config.heads == ratios["d"]:
            changes["d_k"] = ratios["d"] / args.heads
            changes["d_v"] = ratios["d"] / args.heads
    if changes:
        config = config.replace(**changes)
    grid = _grid(args.grid) if args.grid else None
    start = time.perf_counter()
    law = derive(config)
    derived = time.perf_counter() - start
    moments = law.moments(3)
    general = law.moments(3, symbolic=True)
    edges = law.edges(args.dps)
    atoms = law.atoms()
    report = {
        "config": config.to_dict(),
        "coefficients": law.coefficients.as_dict(),
        "model": str(law.model),
        "unknowns": len(law.system.unknowns),
        "moments": [{"exact": str(m), "symbolic": str(g), "float": float(sp.N(m, 20))} for m, g in zip(moments, general)],
        "edges": [{"location": str(e.location), "side": e.side, "hard": e.hard, "refined": e.refined} for e in edges],
        "atoms": [{"location": a.location, "mass": a.mass, "error": a.error, "exact": None if a.exact is None else str(a.exact)} for a in atoms],
        "timing": {"derive_s": derived, "total_s": time.perf_counter() - start},
    }
    elimination = law.algebraic()
    classified = law.algebraic_edges(args.dps) if elimination.polynomial is not None else None
    report["polynomial"] = None if elimination.polynomial is None else str(elimination.polynomial)
    report["polynomial_reason"] = elimination.reason
    report["polynomial_info"] = {
        "variables": "P(m, w) = 0, m(w) = (1/q) tr (w - Y^T Y)^{-1}",
        "degree_m": elimination.degree_m,
        "degree_w": elimination.degree_w,
        "symbolic": {str(k): str(v) for k, v in elimination.values.items()},
        "substituted": {str(k): str(v) for k, v in elimination.substituted.items()},
        "backend": elimination.backend,
        "seconds": elimination.seconds,
    }
    report["edge_candidates"] = [] if classified is None else [{"location": str(sp.Float(c.location, args.dps)), "kind": c.kind} for c in classified.candidates]
    report["algebraic_edges"] = [] if classified is None else [{"location": str(sp.Float(e.location, args.dps)), "side": e.side, "hard": e.hard} for e in classified.edges]
    report["cusps"] = [] if classified is None else [str(sp.Float(c, args.dps)) for c in classified.cusps]
    report["gaps"] = [] if classified is None else [[str(sp.Float(a, args.dps)), str(sp.Float(b, args.dps))] for a, b in classified.gaps]
    if grid is not None:
        report["density"] = {"x": grid.tolist(), "density": law.density(grid).tolist()}
    if args.latex:
        _write(args.latex, _document(law, report))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    c = law.coefficients
    print(f"configuration: {config.name or args.config}")
    print(f"coefficients: mu_1 = {c.mu1}, sigma^2 = {c.sigma2}")
    print(f"model: Y = {law.model}")
    print(f"reduced Dyson system:\n{law.system}")
    for k, (m, g) in enumerate(zip(moments, general), 1):
        print(f"moment {k}: {g}\n          = {m} = {float(sp.N(m, 20)):.15g}")
    for e in edges:
        print(f"edge ({e.side}{', hard' if e.hard else ''}{'' if e.refined else ', double precision only'}): {e.location}")
    for a in atoms:
        print(f"atom at {a.location:g}: mass {a.mass:.12g}" + (f" = {a.exact}" if a.exact is not None else ""))
    if grid is not None:
        print("x\tdensity")
        for x, r in zip(grid, report["density"]["density"]):
            print(f"{x:.8g}\t{r:.12g}")
    print(f"derived in {derived:.2f} s, solved in {report['timing']['total_s'] - derived:.2f} s")
    return 0
