"""The modes of a layer, each one entry that both readings use (docs/model.md §1.8).

A value rule says how W_V^h is made from the head's W_K^h and, if it draws one, its own
Gaussian W'^h; an output rule says how W_O^h is made. Each rule's function works on SymPy
matrices (the Gaussian-equivalent polynomial, :mod:`gemhsa_sym.layer.equivalent`) and on numpy arrays
(the sampler, :mod:`gemhsa_sym.layer.readings`) alike; ``number`` turns an exact coefficient into the
reading's number (itself for SymPy, a float for numpy), so the two readings cannot drift
apart. The tokens, the target and the mask are entries too (:data:`TOKEN_RULES`, :data:`TARGET_RULES`,
:data:`MASK_RULES`): what each means for the polynomial and the sampler, its summary, and what it asks of
the other fields, read from one place. A new mode is one entry here; the module imports nothing of the
engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp

__all__ = ["KV_MODES", "MASK_RULES", "OUTPUT_MODES", "OUTPUT_RULES", "OUTPUT_SIDE", "TARGET_RULES", "TOKEN_RULES", "VALUE_RULES",
           "MaskRule", "OutputRule", "TargetRule", "TokenRule", "ValueRule"]

#: Exact coefficient -> the number of a reading (``lambda c: c`` for SymPy, ``float`` for numpy).
Number = Callable[[sp.Expr], Any]


@dataclass(frozen=True)
class ValueRule:
    """W_V^h = make(W_K^h, W'^h, rho, number); ``fresh``: the rule draws W'^h (d x d_v, N(0, 1/d));
    ``follows_keys``: values are built from the keys, so d_v = d_k and the values share as the keys do."""

    fresh: bool
    follows_keys: bool
    make: Callable[[Any, Any, sp.Expr, Number], Any]
    summary: str
    uses_rho: bool = False
    #: The summary as LaTeX (for documents)
    latex: str = ""


@dataclass(frozen=True)
class OutputRule:
    """W_O^h = make(W_K^h, its fresh block, scale, number), scale = sqrt(d / (H d_v)); ``fresh``: the
    rule draws W_O (H d_v x d_out, N(0, 1/(H d_v))); ``from_keys``: needs d_v = d_k and d_out = d."""

    fresh: bool
    from_keys: bool
    make: Callable[[Any, Any, sp.Expr, Number], Any]
    summary: str
    #: The summary as LaTeX (for documents)
    latex: str = ""


VALUE_RULES: dict[str, ValueRule] = {
    "independent": ValueRule(True, False, lambda key, fresh, rho, number: fresh, ""),
    "tied": ValueRule(False, True, lambda key, fresh, rho, number: key, "W_V = W_K", latex=r"$W_V^{h} = W_K^{h}$"),
    "correlated": ValueRule(
        True, True, lambda key, fresh, rho, number: number(rho) * key + number(sp.sqrt(1 - rho**2)) * fresh,
        "W_V = rho W_K + sqrt(1-rho^2) W'", uses_rho=True,
        latex=r"$W_V^{h} = \rho W_K^{h} + \sqrt{1 - \rho^{2}}\, W'^{h}$, $W'^{h}$ with $N(0, 1/d)$ entries",
    ),
}

OUTPUT_RULES: dict[str, OutputRule] = {
    "independent": OutputRule(True, False, lambda key, fresh, scale, number: fresh, ""),
    "keys": OutputRule(False, True, lambda key, fresh, scale, number: number(scale) * key.T, "W_O^h = W_K^hT (rescaled)",
                       latex=r"$W_O^{h} = \sqrt{d / (H d_v)}\, W_K^{hT}$"),
}

#: The choices of ``kv`` and ``output``.
KV_MODES: tuple[str, ...] = tuple(VALUE_RULES)
OUTPUT_MODES: tuple[str, ...] = tuple(OUTPUT_RULES)


# ---- tokens, target and mask (docs/model.md §1.8) ----------------------------------------------
Blocks = Sequence[tuple[int, int, float]]


def _no_check(config: Any) -> None:
    """A mode that needs nothing of the other fields."""


def _gaussian_tokens(n: int, d: int, blocks: Blocks, rng: np.random.Generator) -> np.ndarray:
    """n x d iid N(0, 1) tokens, each block of the width scaled by its sqrt(lambda) (one block of 1 without covariance)."""
    X = rng.standard_normal((n, d))
    for start, stop, root in blocks:
        X[:, start:stop] *= root
    return X


def _orthonormal_tokens(n: int, d: int, blocks: Blocks, rng: np.random.Generator) -> np.ndarray:
    """sqrt(d) times n rows of a Haar orthogonal matrix: the Q factor of a Gaussian d x n matrix with the signs of R's
    diagonal (docs/extensions.md §8.2)."""
    q, r = np.linalg.qr(rng.standard_normal((d, n)))
    return np.sqrt(d) * (q * np.sign(np.diag(r))).T


def _check_covariance(config: Any) -> None:
    if OUTPUT_RULES[config.output].from_keys or config.residual is not None:
        raise ValueError("tokens: with a token covariance the width d is split into blocks; the key-built output and "
                         "the residual stream, which need d as one dimension, are not supported")


def _check_orthonormal(config: Any) -> None:
    if config.d < config.n:
        raise ValueError(f"tokens: orthonormal tokens are n rows of a d x d orthogonal matrix, so n <= d; got d / n = {config.d}")
    if OUTPUT_RULES[config.output].from_keys:
        raise ValueError(f"tokens: with orthonormal tokens the output {config.output!r} ({OUTPUT_RULES[config.output].summary}) "
                         "is not independent of the keys X W_K; use output = 'independent'")
    if config.residual is not None:
        raise ValueError("tokens: the residual stream adds the tokens themselves, which are not Gaussian when orthonormal")


@dataclass(frozen=True)
class TokenRule:
    """How the tokens are drawn (docs/extensions.md §8.2, §8.3). ``projected``: the polynomial's Q, K, V are the projected
    tokens themselves (X W is iid Gaussian for orthonormal X), not X times weights; ``draw(n, d, blocks, rng)``: the
    sampler's n x d tokens; ``torch``: the torch backend draws them; ``check``: what the other fields must be."""

    projected: bool
    draw: Callable[[int, int, Blocks, np.random.Generator], np.ndarray]
    summary: Callable[[Any], str]
    torch: bool = False
    check: Callable[[Any], None] = _no_check


@dataclass(frozen=True)
class TargetRule:
    """What the law is the law of (docs/extensions.md §8.1): ``output_side``, the layer's output (with values, output
    projections and the residual stream; its columns centred) or, without them, the attention matrix itself;
    ``check``: what the other fields must be."""

    output_side: bool
    spectral_object: str
    summary: str
    check: Callable[[Any], None] = _no_check


@dataclass(frozen=True)
class MaskRule:
    """Which keys a query sees (docs/extensions.md §8.6): all n, or with ``causal`` the keys j <= i of query i."""

    causal: bool
    summary: str
    check: Callable[[Any], None] = _no_check


#: Fields that only the output target uses, with their defaults (docs/extensions.md §8.1).
OUTPUT_SIDE: dict[str, Any] = {"kv": "independent", "rho": 0, "output": "independent", "residual": None}


def _check_attention(config: Any) -> None:
    """The attention matrix of one head with row normalisation; no output-side field may be set."""
    if config.heads != 1:
        raise ValueError(f"target: 'attention' is the attention matrix of one head, got heads = {config.heads}")
    if config.normalisation != "row":
        raise ValueError("target: 'attention' needs row-normalised attention (A - 11^T/n has rows summing to 0)")
    given = [key for key, default in OUTPUT_SIDE.items() if getattr(config, key) != default]
    if given:
        raise ValueError(f"{given[0]}: an output-side field, not used with target = 'attention'")


def _check_causal(config: Any) -> None:
    """Row normalisation over the i keys of query i; the causal attention matrix sqrt(n) (A - C), C the causal average,
    for Gaussian tokens without a covariance (docs/equations.md §2.11, the attention matrix)."""
    if config.normalisation != "row":
        raise ValueError("mask: a causal layer normalises row i over its i keys; it needs normalisation = 'row'")
    if config.target == "attention" and config.tokens != "gaussian":
        raise ValueError(f"tokens: the causal attention matrix is derived for Gaussian tokens without a covariance, got "
                         f"tokens = {config.tokens!r} (prefixes of orthonormal tokens are blocks of a Haar projection, no "
                         "polynomial in Gaussian matrices; the pencil that splits d by a covariance is written for the "
                         "output only; docs/equations.md §2.11)")


def _covariance_summary(config: Any) -> str:
    spectrum = ", ".join(f"{v} ({w})" for v, w in config.token_covariance)
    return f"token covariance with eigenvalues (weights) {spectrum}"


TOKEN_RULES: dict[str, TokenRule] = {
    "gaussian": TokenRule(False, _gaussian_tokens, lambda config: "", torch=True),
    "orthonormal": TokenRule(True, _orthonormal_tokens, lambda config: "orthonormal tokens", check=_check_orthonormal),
    "covariance": TokenRule(False, _gaussian_tokens, _covariance_summary, check=_check_covariance),
}
TARGET_RULES: dict[str, TargetRule] = {
    "output": TargetRule(True, "eigenvalues of Y_c^T Y_c / n", ""),
    "attention": TargetRule(False, "eigenvalues of n (A - J)^T (A - J), J = 11^T/n", "target: the attention matrix sqrt(n) (A - J)",
                            _check_attention),
}
MASK_RULES: dict[str, MaskRule] = {
    "none": MaskRule(False, ""),
    "causal": MaskRule(True, "causal mask: query i sees the keys j <= i", _check_causal),
}
