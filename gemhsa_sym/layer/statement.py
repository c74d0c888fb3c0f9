"""The spectral object of a configuration stated in full, as ``gemhsa-sym sample --help`` states it (docs/model.md §1.1):
tokens, weights and their variances, scores with their 1/sqrt(d_k), attention, output, centring and the 1/n, read
from the configuration's fields and the entries of the mode table. Every output that says what a law is the law of
prints this (the ``derive`` summary, its JSON and LaTeX, the causal record)."""

from __future__ import annotations

from typing import Any

from gemhsa_sym.layer.modes import OUTPUT_RULES, VALUE_RULES

#: The parts of a configuration's one-line summary that are formulas, as LaTeX (the words stay text).
_TARGETS = {"attention": r"target: the attention matrix $\sqrt{n}\,(A - J)$"}
_MASKS = {"causal": r"causal mask: query $i$ sees the keys $j \le i$"}

__all__ = ["ratio_text", "statement", "statement_latex", "summary_latex"]

#: The function of each score in the attention, as docs/model.md §1.1 writes it.
SCORES = {"softmax": "exp"}


def ratio_text(ratio: Any, space: str = "") -> str:
    """``n/4``-style text for a dimension ratio to n (``d/H`` for the per-head width of infinitely many heads); ``space``
    between a numerator and n (" " in LaTeX: ``3 n/4``)."""
    if ratio is None:
        return "d/H"
    numerator = "n" if ratio.p == 1 else f"{ratio.p}{space}n"
    return numerator if ratio.q == 1 else f"{numerator}/{ratio.q}"


def _tokens(config: Any) -> str:
    """The tokens X and their law."""
    if config.token_rule.projected:
        return "X: sqrt(d) times n rows of a Haar orthogonal d x d matrix"
    if config.token_covariance is not None:
        return ("X = G Sigma^(1/2): G n x d with iid N(0, 1) entries, Sigma the token covariance; X_b in the model is X's "
                "block of columns of eigenvalue lambda_b, with iid N(0, lambda_b) entries")
    return "X: n x d, iid N(0, 1) entries"


def _attention(config: Any) -> str:
    """The scores and the attention matrix of head h."""
    f = SCORES.get(config.score, f"f = {config.score}")
    scores = f"S^h = beta X W_Q^h (X W_K^h)^T / sqrt(d_k) with beta = {config.beta}"
    mask = " on the keys j <= i of query i (causal mask)" if config.mask_rule.causal else ""
    attention = (f"A^h = rownorm({f}(S^h)){mask}" if config.normalisation == "row" else f"A^h = {f}(S^h){mask} / n")
    return f"{scores}, {attention}"


def statement(config: Any) -> str:
    """The spectral object of ``config`` in full (module docstring), with its widths as ratios to n."""
    widths = f"n tokens, d = {ratio_text(config.d)}, d_k = {ratio_text(config.d_k)}"
    weights = "W_Q^h, W_K^h: d x d_k with N(0, 1/d) entries"
    if not config.target_rule.output_side:
        centre = "C)^T (A - C), C_ij = 1/i on j <= i (the causal average)" if config.mask_rule.causal else "J)^T (A - J), J = 11^T/n"
        return f"the eigenvalues of n (A - {centre}, for one head: {_attention(config)}; {_tokens(config)}; {weights}; {widths}"
    value, output = VALUE_RULES[config.kv], OUTPUT_RULES[config.output]
    values = "V^h = X W_V^h, W_V^h: d x d_v with N(0, 1/d) entries" if not value.summary else f"V^h = X W_V^h with {value.summary}"
    outputs = ("W_O^h the h-th block of d_v rows of W_O: H d_v x d_out, N(0, 1/(H d_v)) entries" if not output.summary
               else f"{output.summary}")
    layer = f"Y = sum_(h=1..{config.heads}) A^h V^h W_O^h"
    if config.residual is not None:
        obj = (f"the eigenvalues of R^T P R / n, P = I - 11^T/n, for the residual stream R = X + alpha sqrt(n) Y with "
               f"alpha = {config.residual}")
    else:
        obj = "the eigenvalues of Y_c^T Y_c / n, Y_c = sqrt(n) (I - 11^T/n) Y the column-centred output"
    return (f"{obj}, of {layer}: {_attention(config)}; {values}; {outputs}; {_tokens(config)}; {weights}; {widths}, "
            f"d_v = {ratio_text(config.d_v)}, d_out = {ratio_text(config.d_out)}")


def statement_latex(config: Any) -> str:
    """:func:`statement` as LaTeX for a document: every formula in mathematics mode."""
    f = r"\exp" if config.score == "softmax" else rf"\mathrm{{{config.score}}}"
    scores = rf"$S^{{h}} = \beta\, X W_Q^{{h}} (X W_K^{{h}})^{{T}} / \sqrt{{d_k}}$ with $\beta = {config.beta}$"
    mask = r" on the keys $j \le i$ of query $i$ (causal mask)" if config.mask_rule.causal else ""
    attention = (rf"$A^{{h}} = \mathrm{{rownorm}}({f}(S^{{h}}))${mask}" if config.normalisation == "row"
                 else rf"$A^{{h}} = {f}(S^{{h}}) / n${mask}")
    if config.token_rule.projected:
        tokens = r"$X$ is $\sqrt{d}$ times $n$ rows of a Haar orthogonal $d \times d$ matrix"
    elif config.token_covariance is not None:
        tokens = (r"$X = G \Sigma^{1/2}$ with $G \in \mathbb{R}^{n \times d}$ of iid $N(0, 1)$ entries and $\Sigma$ the token "
                  r"covariance ($X_b$ in the model is the block of columns of $X$ of eigenvalue $\lambda_b$, with iid "
                  r"$N(0, \lambda_b)$ entries)")
    else:
        tokens = r"$X \in \mathbb{R}^{n \times d}$ has iid $N(0, 1)$ entries"
    weights = r"$W_Q^{h}, W_K^{h} \in \mathbb{R}^{d \times d_k}$ have $N(0, 1/d)$ entries"
    widths = [("d", config.d), ("d_k", config.d_k)]
    if not config.target_rule.output_side:
        obj = (r"the eigenvalues of $n (A - C)^{T} (A - C)$, $C_{ij} = 1/i$ on $j \le i$ (the causal average), for one head"
               if config.mask_rule.causal else
               r"the eigenvalues of $n (A - J)^{T} (A - J)$, $J = \mathbf{1}\mathbf{1}^{T}/n$, for one head")
        parts = [scores + ", " + attention, tokens, weights]
    else:
        value, output = VALUE_RULES[config.kv], OUTPUT_RULES[config.output]
        values = (r"$V^{h} = X W_V^{h}$, $W_V^{h} \in \mathbb{R}^{d \times d_v}$ with $N(0, 1/d)$ entries" if not value.summary
                  else r"$V^{h} = X W_V^{h}$ with " + value.latex)
        outputs = (r"$W_O^{h}$ the $h$-th block of $d_v$ rows of $W_O \in \mathbb{R}^{H d_v \times d_{out}}$ with "
                   r"$N(0, 1/(H d_v))$ entries" if not output.summary else output.latex)
        heads = r"\infty" if config.infinite_heads else str(config.heads)
        layer = rf"$Y = \sum_{{h=1}}^{{{heads}}} A^{{h}} V^{{h}} W_O^{{h}}$"
        if config.residual is not None:
            obj = (r"the eigenvalues of $R^{T} P R / n$, $P = I - \mathbf{1}\mathbf{1}^{T}/n$, for the residual stream "
                   rf"$R = X + \alpha \sqrt{{n}}\, Y$ with $\alpha = {config.residual}$")
        else:
            obj = r"the eigenvalues of $Y_c^{T} Y_c / n$, $Y_c = \sqrt{n}\,(I - \mathbf{1}\mathbf{1}^{T}/n)\, Y$ the column-centred output"
        obj += ", of " + layer
        parts = [scores + ", " + attention, values, outputs, tokens, weights]
        widths += [("d_v", config.d_v), ("d_{out}", config.d_out)]
    sizes = r"$n$ tokens, " + ", ".join(rf"${name} = {ratio_text(ratio, ' ')}$" for name, ratio in widths)
    return f"{obj}: " + "; ".join([*parts, sizes])


def summary_latex(config: Any) -> str:
    """The configuration's one-line summary (``Config.summary``) as LaTeX for a document: heads, widths as ratios to n,
    shared projections, value and output rules, temperature, score, residual stream, target, tokens and mask."""
    widths = [("d", "d"), ("d_k", "d_k")] + ([("d_v", "d_v"), ("d_{out}", "d_out")] if config.target_rule.output_side else [])
    ratios = config.ratios()
    heads = r"\infty" if config.infinite_heads else str(config.heads)
    parts = [rf"$H = {heads}$; " + ", ".join(rf"${name} = {ratio_text(ratios[key], ' ')}$" for name, key in widths)
             + " (ratios to $n$)"]
    parts += [f"{', '.join(f'${name}$' for name in names)} shared {how}" for how, names in config.shared().items()]
    value, output = VALUE_RULES[config.kv], OUTPUT_RULES[config.output]
    parts += [value.latex + (rf", $\rho = {config.rho}$" if value.uses_rho else "")] if value.latex else []
    parts += [output.latex] if output.latex else []
    norm = "row-normalised" if config.normalisation == "row" else "unnormalised ($/n$)"
    parts.append(rf"$\beta = {config.beta}$, {config.score}, {norm}")
    if config.residual is not None:
        parts.append(rf"residual stream $R = X + \alpha \sqrt{{n}}\, Y$ with $\alpha = {config.residual}$")
    parts.append(_TARGETS.get(config.target, "").replace("(A - J)", "(A - C)") if config.mask_rule.causal else _TARGETS.get(config.target, ""))
    if config.token_rule.projected:
        parts.append("orthonormal tokens")
    elif config.token_covariance is not None:
        parts.append("token covariance with eigenvalues (weights) " + ", ".join(f"${v}$ (${w}$)" for v, w in config.token_covariance))
    parts.append(_MASKS.get(config.mask, ""))
    return "; ".join(part for part in parts if part)
