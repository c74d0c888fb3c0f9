"""Named configurations, and a configuration read by name or from a TOML file (docs/model.md §1.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gemhsa_sym.config import Config

__all__ = ["PRESETS", "load_config"]


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
    }
    return {name: Config(name=name, **spec) for name, spec in specs.items()}


#: Named configurations: beta = 1, n = d = d_out, softmax with row normalisation.
PRESETS: dict[str, Config] = _presets()


def load_config(spec: str | Path) -> Config:
    """A preset by name, or the configuration in a TOML file."""
    if str(spec) in PRESETS:
        return PRESETS[str(spec)]
    path = Path(spec)
    if path.is_file():
        return Config.from_toml(path)
    raise ValueError(
        f"config: {str(spec)!r} is neither a preset ({', '.join(PRESETS)}) nor a TOML file"
    )
