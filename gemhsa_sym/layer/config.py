"""Configuration of one random multi-head self-attention layer (docs/model.md §1.1, §1.3).

A :class:`Config` is the single description from which both the sampler and the
Gaussian-equivalent model are read. Dimensions are stored as exact ratios to the
token count n (n -> 1), with an optional integer token count ``size_n`` when the
configuration was given in sizes. Everything is validated on construction:
a configuration that cannot exist raises a ``ValueError`` whose message starts
with the offending field and says why.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import sympy as sp
import tomli_w

from gemhsa_sym.files import is_model, read_toml
from gemhsa_sym.layer.covariance import token_spectrum
from gemhsa_sym.layer.dimensions import DIMENSIONS, dimension_ratios
from gemhsa_sym.layer.hermite import NORMALISATIONS
from gemhsa_sym.layer.modes import KV_MODES, MASK_RULES, OUTPUT_MODES, OUTPUT_RULES, OUTPUT_SIDE, TARGET_RULES, TOKEN_RULES, VALUE_RULES
from gemhsa_sym.layer.scores import get_score
from gemhsa_sym.layer.sharing import INFINITE_HEADS, Partition, partition, partition_spec, sharing_keyword
from gemhsa_sym.layer.statement import ratio_text, statement
from gemhsa_sym.parse import integer_value, real_number

__all__ = [
    "DIMENSIONS",
    "Partition",
    "Config",
]

SHARING_FIELDS: dict[str, str] = {"q": "share_q", "k": "share_k", "v": "share_v"}

#: Most heads: sharing partitions are stored head by head.
MAX_HEADS = 10**6


@dataclass(frozen=True)
class Config:
    """One random MHSA layer (docs/model.md §1.1) with the options of docs/model.md §1.3.

    Dimensions ``n, d, d_k, d_v, d_out`` are given either as ratios to n
    (``n = 1``; ints, ``"1/4"``, Fractions or SymPy Rationals) or as integer
    sizes (``n`` a token count > 1, see also :meth:`from_sizes`). Defaults:
    ``d = n``, ``d_k = d / heads``, ``d_v = d_k``, ``d_out = d``. After
    construction the dimension fields hold exact ``sympy.Rational`` ratios
    (``n == 1``) and ``size_n`` the token count if sizes were given.

    ``share_q``, ``share_k``, ``share_v`` partition the heads into groups that
    use one matrix; given as ``"independent"``, ``"all"``, ``{"groups": G}``
    (G equal consecutive groups) or an explicit list of lists, and stored as a
    sorted tuple of sorted tuples. ``share_v`` defaults to ``share_k`` when
    ``kv`` is ``"tied"`` (W_V^h = W_K^h) or ``"correlated"``
    (W_V^h = rho W_K^h + sqrt(1 - rho^2) W'^h), and to independent otherwise.
    ``output = "keys"`` sets W_O^h = W_K^hT sqrt(d / (H d_v)).
    ``normalisation = "row"`` gives A = rownorm(f(beta S)) (softmax for
    f = exp), ``"none"`` gives A = f(beta S) / n.

    ``target = "attention"`` (default ``"output"``) asks for the law of the attention matrix
    itself, the squared singular values of sqrt(n) (A - 11^T/n), for one head with row
    normalisation; the output-side fields (d_v, d_out, kv, rho, output, share_v, residual)
    are then left out. ``residual = alpha`` (default none) adds the residual stream
    R = X + alpha sqrt(n) Y (needs d_out = d) and asks for the law of R^T P R / n,
    P = I - 11^T/n. ``tokens = "orthonormal"`` (default ``"gaussian"``) draws the tokens as
    sqrt(d) times n rows of a Haar orthogonal matrix (n <= d). ``mask = "causal"`` (default ``"none"``)
    lets query i see the keys j <= i only (docs/extensions.md §8.1, §8.2, §8.4, §8.6).

    ``heads = "oo"`` asks for the limit of infinitely many heads (docs/extensions.md §8.5): with
    d_k and d_v left out, H d_k = H d_v = d (the fields hold None); given, they stay fixed per head.
    Its sharing fields are ``"independent"`` or ``"all"``; it has a law but no sample.
    """

    n: sp.Rational = sp.Integer(1)
    d: sp.Rational | None = None
    d_k: sp.Rational | None = None
    d_v: sp.Rational | None = None
    d_out: sp.Rational | None = None
    heads: int | str = 1
    beta: sp.Expr = sp.Integer(1)
    score: str = "softmax"
    normalisation: str = "row"
    share_q: Partition | Any = "independent"
    share_k: Partition | Any = "independent"
    share_v: Partition | Any = None
    kv: str = "independent"
    rho: sp.Expr = sp.Integer(0)
    output: str = "independent"
    name: str | None = None
    size_n: int | None = None
    target: str = "output"
    residual: sp.Expr | None = None
    tokens: str = "gaussian"
    token_covariance: Mapping[str, Any] | tuple[tuple[sp.Expr, sp.Expr], ...] | None = None
    mask: str = "none"

    def __post_init__(self) -> None:
        def put(key: str, value: Any) -> None:
            object.__setattr__(self, key, value)

        if self.target in TARGET_RULES and not TARGET_RULES[self.target].output_side:
            given = [key for key in ("d_v", "d_out", "share_v") if getattr(self, key) is not None]
            if given:
                raise ValueError(f"{given[0]}: an output-side field, not used with target = 'attention'")
        heads = self._heads()
        put("heads", heads)
        for key, value in dimension_ratios({key: getattr(self, key) for key in (*DIMENSIONS, "size_n")}, heads).items():
            put(key, value)
        if self.size_n is not None:
            self.sizes()

        put("beta", real_number("beta", self.beta))
        rho = real_number("rho", self.rho)
        if not -1 <= rho <= 1:
            raise ValueError(f"rho: must lie in [-1, 1], got {rho}")
        put("rho", rho)
        if not isinstance(self.score, str):
            raise ValueError(f"score: expected a score name, got {self.score!r}")
        get_score(self.score)
        for key, choices in (("normalisation", NORMALISATIONS), ("kv", KV_MODES), ("output", OUTPUT_MODES),
                             ("target", tuple(TARGET_RULES)), ("tokens", tuple(TOKEN_RULES)), ("mask", tuple(MASK_RULES))):
            if getattr(self, key) not in choices:
                raise ValueError(f"{key}: unknown option {getattr(self, key)!r}; choose one of {', '.join(choices)}")
        if self.name is not None and not isinstance(self.name, str):
            raise ValueError(f"name: expected a string, got {self.name!r}")
        self.mask_rule.check(self)
        put("token_covariance", token_spectrum(self.tokens, self.token_covariance))
        self.token_rule.check(self)
        if self.residual is not None:
            put("residual", real_number("residual", self.residual))
            if self.d_out != self.d:
                raise ValueError(f"residual: R = X + alpha sqrt(n) Y needs d_out == d, got d_out = {self.d_out}, d = {self.d}")

        put("share_q", partition("share_q", self.share_q, heads))
        put("share_k", partition("share_k", self.share_k, heads))
        value_rule, output_rule = VALUE_RULES[self.kv], OUTPUT_RULES[self.output]
        if not value_rule.follows_keys:
            share_v = "independent" if self.share_v is None else self.share_v
            put("share_v", partition("share_v", share_v, heads))
        else:
            if self.d_v != self.d_k:
                raise ValueError(f"kv: {self.kv!r} keys and values need d_v == d_k, got {self.d_v} and {self.d_k}")
            share_v = self.share_k if self.share_v is None else partition("share_v", self.share_v, heads)
            if share_v != self.share_k:
                raise ValueError(
                    f"share_v: with kv = {self.kv!r} the values follow the keys' sharing; "
                    f"share_v must equal share_k {self.share_k} or be left out"
                )
            put("share_v", share_v)
        if not value_rule.uses_rho and rho != 0:
            raise ValueError(f"rho: only used with kv = 'correlated'; got rho = {rho} with kv = {self.kv!r}")
        if output_rule.from_keys and (self.d_v != self.d_k or self.d_out != self.d):
            raise ValueError(
                f"output: {self.output!r} ({output_rule.summary}) needs d_v == d_k and d_out == d, "
                f"got d_k = {self.d_k}, d_v = {self.d_v}, d = {self.d}, d_out = {self.d_out}"
            )
        self.target_rule.check(self)

    def _heads(self) -> int | str:
        """The number of heads, or "oo" (checked against the fields it does not allow)."""
        if self.heads in (INFINITE_HEADS, sp.oo):
            for key, allowed in (("target", "output"), ("mask", "none"), ("tokens", "gaussian")):
                if getattr(self, key) != allowed:
                    why = ("; a causal law is the two-point equation written head by head (exchangeable heads reduced "
                           "to two), whose limit of infinitely many heads is not derived: give a finite number of heads"
                           if key == "mask" else "")
                    raise ValueError(f"heads: infinitely many heads are built for {key} = {allowed!r}, "
                                     f"got {getattr(self, key)!r}{why}")
            return INFINITE_HEADS
        heads = integer_value("heads", self.heads)
        if heads < 1:
            raise ValueError(f"heads: need at least one head, got {heads}")
        if heads > MAX_HEADS:
            raise ValueError(f"heads: at most {MAX_HEADS} heads, got {heads}")
        return heads

    @property
    def infinite_heads(self) -> bool:
        """Whether this is the limit of infinitely many heads (docs/extensions.md §8.5)."""
        return self.heads == INFINITE_HEADS

    token_rule = property(lambda self: TOKEN_RULES[self.tokens], doc="The entry of the tokens in the mode table.")
    target_rule = property(lambda self: TARGET_RULES[self.target], doc="The entry of the target in the mode table.")
    mask_rule = property(lambda self: MASK_RULES[self.mask], doc="The entry of the mask in the mode table.")

    @property
    def statement(self) -> str:
        """The spectral object in full, with every normalisation (:func:`~gemhsa_sym.layer.statement.statement`)."""
        return statement(self)

    @property
    def spectral_object(self) -> str:
        """What the law is the law of, in words (docs/model.md §1.1, docs/extensions.md §8.1, §8.4)."""
        if self.residual is not None:
            return "eigenvalues of R^T P R / n, R = X + alpha sqrt(n) Y, P = I - 11^T/n"
        if self.mask_rule.causal and not self.target_rule.output_side:
            return "eigenvalues of n (A - C)^T (A - C), C_ij = 1/i on j <= i (the causal average)"
        return self.target_rule.spectral_object

    @property
    def score_scale(self) -> sp.Expr:
        """The standard deviation of the scores' off-diagonal entries S0_ij = q_i . k_j / sqrt(d_k): 1, or
        with token covariance Sigma the mean of its spectrum tr(Sigma) / d (docs/extensions.md §8.3)."""
        if self.token_covariance is None:
            return sp.Integer(1)
        return sum(v * w for v, w in self.token_covariance)

    @classmethod
    def from_sizes(cls, n: int, d: int | None = None, d_k: int | None = None, d_v: int | None = None,
                   d_out: int | None = None, **options: Any) -> Config:
        """A configuration from integer sizes with token count ``n`` (defaults as in the class)."""
        return cls(n=n, d=d, d_k=d_k, d_v=d_v, d_out=d_out, size_n=n, **options)

    def ratios(self) -> dict[str, sp.Rational]:
        """Dimension ratios to n: keys ``n`` (= 1), ``d``, ``d_k``, ``d_v``, ``d_out`` (None for the per-head
        widths d / H of infinitely many heads)."""
        return {key: getattr(self, key) for key in DIMENSIONS}

    def sizes(self, n: int | None = None) -> dict[str, int]:
        """Integer sizes for token count ``n`` (default ``size_n``); ValueError naming a non-integral one,
        or the heads of a configuration with infinitely many, which has no finite size."""
        if self.infinite_heads:
            raise ValueError("heads: infinitely many heads ('oo') have a law but no finite sample; draw a finite number "
                             "of heads (--heads H, or verify --sample-heads H)")
        if n is None:
            n = self.size_n
        if n is None:
            raise ValueError("n: the configuration has no token count; give n")
        n = integer_value("n", n)
        if n < 1:
            raise ValueError(f"n: must be a positive token count, got {n}")
        sizes = {}
        for key, ratio in self.ratios().items():
            size = ratio * n
            if not size.is_integer or size < 1:
                raise ValueError(f"{key}: {ratio} * n = {size} is not a positive integer size at n = {n}")
            sizes[key] = int(size)
        for k, (_, weight) in enumerate(self.token_covariance or ()):
            block = weight * sizes["d"]
            if not block.is_integer:
                raise ValueError(f"token_covariance: weight {k} ({weight}) of d = {sizes['d']} is not an integer block at n = {n}")
        return sizes

    def group_of(self, which: str, head: int) -> int:
        """Index of the sharing group of ``head`` for W_Q, W_K or W_V (``which`` in q, k, v)."""
        key = SHARING_FIELDS.get(which.lower().removeprefix("w_"))
        if key is None:
            raise ValueError(f"which: expected one of q, k, v, got {which!r}")
        if self.infinite_heads:
            raise ValueError("heads: infinitely many heads ('oo') are not numbered; their sharing is a keyword")
        for index, group in enumerate(getattr(self, key)):
            if head in group:
                return index
        raise ValueError(f"head: {head} is not a head of this configuration (0..{self.heads - 1})")

    def replace(self, **changes: Any) -> Config:
        """A validated copy with ``changes``; string values are coerced (for ``--set field=value``).

        Dimensions are ratios to n; ``n`` itself sets the token count ``size_n``. Changing ``heads`` without
        ``d_k`` or ``d_v`` follows the one rule of :meth:`with_heads` (docs/model.md §1.3): where this
        configuration has H d_k = d, the per-head widths follow. When the result has tied or correlated keys
        and values and ``share_v`` is not changed, the values follow the keys' sharing.
        """
        if "heads" in changes and not {"d_k", "d_v"} & set(changes):
            return self.with_heads(changes["heads"])._replaced({key: value for key, value in changes.items() if key != "heads"})
        return self._replaced(changes)

    def _replaced(self, changes: dict[str, Any]) -> Config:
        """:meth:`replace` with ``changes`` as given (the widths as they are)."""
        data = self.to_dict()
        if "n" in changes:
            changes = dict(changes)
            n = real_number("n", changes.pop("n"))
            if n != 1:
                changes["size_n"] = n
        data |= changes
        rule = VALUE_RULES.get(data.get("kv", "independent"))
        if rule is not None and rule.follows_keys and "share_v" not in changes:
            data.pop("share_v", None)
        return Config.from_dict(data)

    def with_heads(self, heads: Any) -> Config:
        """A copy with ``heads`` heads (or "oo"); where this configuration has H d_k = d, the per-head widths
        follow (d_k = d / H, and d_v = d_k where d_v equals d_k), so that the total width stays d."""
        infinite = heads in (INFINITE_HEADS, sp.oo)
        heads = INFINITE_HEADS if infinite else integer_value("heads", heads)
        changes: dict[str, Any] = {"heads": heads}
        for key in ("d_k", "d_v"):
            ratio = getattr(self, key)
            if ratio is None or (not self.infinite_heads and ratio * self.heads == self.d):  # H d_k = d
                changes[key] = None if infinite else self.d / heads
        if infinite:  # sharing by keyword: per head or by all
            for key in SHARING_FIELDS.values():
                if not (key == "share_v" and VALUE_RULES[self.kv].follows_keys):
                    changes[key] = sharing_keyword(key, getattr(self, key), self.heads)
        return self._replaced(changes)

    def to_dict(self) -> dict[str, Any]:
        """JSON- and TOML-able fields; exact numbers as strings (``"1/4"``); None, the default target and,
        for the attention target, the output-side fields left out."""
        data: dict[str, Any] = {"name": self.name}
        data |= {key: str(value) for key, value in self.ratios().items() if value is not None}
        data |= {
            "size_n": self.size_n,
            "heads": self.heads,
            "beta": str(self.beta),
            "score": self.score,
            "normalisation": self.normalisation,
        }
        data |= {key: partition_spec(getattr(self, key), self.heads) for key in SHARING_FIELDS.values()}
        data |= {"kv": self.kv, "rho": str(self.rho), "output": self.output}
        if self.target != "output":
            data = {key: value for key, value in data.items() if key not in (*OUTPUT_SIDE, "d_v", "d_out", "share_v")}
            data["target"] = self.target
        if self.residual is not None:
            data["residual"] = str(self.residual)
        if self.tokens != "gaussian":
            data["tokens"] = self.tokens
        if self.mask != "none":
            data["mask"] = self.mask
        if self.token_covariance is not None:
            data["token_covariance"] = {"values": [str(v) for v, _ in self.token_covariance],
                                        "weights": [str(w) for _, w in self.token_covariance]}
        return {key: value for key, value in data.items() if value is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Config:
        """The configuration of a :meth:`to_dict` mapping (or a hand-written one)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{unknown[0]}: unknown configuration field; known: {', '.join(sorted(known))}")
        return cls(**data)

    def to_toml(self) -> str:
        """TOML text that :meth:`from_toml` reads back to an equal configuration."""
        header = "# gemhsa_sym configuration: dimensions are ratios to the token count n\n"
        return header + tomli_w.dumps(self.to_dict())

    @classmethod
    def from_toml(cls, source: str | Path) -> Config:
        """Read a TOML file (path) or TOML text; errors name the file or the field."""
        if isinstance(source, Path) or ("\n" not in source and "=" not in source):
            data = read_toml(source, "config")
        else:
            try:
                data = tomllib.loads(source)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"config: not valid TOML: {exc}") from None
        if is_model(data):
            raise ValueError("config: a polynomial model, not an attention configuration; read it with presets.read_input")
        return cls.from_dict(data)

    def shared(self) -> dict[str, list[str]]:
        """The weight matrices some heads share, by how: "by all heads", "in G groups" or "as [[...], ...]" (W_V left
        out where it follows the keys)."""
        shared: dict[str, list[str]] = {}
        for which, key in SHARING_FIELDS.items():
            groups = getattr(self, key)
            shared_by_some = groups == "all" if self.infinite_heads else len(groups) < self.heads
            if shared_by_some and not (which == "v" and VALUE_RULES[self.kv].follows_keys):
                spec = partition_spec(groups, self.heads)
                text = ("by all heads" if spec == "all" else
                        f"in {len(groups)} groups" if isinstance(spec, dict) else f"as {spec}")
                shared.setdefault(text, []).append(f"W_{which.upper()}")
        return shared

    def summary(self) -> str:
        """One line describing the layer, built from the fields."""
        ratios = self.ratios()
        parts = [f"H={self.heads}"] + [f"{key}={'d/H' if ratios[key] is None else ratio_text(ratios[key])}"
                                       for key in DIMENSIONS[1:]]
        parts += [f"{', '.join(names)} shared {text}" for text, names in self.shared().items()]
        value_rule, output_rule = VALUE_RULES[self.kv], OUTPUT_RULES[self.output]
        if value_rule.summary:
            parts.append(value_rule.summary + (f" with rho={self.rho}" if value_rule.uses_rho else ""))
        if output_rule.summary:
            parts.append(output_rule.summary)
        norm = "row-normalised" if self.normalisation == "row" else "unnormalised (/n)"
        parts.append(f"beta={self.beta}, {self.score}, {norm}")
        if not self.target_rule.output_side:
            parts = [p for p in parts if not p.startswith(("d_v=", "d_out="))]
        if self.residual is not None:
            parts.append(f"residual stream R = X + alpha sqrt(n) Y with alpha={self.residual}")
        target = self.target_rule.summary.replace("(A - J)", "(A - C)") if self.mask_rule.causal else self.target_rule.summary
        parts += [target, self.token_rule.summary(self), self.mask_rule.summary]
        return "; ".join(part for part in parts if part)
