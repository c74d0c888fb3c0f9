"""One attention layer, read three ways from one configuration (docs/model.md §1.8).

:class:`AttentionLayer` gives the real layer's draw (tokens, weights, softmax output), the
Gaussian-equivalent polynomial (:func:`gaussian_equivalent`), and the Gaussian-equivalent
draw as *that polynomial's own* realisation: the same tokens and weights, a fresh noise Z^h
per head, and the polynomial's per-head term evaluated on them. So the Gaussian-equivalent
draws cannot drift from the equations. The weights follow the value and output rules of
:mod:`gemhsa_sym.layer.modes`, the same entries the polynomial is built from.

In the engine's normalisation (every Gaussian N(0, scale / n)) the polynomial's X and Z are the
sampler's tokens and noise over sqrt(n), its weights are the sampler's weights; then the
polynomial's Y equals the Gaussian-equivalent output Y = sum_h (1/n)(c_0 11^T + mu_1 S0^h +
sigma Z^h) V^h W_O^h less its rank-one c_0 part, which column centring removes exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sympy as sp
from sympy.matrices.expressions import MatAdd, MatMul, Transpose

from gemhsa_sym.free.equations.scale import to_float
from gemhsa_sym.free.expressions.matrices import Gaussian, without_powers
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.equivalent import MU1, SIGMA, GaussianEquivalent, gaussian_equivalent
from gemhsa_sym.layer.hermite import hermite_data
from gemhsa_sym.layer.modes import OUTPUT_RULES, VALUE_RULES
from gemhsa_sym.layer.scores import get_score

__all__ = ["MAX_COEFFICIENT", "MODELS", "AttentionLayer", "Projection", "Weights", "draw_tokens", "draw_weights",
           "ge_coefficients", "layer_of", "layer_output"]

#: ``softmax``: the real layer (docs/model.md §1.1); ``ge``: its Gaussian equivalent (docs/model.md §1.5);
#: ``ge_without_uniform``: a causal layer's Gaussian equivalent without its uniform part c_0 / i, the equivalent its law
#: describes (docs/extensions.md §8.6).
MODELS: tuple[str, ...] = ("softmax", "ge", "ge_without_uniform")
#: Largest Gaussian-equivalence coefficient drawn: above it the spectrum overflows double precision.
MAX_COEFFICIENT = 1e100


@dataclass(frozen=True, eq=False)
class Projection:
    """A projection W^h for every head: one matrix per sharing group, and each head's group."""

    matrices: tuple[np.ndarray, ...]
    group: tuple[int, ...]

    def head(self, h: int) -> np.ndarray:
        """The matrix of head ``h``."""
        return self.matrices[self.group[h]]


@dataclass(frozen=True, eq=False)
class Weights:
    """W_Q, W_K, W_V per head and the output blocks W_O^h (d_v x d_out) of docs/model.md §1.1, and the
    matrices the rules drew of their own (W'^h of the values, the blocks of W_O), None where none."""

    query: Projection
    key: Projection
    value: Projection
    output: tuple[np.ndarray, ...]
    fresh_value: Projection | None = None
    fresh_output: tuple[np.ndarray, ...] | None = None


def draw_tokens(sizes: dict[str, int], rng: np.random.Generator) -> np.ndarray:
    """Tokens X (n x d), iid N(0, 1)."""
    return rng.standard_normal((sizes["n"], sizes["d"]))


def _group_index(partition: tuple[tuple[int, ...], ...], heads: int) -> tuple[int, ...]:
    """The sharing group of every head, in the order of :meth:`Config.group_of`, in one pass."""
    index = [0] * heads
    for g, group in enumerate(partition):
        for h in group:
            index[h] = g
    return tuple(index)


def ge_coefficients(config: Config) -> tuple[float, float, float]:
    """(c_0, mu_1, sigma) of the Gaussian-equivalent replacement (docs/model.md §1.5) in double
    precision, mu_1 per unit of the scores' standard deviation (docs/extensions.md §8.3); ValueError
    naming beta where they overflow it (:data:`MAX_COEFFICIENT`)."""
    scale = config.score_scale
    c0, mu1, sigma = _ge_coefficients(config.score, config.beta * scale, config.normalisation)
    return c0, mu1 / float(scale), sigma


@functools.cache
def _ge_coefficients(score: str, beta: sp.Expr, normalisation: str) -> tuple[float, float, float]:
    """Cached body of :func:`ge_coefficients`."""
    c0, mu1, sigma2 = hermite_data(score, beta, normalisation).numeric()
    if not all(np.isfinite(v) and abs(v) <= MAX_COEFFICIENT for v in (c0, mu1, sigma2)):
        raise ValueError(
            f"beta: the Gaussian equivalent of the {score} score at beta = {beta} overflows double precision "
            f"(sigma^2 = {sp.N(hermite_data(score, beta, normalisation).sigma2, 3)}); it can be drawn while "
            f"c_0, mu_1 and sigma^2 stay below {MAX_COEFFICIENT:g}"
        )
    return c0, mu1, sigma2**0.5


#: The per-head polynomial as the draws evaluate it: ("matrix", Gaussian, transposed), ("transpose", term),
#: ("sum", terms) or ("product", coefficient, factors).
Term = tuple


def _term_of(expr: Any) -> Term:
    """The :data:`Term` of a matrix polynomial without powers, as written."""
    if isinstance(expr, Gaussian):
        return ("matrix", expr, False)
    if isinstance(expr, Transpose):
        return ("matrix", expr.arg, True) if isinstance(expr.arg, Gaussian) else ("transpose", _term_of(expr.arg))
    if isinstance(expr, MatAdd):
        return ("sum", tuple(_term_of(a) for a in expr.args))
    if isinstance(expr, MatMul):
        c, mats = expr.as_coeff_matrices()
        return ("product", c, tuple(_term_of(m) for m in mats))
    raise TypeError(f"the Gaussian-equivalent term {expr} ({type(expr).__name__}) is not a polynomial in Gaussians")


def _numeric(term: Term, values: dict[sp.Symbol, float]) -> Term:
    """``term`` with its coefficients as floats at ``values``."""
    if term[0] == "matrix":
        return term
    if term[0] == "product":
        return ("product", to_float(term[1], values), tuple(_numeric(t, values) for t in term[2]))
    return (term[0], tuple(_numeric(t, values) for t in term[1])) if term[0] == "sum" else ("transpose", _numeric(term[1], values))


def evaluate_term(term: Term, real: dict[Gaussian, Any], multi_dot: Callable[[list[Any]], Any]) -> Any:
    """The matrix of a numeric :data:`Term` with each Gaussian's array in ``real`` (numpy or torch), every product of
    several factors by ``multi_dot`` (in its cheapest order)."""
    kind = term[0]
    if kind == "matrix":
        return real[term[1]].T if term[2] else real[term[1]]
    if kind == "transpose":
        return evaluate_term(term[1], real, multi_dot).T
    if kind == "sum":
        parts = [evaluate_term(t, real, multi_dot) for t in term[1]]
        out = parts[0]
        for part in parts[1:]:
            out = out + part
        return out
    arrays = [evaluate_term(t, real, multi_dot) for t in term[2]]
    return term[1] * (arrays[0] if len(arrays) == 1 else multi_dot(arrays))


class AttentionLayer:
    """The real layer and its Gaussian equivalent from one :class:`~gemhsa_sym.layer.config.Config` (module docstring)."""

    def __init__(self, config: Config) -> None:
        self.config = config

    @functools.cached_property
    def equivalent(self) -> GaussianEquivalent:
        """The Gaussian-equivalent polynomial (:func:`gemhsa_sym.layer.equivalent.gaussian_equivalent`)."""
        return gaussian_equivalent(self.config)

    @functools.cached_property
    def _term(self) -> Term:
        """The per-head term as :func:`evaluate_term` reads it, coefficients symbolic."""
        return _term_of(without_powers(self.equivalent.template.doit()))

    @property
    def readings(self) -> tuple[str, ...]:
        """The models of :data:`MODELS` that read this layer: ``ge_without_uniform`` only for a causal one (a
        bidirectional layer's centred output has no uniform part)."""
        return MODELS if self.config.mask_rule.causal else MODELS[:2]

    @property
    def centred(self) -> bool:
        """Whether the draw's spectral object centres the output's columns (docs/model.md §1.1): yes for
        the output (and the residual stream), no for the attention matrix sqrt(n) (A - J)."""
        return self.config.target_rule.output_side

    def draw_tokens(self, sizes: dict[str, int], rng: np.random.Generator) -> np.ndarray:
        """Tokens X (n x d) as the tokens' entry of the mode table draws them (:data:`~.modes.TOKEN_RULES`: iid N(0, 1),
        sqrt(d) times n rows of a Haar orthogonal matrix, or G Sigma^(1/2); docs/extensions.md §8.2, §8.3)."""
        return self.config.token_rule.draw(sizes["n"], sizes["d"], self._blocks(sizes["d"]), rng)

    def _blocks(self, d: int) -> list[tuple[int, int, float]]:
        """(start, stop, sqrt(lambda)) of each block of the width under the token covariance (one block of 1)."""
        out, start = [], 0
        for value, weight in self.config.token_covariance or ((sp.Integer(1), sp.Integer(1)),):
            stop = start + int(weight * d)
            out.append((start, stop, float(sp.sqrt(value))))
            start = stop
        return out

    def draw_weights(self, sizes: dict[str, int], rng: np.random.Generator) -> Weights:
        """The weights of docs/model.md §1.1 with the sharing of ``config`` and its value and output rules:
        one N(0, 1/d) matrix per sharing group of W_Q, W_K (and of W'^h where the value rule draws one),
        W_O N(0, 1/(H d_v)) in head blocks of d_v rows where the output rule draws it."""
        config = self.config
        d, d_k, d_v, d_out, heads = sizes["d"], sizes["d_k"], sizes["d_v"], sizes["d_out"], config.heads
        value_rule, output_rule = VALUE_RULES[config.kv], OUTPUT_RULES[config.output]

        def draw(which: str, columns: int) -> Projection:
            partition = getattr(config, f"share_{which}")
            return Projection(tuple(rng.normal(0.0, d**-0.5, (d, columns)) for _ in partition), _group_index(partition, heads))

        query, key = draw("q", d_k), draw("k", d_k)
        if not config.target_rule.output_side:  # the attention matrix has no values and no output
            return Weights(query, key, key, ())
        fresh = draw("v", d_v) if value_rule.fresh else None
        if not value_rule.follows_keys:
            value = Projection(tuple(value_rule.make(None, f, config.rho, float) for f in fresh.matrices), fresh.group)
        else:
            pairs = zip(key.matrices, fresh.matrices if fresh is not None else [None] * len(key.matrices), strict=True)
            made = tuple(value_rule.make(k, f, config.rho, float) for k, f in pairs)
            value = key if all(v is k for v, k in zip(made, key.matrices)) else Projection(made, key.group)
        blocks = None
        if output_rule.fresh:
            w_o = rng.normal(0.0, (heads * d_v) ** -0.5, (heads * d_v, d_out))
            blocks = tuple(w_o[h * d_v : (h + 1) * d_v] for h in range(heads))
        scale = sp.sqrt(sp.Rational(d, heads * d_v))
        output = tuple(output_rule.make(key.head(h), None if blocks is None else blocks[h], scale, float) for h in range(heads))
        return Weights(query, key, value, output, fresh, blocks)

    def output(self, weights: Weights, X: np.ndarray, model: str = "softmax", rng: np.random.Generator | None = None) -> np.ndarray:
        """The uncentred output Y (n x d_out): the real layer (``softmax``: A^h = rownorm(f(S^h)),
        S^h = beta Q^h K^hT / sqrt(d_k), max-shifted for shift-invariant f, or f(S^h) / n for
        ``normalisation="none"``), or its Gaussian equivalent (``ge``: the polynomial's per-head term on
        these tokens and weights, with a fresh Z^h per head drawn from ``rng`` in head order; ``ge_without_uniform``:
        a causal layer's without c_0)."""
        if model not in MODELS:
            raise ValueError(f"model: unknown model {model!r}; choose one of {', '.join(self.readings)}")
        if model not in self.readings:
            raise ValueError(f"model: {model!r} does not read this layer (it reads a causal one); choose one of "
                             f"{', '.join(self.readings)}")
        if model == "softmax" and not self.config.target_rule.output_side:
            return self._attention_matrix(weights, X)
        if self.config.mask_rule.causal and not self.config.target_rule.output_side:
            if rng is None:
                raise ValueError("rng: the Gaussian-equivalent model draws noise Z; pass a numpy Generator")
            return self._causal_attention_equivalent(weights, X, rng, uniform=model == "ge")
        if model == "softmax":
            Y = self._softmax(weights, X)
            return Y if self.config.residual is None else X / np.sqrt(len(X)) + float(self.config.residual) * Y
        if rng is None:
            raise ValueError("rng: the Gaussian-equivalent model draws noise Z; pass a numpy Generator")
        if self.config.mask_rule.causal:
            Y = self._causal_equivalent(weights, X, rng, uniform=model == "ge")
        else:
            Y = self._equivalent(weights, X, rng)
        if self.config.mask_rule.causal and self.config.residual is not None:
            return X / np.sqrt(len(X)) + float(self.config.residual) * Y
        return Y

    def _attention_matrix(self, weights: Weights, X: np.ndarray) -> np.ndarray:
        """sqrt(n) (A - J) of the real layer's one head (docs/extensions.md §8.1); with a causal mask sqrt(n) (A - C), C
        the causal average (row i: 1/i on j <= i)."""
        n, causal = len(X), self.config.mask_rule.causal
        s = (X @ weights.query.head(0)) @ (X @ weights.key.head(0)).T
        s *= float(self.config.beta) / weights.query.matrices[0].shape[1] ** 0.5
        f = self._score_weights(s)
        f /= f.sum(axis=1, keepdims=True)
        f -= np.tril(1.0 / np.arange(1, n + 1)[:, None] * np.ones((1, n))) if causal else 1.0 / n
        f *= np.sqrt(n)
        return f

    def _causal_attention_equivalent(self, weights: Weights, X: np.ndarray, rng: np.random.Generator,
                                     uniform: bool) -> np.ndarray:
        """sqrt(n) (A - C) of the causal equivalent (docs/equations.md §2.11): A_ij = (c_0 + mu_1 S_ij + sigma Z_ij) / i on
        j <= i, S = Q K^T / sqrt(d_k) the unscaled scores, Z n x n N(0, 1) from ``rng``; without c_0 where not ``uniform``
        (with row normalisation c_0 = 1, so that both readings subtract C exactly)."""
        c0 = ge_coefficients(self.config)[0]
        return np.sqrt(len(X)) * self._causal_head(weights, X, 0, rng, c0 - 1.0 if uniform else 0.0)

    def _causal_head(self, weights: Weights, X: np.ndarray, h: int, rng: np.random.Generator, uniform: float) -> np.ndarray:
        """Head h's causal equivalent A^h_ij = (``uniform`` + mu_1 S_ij + sigma Z_ij) / i for j <= i and 0 above the
        diagonal, S = Q^h K^hT / sqrt(d_k) the unscaled scores of these tokens and weights, Z n x n N(0, 1) drawn from
        ``rng`` (docs/extensions.md §8.6)."""
        n = len(X)
        _, mu1, sigma = ge_coefficients(self.config)
        a = (X @ weights.query.head(h)) @ (X @ weights.key.head(h)).T
        a *= mu1 / weights.query.matrices[0].shape[1] ** 0.5
        a += sigma * rng.standard_normal((n, n))
        if uniform:
            a += uniform
        a = np.tril(a)
        a /= np.arange(1, n + 1, dtype=float)[:, None]
        return a

    def _score_weights(self, s: np.ndarray) -> np.ndarray:
        """f(S) of the scores S (changed in place): a causal layer's masked above the diagonal before the row maximum and
        the score function, then max-shifted by rows for a shift-invariant f under row normalisation."""
        config, score = self.config, get_score(self.config.score)
        if config.mask_rule.causal:  # query i sees the keys j <= i
            s[np.triu_indices(len(s), 1)] = -np.inf
        if config.normalisation == "row" and score.shift_invariant:
            s -= s.max(axis=1, keepdims=True)
        return score.numeric(s) if not config.mask_rule.causal else np.tril(score.numeric(np.tril(s)))

    def _softmax(self, weights: Weights, X: np.ndarray) -> np.ndarray:
        config = self.config
        scale = float(config.beta) / weights.query.matrices[0].shape[1] ** 0.5
        queries = [X @ w for w in weights.query.matrices]
        for q in queries:
            q *= scale
        keys = [X @ w for w in weights.key.matrices]
        values = keys if weights.value is weights.key else [X @ w for w in weights.value.matrices]
        Y = np.zeros((len(X), weights.output[0].shape[1]))
        for h, w_o in enumerate(weights.output):
            f = self._score_weights(queries[weights.query.group[h]] @ keys[weights.key.group[h]].T)
            head = f @ values[weights.value.group[h]]
            head /= f.sum(axis=1, keepdims=True) if config.normalisation == "row" else len(f)
            Y += head @ w_o
        return Y

    def ge_term(self) -> Term:
        """The per-head term of the polynomial (docs/model.md §1.7) with its coefficients in double precision, as
        :func:`evaluate_term` evaluates it on every backend: its sums and products as written, not expanded (a token
        covariance of L levels has L^3 monomials)."""
        _, mu1, sigma = ge_coefficients(self.config)
        return _numeric(self._term, {MU1: mu1, SIGMA: sigma})

    @staticmethod
    def ge_noise(n: int, rng: np.random.Generator) -> np.ndarray:
        """One head's noise of the polynomial, Z^h / sqrt(n) with Z^h n x n N(0, 1), drawn from ``rng``."""
        return rng.standard_normal((n, n)) / np.sqrt(n)

    def ge_head(self, weights: Weights, h: int, tokens: Any, noise: Any) -> dict[Gaussian, Any]:
        """Head ``h``'s realisation of the polynomial's Gaussians: X = ``tokens`` (the sampler's over sqrt(n);
        with a token covariance X_b = the tokens' block of value lambda, the Gaussian of scale lambda, with the
        weights' rows of that block),
        Z = ``noise``, W_Q^h, W_K^h and, where the polynomial has them, the drawn W'^h and W_O^h block;
        with orthonormal tokens the polynomial's Q, K, V are the tokens times W_Q^h, W_K^h, W'^h.
        ``tokens`` and ``noise`` may be arrays of any library (numpy for orthonormal tokens); the weights
        are numpy arrays."""
        roles = self.equivalent.roles
        real = {roles["Z"]: noise}
        if self.config.token_rule.projected:  # the polynomial's Q, K, V are the projected tokens
            real[roles["W_Q"][0]] = tokens @ weights.query.head(h)
            real[roles["W_K"][0]] = tokens @ weights.key.head(h)
            for V in roles["W_V"]:
                real[V] = tokens @ weights.fresh_value.head(h)
        else:  # a block X_b of the polynomial (scale lambda) is the tokens' block
            for b, (start, stop, _) in enumerate(self._blocks(tokens.shape[1])):
                real[roles["X"][b]] = tokens[:, start:stop]
                real[roles["W_Q"][b]] = weights.query.head(h)[start:stop]
                real[roles["W_K"][b]] = weights.key.head(h)[start:stop]
                if roles["W_V"]:
                    real[roles["W_V"][b]] = weights.fresh_value.head(h)[start:stop]
        if roles["W_O"] is not None:
            real[roles["W_O"]] = weights.fresh_output[h]
        return real

    def _causal_equivalent(self, weights: Weights, X: np.ndarray, rng: np.random.Generator, uniform: bool) -> np.ndarray:
        """The causal layer's Gaussian equivalent (docs/extensions.md §8.6): sum_h A^h V^h W_O^h with
        A^h_ij = (c_0 + mu_1 S_ij + sigma Z^h_ij) / i for j <= i and 0 above the diagonal, S = Q^h K^hT / sqrt(d_k)
        the unscaled scores of these tokens and weights, Z^h n x n N(0, 1) drawn from ``rng`` in head order; without
        c_0 where not ``uniform``."""
        c0 = ge_coefficients(self.config)[0] if uniform else 0.0
        Y = np.zeros((len(X), weights.output[0].shape[1]))
        for h, w_o in enumerate(weights.output):
            Y += self._causal_head(weights, X, h, rng, c0) @ (X @ weights.value.head(h)) @ w_o
        return Y

    def _equivalent(self, weights: Weights, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        n = len(X)
        term = self.ge_term()
        tokens = X / np.sqrt(n)
        Y = np.zeros((n, n if not self.config.target_rule.output_side else weights.output[0].shape[1]))
        for h in range(self.config.heads):
            Y += evaluate_term(term, self.ge_head(weights, h, tokens, self.ge_noise(n, rng)), np.linalg.multi_dot)
        return Y


@functools.lru_cache(maxsize=64)
def layer_of(config: Config) -> AttentionLayer:
    """The :class:`AttentionLayer` of ``config`` (one per configuration, so its polynomial is built once)."""
    return AttentionLayer(config)


def draw_weights(config: Config, sizes: dict[str, int], rng: np.random.Generator) -> Weights:
    """:meth:`AttentionLayer.draw_weights` of ``config``."""
    return layer_of(config).draw_weights(sizes, rng)


def layer_output(config: Config, weights: Weights, X: np.ndarray, model: str = "softmax",
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """:meth:`AttentionLayer.output` of ``config``."""
    return layer_of(config).output(weights, X, model, rng)
