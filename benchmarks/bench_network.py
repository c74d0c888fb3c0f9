"""Time the network's sampler and its first block's law against baselines measured in the same run.

- ``sampler_ratio``: one draw of a pre-LN block (one head, ReLU MLP with d_ff = n) by the sampler, over the same block
  computed in float64 by PyTorch's ``TransformerEncoderLayer`` from the same weights (where torch is installed; target
  at most 1.5), both on one thread, best of interleaved rounds;
- ``law_ratio``: the first block's law (its equivalent with 8 bias levels, the law's mean and top edge) over the
  residual stream's law (the same steps for the layer alone) in fresh objects, best of interleaved rounds.

    python benchmarks/bench_network.py [--n 1000] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json

import numpy as np
from threadpoolctl import threadpool_limits
from timing import best_times

from gemhsa_sym.laws.resolve import law_of
from gemhsa_sym.laws.spectral import SpectralLaw
from gemhsa_sym.layer.equivalent import gaussian_equivalent
from gemhsa_sym.layer.network import Network, description_from_dict
from gemhsa_sym.layer.network_equivalent import network_equivalent
from gemhsa_sym.sampling.network import draw_block_weights, network_outputs

SPEC = {"heads": 1, "residual": 1, "norm": "layer", "d_ff": 1}


def torch_block(network: Network, n: int):  # noqa: ANN201 - torch is optional
    """The block by torch: its encoder layer with the sampler's weights, and the tokens."""
    import torch

    rng = np.random.default_rng(0)
    sizes = network.sizes(n)
    X = rng.standard_normal((n, sizes["d"]))
    block, = draw_block_weights(network, sizes, rng)
    w = block.attention
    layer = torch.nn.TransformerEncoderLayer(sizes["d"], 1, dim_feedforward=sizes["d_ff"], dropout=0.0, batch_first=True,
                                             norm_first=True, bias=False, dtype=torch.float64)
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(torch.from_numpy(np.concatenate([w.query.head(0), w.key.head(0), w.value.head(0)], 1).T))
        layer.self_attn.out_proj.weight.copy_(torch.from_numpy(w.output[0].T * np.sqrt(n)))
        layer.linear1.weight.copy_(torch.from_numpy(block.w1.T))
        layer.linear2.weight.copy_(torch.from_numpy(block.w2.T))
    for name in ("norm1", "norm2"):
        setattr(layer, name, torch.nn.LayerNorm(sizes["d"], eps=0.0, elementwise_affine=False, bias=False, dtype=torch.float64))
    return layer, torch.from_numpy(X)[None], (X, [block], sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    network = description_from_dict({**SPEC, "n": args.n, "d_ff": args.n})
    figures: dict[str, float | None] = {"n": args.n}
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(1)
        layer, x, (X, weights, _) = torch_block(network, args.n)

        def by_torch() -> None:
            with torch.no_grad():
                layer(x)

        def by_sampler() -> None:
            with threadpool_limits(1, user_api="blas"):
                network_outputs(network, weights, X)

        ours, theirs = best_times([by_sampler, by_torch], args.repeat)
        figures |= {"sampler_s": ours, "torch_s": theirs, "sampler_ratio": ours / theirs}
    else:
        figures["sampler_ratio"] = None
    ratio_network = description_from_dict(SPEC)
    layer_config = ratio_network.layer

    def block_law() -> None:
        equivalent = network_equivalent(ratio_network)
        law = SpectralLaw(equivalent.polynomial, equivalent.ratios, equivalent.values)
        law.moments(1), law.edges()

    def residual_law() -> None:
        equivalent = gaussian_equivalent(layer_config)
        law = SpectralLaw(equivalent.model, equivalent.ratios, equivalent.values)
        law.moments(1), law.edges()

    law_of(ratio_network).moments(1)  # the kernel compiled and the Hermite data cached before timing
    block, residual = best_times([block_law, residual_law], args.repeat)
    figures |= {"law_s": block, "residual_law_s": residual, "law_ratio": block / residual}
    if args.json:
        print(json.dumps(figures))
        return
    for key, value in figures.items():
        print(f"{key:>16}  {value if value is None or isinstance(value, int) else f'{value:.4g}'}")


if __name__ == "__main__":
    main()
