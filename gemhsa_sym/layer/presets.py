"""Named configurations, and a configuration or a polynomial model read by name or from a TOML file
(docs/model.md §1.4, docs/exports.md §5.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gemhsa_sym.files import is_model, read_toml
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.network import Network, description_from_dict
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.library import LIBRARY

__all__ = ["PRESETS", "BIDIRECTIONAL_PRESETS", "load_config", "load_input", "read_input"]


def _presets() -> dict[str, Config]:
    """The named configurations of :data:`PRESETS`."""
    single = dict(heads=1)
    mha = dict(heads=4, d_k="1/4", d_v="1/4")
    specs: dict[str, dict[str, Any]] = {
        "single-head": single,
        "mha": mha,
        "mqa": mha | dict(share_k="all", share_v="all"),
        "gqa": mha | dict(share_k={"groups": 2}, share_v={"groups": 2}),
        "shared-q": mha | dict(share_q="all"),
        "tied-kv": single | dict(kv="tied"),
        "correlated-kv": single | dict(kv="correlated", rho="1/2"),
        "key-output": single | dict(output="keys"),
        "heads-8": dict(heads=8, d_k="1/8", d_v="1/8"),
        "attention-matrix": dict(target="attention"),
        "attention-orthonormal": dict(target="attention", tokens="orthonormal"),
        "residual": single | dict(residual=1),
        "tokens-two-level": single | dict(tokens="covariance", token_covariance={"values": ["1/2", "3/2"], "weights": ["1/2", "1/2"]}),
        "heads-infinite": dict(heads="oo"),
        "causal-single-head": single | dict(mask="causal"),
        "causal-mha": mha | dict(mask="causal"),
        "causal-mqa": mha | dict(share_k="all", share_v="all", mask="causal"),
        "causal-gqa": dict(heads=8, d_k="1/8", d_v="1/8", share_k={"groups": 4}, share_v={"groups": 4}, mask="causal"),
        "causal-attention-matrix": dict(target="attention", mask="causal"),
    }
    return {name: Config(name=name, **spec) for name, spec in specs.items()}


#: Named configurations: beta = 1, n = d = d_out, softmax with row normalisation.
PRESETS: dict[str, Config] = _presets()
#: The presets without a mask, whose laws are spectral laws with moments, edges and P(m, w) (the causal ones have
#: none: docs/extensions.md §8.6).
BIDIRECTIONAL_PRESETS: tuple[str, ...] = tuple(name for name, config in PRESETS.items() if not config.mask_rule.causal)


def read_input(path: str | Path) -> Config | Network | PolynomialModel:
    """The attention configuration, the network (docs/extensions.md §8.7) or the polynomial model (named after the
    file) in a TOML file: a model when the file has a top-level ``polynomial`` key (:func:`~gemhsa_sym.files.is_model`),
    a network when it has a block field (:func:`~gemhsa_sym.layer.network.description_from_dict`)."""
    data = read_toml(path, "config")
    return PolynomialModel(data, Path(path).stem) if is_model(data) else description_from_dict(data)


def load_input(spec: str | Path) -> Config | Network | PolynomialModel:
    """A preset by name, an entry of the shipped library by name (:data:`~gemhsa_sym.library.LIBRARY`), or the
    configuration or polynomial model in a TOML file (:func:`read_input`)."""
    if str(spec) in PRESETS:
        return PRESETS[str(spec)]
    entry = LIBRARY / f"{spec}.toml"
    if isinstance(spec, str) and spec.replace("-", "").isalnum() and entry.is_file():
        return read_input(entry)
    path = Path(spec)
    if path.is_file():
        return read_input(path)
    entries = sorted(p.stem for p in LIBRARY.glob("*.toml") if p.stem not in PRESETS)
    raise ValueError(
        f"config: {str(spec)!r} is neither a preset ({', '.join(PRESETS)}), nor an entry of the library "
        f"({', '.join(entries)}), nor a TOML file"
    )


def load_config(spec: str | Path) -> Config | Network:
    """A preset by name, or the configuration or network in a TOML file; a polynomial model file is refused."""
    config = load_input(spec)
    if isinstance(config, PolynomialModel):
        raise ValueError(f"config: {spec} is a polynomial model file, not an attention configuration; "
                         "`gemhsa-sym derive`, `verify` and `sweep` take it")
    return config
