"""``gemhsa-sym derive``: the limiting spectral law of a configuration."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from gemhsa_sym.cli.common import add_config_arguments, check_outputs, digits, grid, heads_count, input_from_args, overrides, seconds
from gemhsa_sym.export.record import LawRecord
from gemhsa_sym.export.writers import WRITERS, write
from gemhsa_sym.files import write_atomic
from gemhsa_sym.free.numeric.results import MAX_DPS
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.laws.causal_law import CausalLaw
from gemhsa_sym.laws.key_weighted import KeyWeightedLaw
from gemhsa_sym.laws.recorded import answers_record
from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.laws.spectral import SpectralLaw
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.library.catalogue import library_law, library_record
from gemhsa_sym.verification.theory import cached_causal_law

#: Characters of an exact moment the summary prints in full.
LONG = 400


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``derive`` sub-command."""
    parser = subparsers.add_parser(
        "derive",
        help="Gaussian-equivalent model, Dyson equations and limiting law of a configuration or a polynomial model file",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Derive the limiting law of the eigenvalues of Y_c^T Y_c / n for CONFIG:\n"
            "the Gaussian-equivalence coefficients (mu_1, sigma^2) of the score function,\n"
            "the Gaussian-equivalent polynomial, its reduced matrix Dyson system, and the\n"
            "solution: the algebraic equation P(m, w) = 0 of the Stieltjes transform where\n"
            "elimination finishes, the first three moments (exact, and symbolic in beta),\n"
            "support edges and atoms, and with --grid the density.\n"
            "CONFIG may also be a polynomial model file (polynomial = \"...\" over declared Gaussian\n"
            "matrices, as in derivations/wishart-product.toml): the same for the law of Y^T Y of its\n"
            "polynomial, without coefficients; --set changes its ratios and scales\n"
            "(dimensions.NAME=R, gaussians.NAME.scale=S), and --heads and --beta are refused.\n\n"
            "A preset named without --set, --beta or --heads is read from the library's record\n"
            "(written by this package version for the same configuration; a second or two)\n"
            "unless --recompute; what the record does not hold (--grid, --full, other --dps or\n"
            "--edges) is computed from the law with the record's P(m, w)."
        ),
    )
    add_config_arguments(parser, models=True)
    parser.add_argument("--heads", type=heads_count,
                        help="number of heads, overriding the config's (d_k and d_v follow H d_k = d when the config has "
                             "it), or oo for the limit of infinitely many heads")
    parser.add_argument("--grid", metavar="A:B:K", type=grid, help="density table on K points from A to B")
    parser.add_argument("--dps", type=digits, default=30, help=f"digits of the support edges, 1 to {MAX_DPS} (default 30)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr (shown on a terminal: the kernel's "
                        "first compile, the elimination and discriminant with their time limits, the continuation, a "
                        "causal law's levels; GEMHSA_SYM_PROGRESS=lines shows them anywhere)")
    parser.add_argument("--full", action="store_true",
                        help="print the reduced Dyson system and P(m, w) in full instead of the short summary")
    parser.add_argument("--latex", metavar="FILE", help="write a standalone LaTeX document of the derivation")
    parser.add_argument("--export", metavar="FORMAT=FILE", action="append", type=export_spec, default=[],
                        help="write the record in FORMAT to FILE (repeatable): "
                             + "; ".join(f"{name} ({writer.summary})" for name, writer in WRITERS.items())
                             + ". A causal law, and a network's after layer 2, have no P(m, w) or exact moments: latex and json only")
    parser.add_argument("--time-limit", type=seconds, default=20.0, metavar="SECONDS",
                        help="seconds allowed to each elimination attempt for P(m, w) and to its discriminant "
                             "(default 20, at most 3600)")
    parser.add_argument("--edges", choices=("discriminant", "polynomial"),
                        help="where P(m, w) is found: 'polynomial' (the default of a new derivation) refines the "
                             "continuation's folds as solutions of P = dP/dm = 0 by Newton's method (milliseconds, but "
                             "no cusp or edge the folds missed); 'discriminant' classifies every real root of its "
                             "discriminant (edges, cusps, gaps) where that finishes within the time limit, else refines "
                             "the folds. A preset read from the library keeps its record's edges (the discriminant's "
                             "where it finished when the record was written)")
    parser.add_argument("--symbolic", action="store_true",
                        help="P(m, w) symbolic in the parameters where any attempt finds it: resultants and the series "
                             "guess with the parameters symbolic before either at their values (by default the series "
                             "modulo a prime predicts P's degree first, and above 24 in m every series guess runs before "
                             "any resultants, which do not finish there); implies --recompute")
    parser.add_argument("--recompute", action="store_true",
                        help="derive a preset afresh instead of reading the library's record of it (used only when it is "
                             "the record of the same configuration written by this package version; `gemhsa-sym "
                             "derivations --check` proves the records are what the engine computes)")
    parser.add_argument("--cache", metavar="DIR",
                        help="a causal layer's law (minutes to solve) is read from DIR where it was kept before "
                             "(by derive, verify, claims or `derivations --fill-cache`) for the same configuration and "
                             "package version, else solved and kept there; other laws are refused this option")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Derive, solve and report; a preset from the library's record unless ``--recompute``."""
    check_outputs(files=[("latex", args.latex), *(("export", path) for _, path in args.export)], folders=[("cache", args.cache)])
    config = input_from_args(args, {"--heads": args.heads is not None})
    if args.heads is not None:  # refused above for a polynomial model
        config = config.with_heads(args.heads)
    causal = isinstance(config, Config) and config.mask_rule.causal
    if args.symbolic and causal:
        raise ValueError("--symbolic: a causal layer's law has no P(m, w) to keep symbolic (docs/extensions.md §8.6)")
    if args.cache is not None and not causal:
        raise ValueError("--cache: only a causal layer's law is kept (it takes minutes to solve); this law derives afresh "
                         "or is read from the library's record")
    entry = not args.recompute and not args.symbolic and not overrides(args) and args.heads is None  # as the library has it
    named = entry and args.config in PRESETS
    points = args.grid
    start = time.perf_counter()
    known = library_record(args.config, config) if named and isinstance(config, Config) else None
    answered = known is not None and answers_record(known, args.dps, 3, args.time_limit, args.edges or "discriminant", None)
    if answered and points is None and not args.full:  # the record answers everything asked: no law to derive
        return _report(args, config, known, None, start, start, "the library's record")
    if known is not None:
        law = AttentionLaw(config, known=known)
    elif args.cache is not None:  # a causal law kept before, validated, or solved now and kept
        law = cached_causal_law(config, args.cache)
    elif entry and (causal or isinstance(config, Network)):  # its record, validated: minutes or seconds saved
        law = library_law(args.config) or law_of(config)
    else:
        law = law_of(config, symbolic=args.symbolic)
    if isinstance(law, (CausalLaw, KeyWeightedLaw)):  # a law of the positional equation: quantiles and achieved error
        if args.symbolic:
            raise ValueError("--symbolic: this law has no P(m, w) to keep symbolic; its equation is function-valued "
                             "(docs/extensions.md §8.7)")
        for name, _ in args.export:
            if name not in ("latex", "json"):
                raise ValueError(f"export: {name} prints P(m, w), the minimal system and the exact moments, which this law "
                                 "has none of (its equation is function-valued over the positions); export latex or json")
        return _run_causal(args, config, law, start) if isinstance(law, CausalLaw) else _run_numeric(args, config, law, start)
    derived = time.perf_counter()
    record = law.record(args.dps, time_limit=args.time_limit, edges=args.edges or ("discriminant" if answered else "polynomial"))
    source = ("the library's record" if record is known else "derived, with the library's P(m, w)" if known is not None
              else "derived")
    return _report(args, config, record, law, start, derived, source)


def _report(args: argparse.Namespace, config: Config | PolynomialModel, record: LawRecord, law: SpectralLaw | None,
            start: float, derived: float, source: str) -> int:
    """Write and print the record of a law (``law`` None: read from the library, nothing derived)."""
    report = record.to_json()
    report["timing"] = {"derive_s": derived - start, "total_s": time.perf_counter() - start, "source": source}
    points = args.grid
    if points is not None and law is not None:  # the root of P where it was found: one unknown instead of the Dyson system's
        method = "polynomial" if record.polynomial is not None else "dyson"
        report["density"] = {"x": points.tolist(), "density": law.density(points, method=method).tolist()}
    _write_record(args, record)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"configuration: {config.name or args.config}: {config.summary()}")
    print(f"the law of {config.statement}")
    coefficients = report.get("coefficients")
    if coefficients:
        print(f"coefficients: mu_1 = {coefficients['mu1']}, sigma^2 = {coefficients['sigma2']}")
    print(f"model: Y = {report['model']}" + ("  (the engine's normalisation: every Gaussian N(0, scale/n); the scores' "
                                             "1/sqrt(d_k) is the factor 1/sqrt(d_k/n) of mu_1)" if coefficients else ""))
    if args.full and law is not None:
        print(f"reduced Dyson system:\n{law.system}")
    else:
        _print_system(report["system"])
    if report["polynomial"] is not None:
        info = report["polynomial_info"]
        print(f"P(m, w) = 0: degree {info['degree_m']} in m, {info['degree_w']} in w"
              + (" (guessed from the series modulo primes, verified)" if info["method"] == "series guess" else "")
              + (f": {report['polynomial']}" if args.full else " (--full or --json prints it)"))
    else:
        print(f"no polynomial equation: {report['polynomial_reason']}")
    for k, m in enumerate(report["moments"], 1):
        texts = [text if len(text) <= LONG else f"({len(text)} characters; --json prints it)" for text in (m["symbolic"], m["exact"])]
        print(f"moment {k}: {texts[0]}\n          = {texts[1]}" + (f" = {m['float']:.15g}" if m["float"] is not None else ""))
    for e in report["edges"]:
        print(f"edge ({e['side']}{', hard' if e['hard'] else ''}, {report['edge_method']}): {e['location']}")
    if report["edge_method"] == "polynomial":
        print("edges: the continuation's folds refined on P; --edges discriminant classifies every real root of P's "
              "discriminant (cusps and gaps too) within --time-limit")
    for a in report["atoms"]:
        print(f"atom at {a['location']:g}: mass {a['mass']:.12g}" + (f" = {a['exact']}" if a["exact"] is not None else ""))
    if points is not None:
        _print_density(report["density"])
    if law is None:
        print(f"read from the library's record (package version {record.version}, checked against the configuration) in "
              f"{report['timing']['total_s']:.2f} s; --recompute derives it afresh")
    else:
        print(f"derived in {report['timing']['derive_s']:.2f} s, solved in "
              f"{report['timing']['total_s'] - report['timing']['derive_s']:.2f} s ({source})")
    return 0


def _run_causal(args: argparse.Namespace, config: Config, law: CausalLaw, start: float) -> int:
    """A causal configuration's law (docs/extensions.md §8.6): its model, quantiles, tail exponent."""
    report = law.report(args.grid)
    report["timing"] = {"total_s": time.perf_counter() - start, "source": law.found}
    if args.latex or args.export:
        _write_record(args, law.record())
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"configuration: {config.name or args.config}: {config.summary()}")
    print(f"the law of {report['statement']}")
    coefficients = report["coefficients"]
    print(f"coefficients: c_0 = {coefficients['c0']}, mu_1 = {coefficients['mu1']}, sigma^2 = {coefficients['sigma2']}")
    print(f"model: {report['model']}; {report['profile']}")
    print(f"left out: {report['left_out']}")
    print(f"equation: {report['equation']}")
    print(f"solved on {report['nodes']} positions (level {report['level']}), achieved error {report['error']:.1e}")
    below, mass = report["mass_below_grid"]
    for q, x in zip(report["quantiles"]["q"], report["quantiles"]["x"]):
        print(f"quantile {q:g}: " + (f"{x:.6g}" if x is not None else f"below {below:g} (F({below:g}) = {mass:.4f})"))
    if report["tail_exponent"] is None:
        print(f"tail: no exponent ({report['tail_reason']})")
    else:
        print(f"tail: P(lambda > x) ~ c x^-kappa, kappa = {report['tail_exponent']:.3f} (fitted on "
              f"[{report['tail_range'][0]:g}, {report['tail_range'][1]:g}])")
    print(f"moments: none ({report['moments']})")
    print(f"P(m, w): none ({report['polynomial_reason']})")
    if args.grid is not None:
        _print_density(report["density"])
    print(f"{law.found} in {report['timing']['total_s']:.1f} s")
    return 0


def _run_numeric(args: argparse.Namespace, config: Network, law: KeyWeightedLaw, start: float) -> int:
    """A network's law after layer 2 or later (docs/extensions.md §8.7): its model, constants, moments and quantiles."""
    report = law.report(args.grid)
    report["timing"] = {"total_s": time.perf_counter() - start, "source": law.found}
    if args.latex or args.export:
        _write_record(args, law.record())
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"configuration: {config.name or args.config}: {config.summary()}")
    print(f"the law of {report['statement']}")
    print(f"model: {report['model']}")
    print("  with " + ", ".join(f"{k} = {v}" for k, v in report["values"].items()))
    for weights in report["key_weights"]:
        print(f"  {weights}")
    print("constants: " + "; ".join(f"{k} = {v if len(v) <= LONG else v[:LONG] + '...'}" for k, v in report["constants"].items()))
    for note in report["notes"]:
        print(f"note: {note}")
    print(f"equation: {report['equation']}")
    print(f"solved on {report['nodes']} Gauss-Hermite nodes (level {report['level']}), achieved error of F {report['error']:.1e}")
    for k, value in enumerate(report["moments"], 1):
        print(f"moment {k}: {value:.12g} (contour integral of m(w))")
    for atom in report["atoms"]:
        print(f"atom at {atom['location']:g}: mass {atom['mass']:.12g}")
    for q, x in zip(report["quantiles"]["q"], report["quantiles"]["x"]):
        print(f"quantile {q:g}: {x:.6g}")
    print(f"edges: none ({report['edges']})")
    print(f"P(m, w): none ({report['polynomial_reason']})")
    if args.grid is not None:
        _print_density(report["density"])
    print(f"{law.found} in {report['timing']['total_s']:.1f} s")
    return 0


def _write_record(args: argparse.Namespace, record: Any) -> None:
    """``--latex`` and ``--export`` of a law's record (:data:`~gemhsa_sym.export.writers.WRITERS`)."""
    if args.latex:
        write_atomic(args.latex, write("latex", record), "latex")
    for name, path in args.export:
        write_atomic(path, write(name, record), "export")


def _print_density(table: dict) -> None:
    """The density of a report on its grid, one point per line."""
    print("x\tdensity")
    for x, r in zip(table["x"], table["density"]):
        print(f"{x:.8g}\t{r:.12g}")


def export_spec(text: str) -> tuple[str, str]:
    """FORMAT=FILE of ``--export``, the format one of :data:`~gemhsa_sym.export.writers.WRITERS`."""
    name, sep, path = text.partition("=")
    if not sep or name not in WRITERS or not path:
        raise argparse.ArgumentTypeError(f"expected FORMAT=FILE with FORMAT one of {', '.join(WRITERS)}, got {text!r}")
    return name, path


def _print_system(system: dict) -> None:
    """The minimal system of a report (docs/exports.md §5.4): equations with the meaning of each unknown."""
    if system.get("reason"):
        print(f"minimal system: none ({system['reason']}); --full prints the reduced Dyson system")
        return
    print(f"minimal system: {len(system['unknowns'])} unknowns ({system['reduced_unknowns']} in the reduced system); "
          f"{system['notation']}")
    for name, meaning, equation in zip(system["unknowns"], system["meanings"], system["equations"]):
        print(f"  {equation}\n      {name} = {meaning}")
    if system["definitions"]:
        print("where")
        for d in system["definitions"]:
            print(f"  {d['equation']}\n      {d['symbol']} = {d['meaning']}")
    print(f"m(w) = {system['output']}")
