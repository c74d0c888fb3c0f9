"""Score functions f of attention and activations phi of an MLP, with one definition read three ways.

Each score is a positive elementwise function f; an activation (docs/extensions.md §8.7) is any elementwise phi. The sampler applies it to
numpy arrays (and, with the torch backend, to torch tensors: docs/verification.md §4.8);
the Gaussian-equivalence coefficients (docs/model.md §1.5) integrate its SymPy form
against the Gaussian measure. Every reading comes from the same :class:`Score` entry,
and a test holds the numeric forms to each other, so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

__all__ = ["ACTIVATIONS", "Score", "SCORES", "elementwise", "get_score"]


@dataclass(frozen=True)
class Score:
    """An elementwise function f(s): a positive score, or an activation.

    ``symbolic`` maps a SymPy expression to f of it; ``numeric`` maps a
    float array to f of it elementwise. ``shift_invariant`` is True when
    row normalisation of f(s) is unchanged by subtracting the row maximum
    (f = exp), which the sampler uses for numerical stability. ``tensor`` maps a
    torch tensor to f of it with the tensor's own methods (so this module does not
    import torch); without it the torch backend applies ``numeric`` on the host.
    """

    name: str
    symbolic: Callable[[sp.Expr], sp.Expr]
    numeric: Callable[[np.ndarray], np.ndarray]
    shift_invariant: bool = False
    tensor: Callable[[Any], Any] | None = None


def _sigmoid(s: np.ndarray) -> np.ndarray:
    """Logistic sigmoid, evaluated without overflow."""
    out = np.empty_like(s)
    pos = s >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-s[pos]))
    e = np.exp(s[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def _quadratic(s: Any) -> Any:
    """1 + s + s^2 / 2 of an array or a tensor."""
    return 1.0 + s + 0.5 * s * s


SCORES: dict[str, Score] = {
    "softmax": Score("softmax", sp.exp, np.exp, shift_invariant=True, tensor=lambda s: s.exp()),
    "exp": Score("exp", sp.exp, np.exp, shift_invariant=True, tensor=lambda s: s.exp()),
    "sigmoid": Score("sigmoid", lambda s: 1 / (1 + sp.exp(-s)), _sigmoid, tensor=lambda s: s.sigmoid()),
    "relu": Score("relu", lambda s: sp.Max(s, 0), lambda s: np.maximum(s, 0.0), tensor=lambda s: s.clamp_min(0.0)),
    "softplus": Score("softplus", lambda s: sp.log(1 + sp.exp(s)), lambda s: np.logaddexp(0.0, s),
                      tensor=lambda s: s.logaddexp(s.new_zeros(()))),
    "square": Score("square", lambda s: s**2, np.square, tensor=lambda s: s.square()),
    "quadratic": Score("quadratic", lambda s: 1 + s + s**2 / 2, _quadratic, tensor=_quadratic),
}


def _gelu(s: np.ndarray) -> np.ndarray:
    """The exact GELU s Phi(s), Phi the standard normal distribution function."""
    from scipy.special import ndtr  # imported on use: the first stage stays light

    return s * ndtr(s)


#: The MLP's activations phi (docs/extensions.md §8.7); their Hermite data are a score's with normalisation "none".
ACTIVATIONS: dict[str, Score] = {
    "relu": SCORES["relu"],
    "gelu": Score("gelu", lambda s: s * (1 + sp.erf(s / sp.sqrt(2))) / 2, _gelu,
                  tensor=lambda s: s * (1 + (s / 2**0.5).erf()) / 2),
    "tanh": Score("tanh", sp.tanh, np.tanh, tensor=lambda s: s.tanh()),
    "identity": Score("identity", lambda s: s, lambda s: s, tensor=lambda s: s),
}


def elementwise(name: str) -> Score:
    """The score or the activation called ``name``; ValueError naming the choices otherwise."""
    found = SCORES.get(name, ACTIVATIONS.get(name))
    if found is None:
        raise ValueError(f"score: unknown function {name!r}; choose a score ({', '.join(sorted(SCORES))}) or an activation "
                         f"({', '.join(ACTIVATIONS)})")
    return found


def get_score(name: str) -> Score:
    """The registered score called ``name``; ValueError naming the choices otherwise."""
    try:
        return SCORES[name]
    except KeyError:
        raise ValueError(
            f"score: unknown score function {name!r}; choose one of {', '.join(sorted(SCORES))}"
        ) from None
