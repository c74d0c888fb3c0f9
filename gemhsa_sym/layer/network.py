"""A stack of transformer blocks around one attention layer (docs/extensions.md §8.7).

A :class:`Network` is the attention :class:`~gemhsa_sym.layer.config.Config` of every layer (with its residual
weight ``residual = alpha``) and the block fields of docs/extensions.md §8.7: ``layers``, ``norm``,
``norm_position``, ``d_ff``, ``activation``, ``alpha_mlp``, ``attention`` and the layer read (``target =
"layer:l"``). One flat TOML table holds both; :func:`description_from_dict` reads it as a Network where it has a
block field and as a Config otherwise, and a network of one plain block (no norm, no MLP, softmax attention, the
last layer read) is its Config, whose law is the residual stream's (docs/extensions.md §8.4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sympy as sp
import tomli_w

from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.dimensions import RATIO_RANGE
from gemhsa_sym.layer.scores import ACTIVATIONS
from gemhsa_sym.layer.statement import statement_latex, summary_latex
from gemhsa_sym.parse import integer_value, real_number

__all__ = ["ATTENTIONS", "BLOCK_FIELDS", "MAX_LAYERS", "NORMS", "NORM_POSITIONS", "Network",
           "description_from_dict", "eigenvalues"]


#: Token norms N(x) over the d features of a row: none, LayerNorm (centred, over the RMS) and RMSNorm.
NORMS: tuple[str, ...] = ("none", "layer", "rms")
NORM_POSITIONS: tuple[str, ...] = ("pre", "post")
#: The attention of a block: softmax A, or A less its average (11^T/n, or the causal average) (docs/extensions.md §8.7).
ATTENTIONS: tuple[str, ...] = ("softmax", "centred")
#: The fields a network adds to its layer's, as a TOML table writes them (``target = "layer:l"`` besides).
BLOCK_FIELDS: tuple[str, ...] = ("layers", "norm", "norm_position", "d_ff", "activation", "alpha_mlp", "attention")
#: Most layers of a network.
MAX_LAYERS = 64
_LAYER_TARGET = "layer:"


@dataclass(frozen=True)
class Network:
    """``layers`` blocks, each with its own weights, around the attention layer ``layer`` (docs/extensions.md §8.7).

    Pre-norm: U = X + alpha sqrt(n) MHSA(N(X)), out = U + alpha_mlp phi(N(U) W1) W2; post-norm: U = N(X + alpha
    sqrt(n) MHSA(X)), out = N(U + alpha_mlp phi(U W1) W2); without ``d_ff`` the block has no MLP (out = U). The object
    is the eigenvalues of out^T P out / n, P = I - 11^T/n, after layer ``read`` (the last by default), times
    n^collapse where the network collapses (:attr:`collapse`). ``d_ff`` is a
    ratio to n, or an integer size where the layer was given in sizes.
    """

    layer: Config
    layers: int = 1
    norm: str = "none"
    norm_position: str = "pre"
    d_ff: sp.Rational | None = None
    activation: str = "relu"
    alpha_mlp: sp.Expr = sp.Integer(1)
    attention: str = "softmax"
    read: int | None = None

    def __post_init__(self) -> None:
        def put(key: str, value: Any) -> None:
            object.__setattr__(self, key, value)

        layer = self.layer
        if not isinstance(layer, Config):
            raise ValueError(f"layer: expected a Config, got {type(layer).__name__}")
        if layer.target != "output":
            raise ValueError(f"target: a block reads its output (target = 'output' or 'layer:l'), not {layer.target!r}")
        if layer.residual is None:
            raise ValueError("residual: a block adds its attention branch alpha sqrt(n) MHSA to the stream; give residual = "
                             "alpha (1 in the standard block)")
        if layer.infinite_heads:
            raise ValueError("heads: a network is drawn, and infinitely many heads have no sample; give a number of heads")
        layers = integer_value("layers", self.layers)
        if not 1 <= layers <= MAX_LAYERS:
            raise ValueError(f"layers: need 1..{MAX_LAYERS} layers, got {layers}")
        put("layers", layers)
        for key, choices in (("norm", NORMS), ("norm_position", NORM_POSITIONS), ("activation", tuple(ACTIVATIONS)),
                             ("attention", ATTENTIONS)):
            if getattr(self, key) not in choices:
                raise ValueError(f"{key}: unknown option {getattr(self, key)!r}; choose one of {', '.join(choices)}")
        if self.norm == "none" and self.norm_position != "pre":
            raise ValueError("norm_position: a position of the norm, given without one (norm = 'none')")
        if self.attention == "centred" and layer.normalisation != "row":
            raise ValueError("attention: 'centred' subtracts the rows' average from row-normalised attention; it needs "
                             "normalisation = 'row'")
        put("alpha_mlp", real_number("alpha_mlp", self.alpha_mlp))
        if self.d_ff is None:
            if self.alpha_mlp != 1 or self.activation != "relu":
                raise ValueError(f"{'alpha_mlp' if self.alpha_mlp != 1 else 'activation'}: a field of the MLP, given without "
                                 "its width d_ff")
        else:
            put("d_ff", self._ratio("d_ff", self.d_ff))
        if self.read is not None:
            read = integer_value("target", self.read)
            if not 1 <= read <= layers:
                raise ValueError(f"target: 'layer:{read}' is not a layer of this network (1..{layers})")
            put("read", None if read == layers else read)

    def _ratio(self, key: str, value: Any) -> sp.Rational:
        """A width as an exact ratio to n: ``value`` itself, or over the token count where the layer was given in sizes."""
        ratio = real_number(key, value)
        if self.layer.size_n is not None:
            if not ratio.is_integer:
                raise ValueError(f"{key}: the layer is given in sizes (n = {self.layer.size_n}), so {key} must be an "
                                 f"integer size, got {ratio}")
            ratio /= self.layer.size_n
        low, high = RATIO_RANGE
        if not (ratio.is_Rational and low <= ratio <= high):
            raise ValueError(f"{key}: {key} / n must be a rational in {low}..{high}, got {ratio}")
        return ratio

    #: A network is drawn, so its heads are finite (as for every source the samplers take).
    infinite_heads = False

    @property
    def read_layer(self) -> int:
        """The layer whose output the law is of (1..layers)."""
        return self.layers if self.read is None else self.read

    @property
    def plain(self) -> bool:
        """Whether this is one block without norm, MLP or centring, read at its output: its layer's residual stream."""
        return (self.layers, self.norm, self.d_ff, self.attention, self.read) == (1, "none", None, "softmax", None)

    @property
    def collapse(self) -> int:
        """The power of n that multiplies the eigenvalues in the object: l - 1 after layer l >= 2 of post-norm blocks
        with softmax attention, whose centred output falls by n^-1/2 per entry at every layer from layer 2 on against
        the common vector that fills the norm (the collapse of docs/extensions.md §8.7), 0 otherwise."""
        post = self.norm != "none" and self.norm_position == "post" and self.attention == "softmax"
        return self.read_layer - 1 if post else 0

    @property
    def spectral_object(self) -> str:
        """What the law is the law of, in words."""
        return f"{eigenvalues(self.collapse).removeprefix('the ')} of out^T P out / n after layer {self.read_layer}, P = I - 11^T/n"

    @property
    def statement(self) -> str:
        """The spectral object in full, with every normalisation: the blocks, then the layer's attention as its
        :attr:`Config.statement` states it (the tokens of layer l + 1 are the output of layer l)."""
        norm = {"layer": "N(x) = (x - mean(x)) / RMS(x - mean(x)) over each token's d features",
                "rms": "N(x) = x / RMS(x) over each token's d features", "none": ""}[self.norm]
        pre = self.norm_position == "pre" and self.norm != "none"
        attention = "MHSA(Z) = Y of the tokens Z" + (", A^h less its row average (centred attention)"
                                                       if self.attention == "centred" else "")
        if self.d_ff is None:
            block = ("U = X + alpha sqrt(n) MHSA(N(X))" if pre else "U = N(X + alpha sqrt(n) MHSA(X))"
                     if self.norm != "none" else "U = X + alpha sqrt(n) MHSA(X)") + ", out = U"
        else:
            mlp = f"alpha_mlp phi({'N(U)' if pre else 'U'} W_1) W_2"
            block = (f"U = X + alpha sqrt(n) MHSA(N(X)), out = U + {mlp}" if pre else
                     f"U = N(X + alpha sqrt(n) MHSA(X)), out = N(U + {mlp})" if self.norm != "none" else
                     f"U = X + alpha sqrt(n) MHSA(X), out = U + {mlp}")
            block += (f" with phi = {self.activation}, alpha_mlp = {self.alpha_mlp}, W_1: d x d_ff with N(0, 1/d) and "
                      f"W_2: d_ff x d with N(0, 1/d_ff) entries, d_ff = {self._written(self.d_ff)}"
                      f"{'' if self.layer.size_n is not None else ' n'}")
        _, of, layer = self.layer.statement.partition(", of Y = ")  # its spectral object (R^T P R / n) is not this one's
        layer = f"alpha = {self.layer.residual}, Y = {layer}" if of else self.layer.statement
        parts = [f"{eigenvalues(self.collapse)} of out^T P out / n, P = I - 11^T/n, after layer {self.read_layer} of {self.layers} blocks, "
                 f"each with its own weights: {block}", attention, norm, f"the attention of every layer: {layer}"]
        return "; ".join(part for part in parts if part)

    def sizes(self, n: int | None = None) -> dict[str, int]:
        """The layer's integer sizes (:meth:`Config.sizes`) and ``d_ff``'s; ValueError naming one that is not integral."""
        sizes = self.layer.sizes(n)
        if self.d_ff is not None:
            size = self.d_ff * sizes["n"]
            if not size.is_integer:
                raise ValueError(f"d_ff: {self.d_ff} * n = {size} is not an integer size at n = {sizes['n']}")
            sizes["d_ff"] = int(size)
        return sizes

    def replace(self, **changes: Any) -> Network | Config:
        """A validated copy with ``changes`` to the block's or the layer's fields (as :meth:`Config.replace` takes them)."""
        block = {key: changes.pop(key) for key in (*BLOCK_FIELDS, "target") if key in changes}
        layer = self.layer.replace(**changes) if changes else self.layer
        data = self.block_dict() | block
        return description_from_dict(layer.to_dict() | data)

    def block_dict(self) -> dict[str, Any]:
        """The block's fields as a TOML table writes them (defaults left out)."""
        data: dict[str, Any] = {"layers": self.layers, "norm": self.norm, "norm_position": self.norm_position,
                                "d_ff": None if self.d_ff is None else str(self._written(self.d_ff)),
                                "activation": self.activation, "alpha_mlp": str(self.alpha_mlp), "attention": self.attention}
        defaults = {"layers": 1, "norm": "none", "norm_position": "pre", "activation": "relu", "alpha_mlp": "1",
                    "attention": "softmax"}
        data = {key: value for key, value in data.items() if value is not None and defaults.get(key) != value}
        if self.read is not None:
            data["target"] = f"{_LAYER_TARGET}{self.read}"
        return data

    def _written(self, ratio: sp.Rational) -> sp.Rational:
        """A width as the file writes it: a ratio, or a size where the layer is given in sizes."""
        return ratio if self.layer.size_n is None else ratio * self.layer.size_n

    def to_dict(self) -> dict[str, Any]:
        """The layer's fields and the block's, in one flat table that :func:`description_from_dict` reads back."""
        return self.layer.to_dict() | self.block_dict()

    def to_toml(self) -> str:
        """TOML text that :func:`~gemhsa_sym.layer.presets.read_input` reads back to an equal network."""
        return "# gemhsa_sym network: dimensions are ratios to the token count n\n" + tomli_w.dumps(self.to_dict())

    @property
    def name(self) -> str | None:
        """The layer's name."""
        return self.layer.name

    def summary(self) -> str:
        """One line: the blocks, then the layer's summary."""
        parts = [f"{self.layers} layer{'s' if self.layers > 1 else ''}"]
        if self.norm != "none":
            parts.append(f"{self.norm_position}-{'LayerNorm' if self.norm == 'layer' else 'RMSNorm'}")
        if self.d_ff is not None:
            parts.append(f"MLP d_ff={self._written(self.d_ff)} {self.activation}, alpha_mlp={self.alpha_mlp}")
        if self.attention == "centred":
            parts.append("centred attention")
        if self.read is not None:
            parts.append(f"read after layer {self.read}")
        return "; ".join(parts) + "; each layer: " + self.layer.summary()


def eigenvalues(power: int, latex: bool = False) -> str:
    """The object's first words: the eigenvalues, times n^power where a network collapses (:attr:`Network.collapse`)."""
    if not power:
        return "the eigenvalues"
    scale = "n" if power == 1 else f"n^{{{power}}}" if latex else f"n^{power}"
    return f"${scale}$ times the eigenvalues" if latex else f"{scale} times the eigenvalues"


#: The blocks' normalisations as LaTeX (docs/extensions.md §8.7).
NORMS_LATEX = {"layer": r"$N(x) = (x - \bar{x}) / \operatorname{RMS}(x - \bar{x})$ over each token's $d$ features",
               "rms": r"$N(x) = x / \operatorname{RMS}(x)$ over each token's $d$ features", "none": ""}


def network_statement_latex(network: Network) -> str:
    """:meth:`Network.statement` as LaTeX for a document: every formula in mathematics mode."""
    pre = network.norm_position == "pre" and network.norm != "none"
    mlp = rf"\alpha_{{mlp}}\, \phi({'N(U)' if pre else 'U'} W_1) W_2"
    attention = r"$\operatorname{MHSA}(Z)$ is $Y$ of the tokens $Z$" + (
        r", $A^{h}$ less its row average (centred attention)" if network.attention == "centred" else "")
    if network.d_ff is None:
        block = (r"$U = X + \alpha \sqrt{n}\, \operatorname{MHSA}(N(X))$" if pre else
                 r"$U = N(X + \alpha \sqrt{n}\, \operatorname{MHSA}(X))$" if network.norm != "none" else
                 r"$U = X + \alpha \sqrt{n}\, \operatorname{MHSA}(X)$") + r", $\mathrm{out} = U$"
    else:
        block = (rf"$U = X + \alpha \sqrt{{n}}\, \operatorname{{MHSA}}(N(X))$, $\mathrm{{out}} = U + {mlp}$" if pre else
                 rf"$U = N(X + \alpha \sqrt{{n}}\, \operatorname{{MHSA}}(X))$, $\mathrm{{out}} = N(U + {mlp})$"
                 if network.norm != "none" else
                 rf"$U = X + \alpha \sqrt{{n}}\, \operatorname{{MHSA}}(X)$, $\mathrm{{out}} = U + {mlp}$")
        d_ff = sp.latex(network._written(network.d_ff)) + ("" if network.layer.size_n is not None else " n")
        block += (rf" with $\phi$ = {network.activation}, $\alpha_{{mlp}} = {network.alpha_mlp}$, $W_1 \in \mathbb{{R}}^{{d "
                  rf"\times d_{{ff}}}}$ with $N(0, 1/d)$ and $W_2 \in \mathbb{{R}}^{{d_{{ff}} \times d}}$ with $N(0, 1/d_{{ff}})$ "
                  rf"entries, $d_{{ff}} = {d_ff}$")
    layer = statement_latex(network.layer)
    head, of, rest = layer.partition(", of $Y")
    layer = rf"$\alpha = {network.layer.residual}$, $Y" + rest if of else layer
    parts = [eigenvalues(network.collapse, latex=True) + r" of $\mathrm{out}^{T} P\, \mathrm{out} / n$, $P = I - \mathbf{1}\mathbf{1}^{T}/n$, after layer "
             f"{network.read_layer} of {network.layers} blocks, each with its own weights: {block}", attention,
             NORMS_LATEX[network.norm], f"the attention of every layer: {layer}"]
    return "; ".join(part for part in parts if part)


def network_summary_latex(network: Network) -> str:
    """:meth:`Network.summary` as LaTeX for a document."""
    parts = [f"{network.layers} layer{'s' if network.layers > 1 else ''}"]
    if network.norm != "none":
        parts.append(f"{network.norm_position}-{'LayerNorm' if network.norm == 'layer' else 'RMSNorm'}")
    if network.d_ff is not None:
        parts.append(rf"MLP $d_{{ff}} = {sp.latex(network._written(network.d_ff))}$ {network.activation}, "
                     rf"$\alpha_{{mlp}} = {network.alpha_mlp}$")
    if network.attention == "centred":
        parts.append("centred attention")
    if network.read is not None:
        parts.append(f"read after layer {network.read}")
    return "; ".join(parts) + "; each layer: " + summary_latex(network.layer)


def description_from_dict(data: Mapping[str, Any]) -> Network | Config:
    """A :class:`Network` where ``data`` has a block field or ``target = "layer:l"``, a :class:`Config` otherwise; a
    network of one plain block is its Config (module docstring)."""
    data = dict(data)
    target = data.get("target")
    block = {key: data.pop(key) for key in BLOCK_FIELDS if key in data}
    if isinstance(target, str) and target.startswith(_LAYER_TARGET):
        block["read"] = target[len(_LAYER_TARGET):]
        data["target"] = "output"
    if not block:
        return Config.from_dict(data)
    network = Network(Config.from_dict(data), **block)
    return network.layer if network.plain else network
