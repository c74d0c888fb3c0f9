"""Time one draw of the sampler's torch backend on the device present, against the numpy backend in the same run.

The device is cuda when torch sees one, else the cpu (or --device). For each n (default 2000, 4096, 8192,
16384 on cuda; 2000 and 4096 on the cpu, where 8192 takes minutes on two cores) it prints the time of one
draw of the torch backend (one softmax draw of the mha preset, seed 0, docs/verification.md §4.8); sizes
that the memory estimate refuses are skipped, saying so. At the --compare sizes (default 2000; on the cpu
every measured n) the numpy backend is timed too, interleaved with the torch backend, and the ratio
torch / numpy of the best of --repeat rounds is printed (docs/conventions.md §6.7; target on the cpu: at
most 1.3). ``--json`` prints one object instead.

    python benchmarks/bench_gpu.py [--n 2000,4096] [--compare 2000] [--repeat 3] [--model softmax] [--json]
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import Any

import numpy as np
import torch
from timing import best_times

from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.sampling.sampler import DRAW_THREADS, DrawTask, check_draws, sample

CUDA_SIZES = [2000, 4096, 8192, 16384]
CPU_SIZES = [2000, 4096]


def refusal(config: Config, n: int, model: str, backend: str, device: str) -> str | None:
    """The memory estimate's refusal of one draw (docs/conventions.md §6.8), or None when it fits."""
    try:
        check_draws([DrawTask(config, n, model, np.random.SeedSequence(0), backend=backend, device=device)], 1)
    except ValueError as exc:
        return str(exc)
    return None


def measure(config: Config, n: int, model: str, device: str, compare: bool, repeat: int) -> dict[str, Any]:
    """Seconds per draw of the torch backend at ``n`` and, with ``compare``, of the numpy backend and the ratio."""
    row: dict[str, Any] = {"n": n}
    refused = refusal(config, n, model, "torch", device) or (compare and refusal(config, n, model, "numpy", "cpu"))
    if refused:
        row["skipped"] = refused
        return row
    draw = partial(sample, config, n, draws=1, seed=0, model=model, progress=False)
    runs = [partial(draw, backend="torch", device=device)] + ([partial(draw, backend="numpy")] if compare else [])
    times = best_times(runs, repeat)
    row["torch_s"] = times[0]
    if compare:
        row["numpy_s"] = times[1]
        row["ratio"] = times[0] / times[1]
    return row


def _sizes(text: str) -> list[int]:
    return [int(item) for item in text.split(",") if item.strip()]


def main() -> None:
    """Print the torch backend's time per draw at each n, and its ratio to the numpy backend."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=_sizes, help="token counts (default 2000,4096,8192,16384 on cuda, 2000,4096 on the cpu)")
    parser.add_argument("--compare", type=_sizes, help="sizes at which the numpy backend is timed too (default 2000; cpu: every n)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repetitions, best taken (default 3)")
    parser.add_argument("--preset", default="mha", help="configuration (default mha)")
    parser.add_argument("--model", default="softmax", choices=["softmax", "ge"], help="layer to draw (default softmax)")
    parser.add_argument("--device", choices=["cpu", "cuda"], help="device (default cuda when available, else cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    sizes = args.n or (CUDA_SIZES if device == "cuda" else CPU_SIZES)
    compare = set(args.compare if args.compare is not None else (sizes if device == "cpu" else [2000]))
    config = PRESETS[args.preset]
    sample(config, 64, draws=1, model=args.model, progress=False, backend="torch", device=device)  # start-up costs
    rows = []
    for n in sizes:
        rows.append(measure(config, n, args.model, device, n in compare, args.repeat))
        if not args.json:
            row = rows[-1]
            if "skipped" in row:
                print(f"n={n}: skipped ({row['skipped']})")
                continue
            line = f"n={n}: torch on {device} {row['torch_s']:.3f} s per draw"
            if "ratio" in row:
                line += f", numpy {row['numpy_s']:.3f} s, ratio torch/numpy {row['ratio']:.3f}"
            print(line, flush=True)
    if args.json:
        print(json.dumps({"device": device, "torch": torch.__version__, "threads_per_draw": DRAW_THREADS,
                          "preset": args.preset, "model": args.model, "repeat": args.repeat, "sizes": rows}))


if __name__ == "__main__":
    main()
