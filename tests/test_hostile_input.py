"""Bad and hostile input (docs/conventions.md §6.8): one line naming the field, status 2, before any work.

Each command-line case runs ``gemhsa-sym`` in a folder of its own (in this process, and a selection
also as a separate process) and checks the exit status, the single line of stderr and how it
starts, that no traceback is printed, that no file appears besides the output the case asked for
(and that no injected code ran: it would create the file ``pwned``), and that it ends within a
few seconds (so the error comes before any work; a separate process is measured against a bare
``gemhsa-sym presets`` in the same run). The API cases check the exception type, the start
of its message and the time taken.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sympy as sp

from gemhsa_sym.cli import main
from gemhsa_sym.files import read_toml, write_atomic, write_atomic_with
from gemhsa_sym.free.expressions.grammar import parse_polynomial
from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
from gemhsa_sym.laws.attention import AttentionLaw
from gemhsa_sym.laws.spectral import spectral_law
from gemhsa_sym.laws.tabulated import validated
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.polynomial_model import PolynomialModel
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.parse import parse_number
from gemhsa_sym.sampling.executors import open_executor
from gemhsa_sym.sampling.result import SampleResult
from gemhsa_sym.sampling.sampler import sample
from gemhsa_sym.verification.sweep import parse_vary

#: Seconds a failing case may take beyond a bare ``gemhsa-sym presets``.
SLACK = 4.0
#: Code that would create the file ``pwned`` in the working folder if it ran.
INJECT = "__import__('os').system('touch pwned') or 2"
ESCAPE = ("[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
          ".__init__.__globals__['system']('touch pwned')")


@dataclass(frozen=True)
class Case:
    """argv (with ``{dir}`` for the case's folder), files to create first, expected status and stderr start."""

    argv: tuple[str, ...]
    status: int
    message: str
    files: tuple[tuple[str, bytes], ...] = ()
    outputs: tuple[str, ...] = ()


def _model(polynomial: str, scale: str = "1") -> bytes:
    return (f'polynomial = "{polynomial}"\n[dimensions]\nn = "1"\nd = "1/2"\n'
            f'[gaussians.X]\nrows = "n"\ncols = "d"\nscale = "{scale}"\n').encode()


def _config(**fields: Any) -> bytes:
    return "\n".join(f"{k} = {json.dumps(v)}" for k, v in fields.items()).encode() + b"\n"


CASES: dict[str, Case] = {
    # --- code execution from configuration text ------------------------------------------------
    "beta injection": Case(("sample", "single-head", "--n", "20", "--beta", INJECT), 2, "gemhsa-sym: error: beta: cannot read"),
    "reading of another layer": Case(("sample", "single-head", "--n", "20", "--model", "ge_without_uniform"), 2,
                                     "gemhsa-sym: error: model: 'ge_without_uniform' does not read this layer"),
    "set injection": Case(("sample", "single-head", "--n", "20", "--set", f"beta={INJECT}"), 2, "gemhsa-sym: error: beta: cannot read"),
    "set d injection": Case(("derive", "single-head", "--set", f"d={INJECT}"), 2, "gemhsa-sym: error: d: cannot read"),
    "toml injection": Case(("derive", "{dir}/c.toml"), 2, "gemhsa-sym: error: beta: cannot read",
                           files=(("c.toml", _config(beta=INJECT)),)),
    "toml rho injection": Case(("sample", "{dir}/c.toml", "--n", "20"), 2, "gemhsa-sym: error: rho: cannot read",
                               files=(("c.toml", _config(kv="correlated", rho=INJECT)),)),
    "vary injection": Case(("sweep", "single-head", "--no-mc", "--vary", f"beta={INJECT}"), 2, "gemhsa-sym: error: beta: cannot read"),
    "polynomial escape": Case(("derivations", "--check", "--dir", "{dir}/lib"), 2, "gemhsa-sym: error: polynomial: cannot read",
                              files=(("lib/m.toml", _model(ESCAPE.replace('"', "'"))),)),
    "polynomial injection": Case(("derivations", "--check", "--dir", "{dir}/lib"), 2, "gemhsa-sym: error: polynomial: cannot read",
                                 files=(("lib/m.toml", _model("X * __import__('os').system('touch pwned')")),)),
    "scale injection": Case(("derivations", "--check", "--dir", "{dir}/lib"), 2, "gemhsa-sym: error: gaussians.X.scale: cannot read",
                            files=(("lib/m.toml", _model("X", "__import__('os')")),)),
    # --- precision, sizes, heads --------------------------------------------------------------
    "symbolic causal": Case(("derive", "causal-single-head", "--symbolic"), 2,
                            "gemhsa-sym: error: --symbolic: a causal layer's law has no P(m, w)"),
    "edges unknown": Case(("derive", "single-head", "--edges", "fold"), 2, "gemhsa-sym derive: error: argument --edges: invalid choice"),
    "dps 0": Case(("derive", "single-head", "--dps", "0"), 2, "gemhsa-sym derive: error: argument --dps: must be an integer from 1 to 100"),
    "dps negative": Case(("derive", "single-head", "--dps", "-1"), 2, "gemhsa-sym derive: error: argument --dps: must be an integer"),
    "dps huge": Case(("derive", "single-head", "--dps", "10000"), 2, "gemhsa-sym derive: error: argument --dps: must be an integer"),
    "dps text": Case(("derive", "single-head", "--dps", "x"), 2, "gemhsa-sym derive: error: argument --dps: expected an integer"),
    "heads 0": Case(("derive", "mha", "--heads", "0"), 2, "gemhsa-sym derive: error: argument --heads: must be an integer from 1"),
    "heads too many": Case(("derive", "mha", "--heads", "10000000"), 2, "gemhsa-sym derive: error: argument --heads: must be an integer"),
    "set heads too many": Case(("derive", "single-head", "--set", "heads=10000000"), 2, "gemhsa-sym: error: heads: at most 1000000 heads"),
    "d 1e300": Case(("derive", "single-head", "--set", "d=1e300"), 2, "gemhsa-sym: error: d: cannot read '1e300' as a number: 1e300 is out of range"),
    "d 1e99": Case(("derive", "single-head", "--set", "d=1e99"), 2, "gemhsa-sym: error: d: d / n = 1e+99 is outside"),
    "beta exponent of a billion": Case(("derive", "single-head", "--beta", "1e999999999"), 2,
                                       "gemhsa-sym: error: beta: cannot read '1e999999999' as a number: 1e999999999 is out of range: the decimal exponent"),
    "beta 1e-250": Case(("derive", "single-head", "--beta", "1e-250"), 2, "gemhsa-sym: error: beta: cannot read '1e-250' as a number: 1e-250 is out of range"),
    "beta nested powers": Case(("derive", "single-head", "--beta", "((2/3)**1000)**1000"), 2,
                               "gemhsa-sym: error: beta: cannot read '((2/3)**1000)**1000' as a number: the power is too large to build"),
    "d division by zero": Case(("derive", "single-head", "--set", "d=1/0"), 2, "gemhsa-sym: error: d: cannot read '1/0' as a number: division by zero"),
    "d zero": Case(("derive", "single-head", "--set", "d=0"), 2, "gemhsa-sym: error: d: must be positive"),
    "d irrational": Case(("derive", "single-head", "--set", "d=sqrt(2)"), 2, "gemhsa-sym: error: d: a dimension ratio must be rational"),
    "beta 50": Case(("derive", "single-head", "--beta", "50"), 2, "gemhsa-sym: error: beta: at beta = 50 the softmax score"),
    "beta nan": Case(("derive", "single-head", "--beta", "nan"), 2, "gemhsa-sym: error: beta: must be finite"),
    "beta complex": Case(("derive", "single-head", "--beta", "sqrt(-1)"), 2, "gemhsa-sym: error: beta: must be real"),
    "grid infinite": Case(("derive", "single-head", "--grid", "0:inf:3"), 2, "gemhsa-sym derive: error: argument --grid: expected finite"),
    "grid reversed": Case(("derive", "single-head", "--grid", "1:0:3"), 2, "gemhsa-sym derive: error: argument --grid: expected finite"),
    "grid malformed": Case(("derive", "single-head", "--grid", "a:b"), 2, "gemhsa-sym derive: error: argument --grid: expected A:B:K"),
    "time limit negative": Case(("derive", "single-head", "--time-limit", "-1"), 2, "gemhsa-sym derive: error: argument --time-limit: must be"),
    "time limit zero": Case(("derive", "single-head", "--time-limit", "0"), 2, "gemhsa-sym derive: error: argument --time-limit: must be"),
    "time limit nan": Case(("derive", "single-head", "--time-limit", "nan"), 2, "gemhsa-sym derive: error: argument --time-limit: must be"),
    # --- configurations and files -------------------------------------------------------------
    "unknown preset": Case(("derive", "nonesuch"), 2, "gemhsa-sym: error: config: 'nonesuch' is neither a preset"),
    "invalid toml": Case(("derive", "{dir}/c.toml"), 2, "gemhsa-sym: error: config: {dir}/c.toml is not valid TOML",
                         files=(("c.toml", b"heads = [1,\n"),)),
    "binary toml": Case(("derive", "{dir}/c.toml"), 2, "gemhsa-sym: error: config: {dir}/c.toml is not UTF-8 text",
                        files=(("c.toml", b"\xff\xfe\x00binary"),)),
    "unknown field": Case(("derive", "{dir}/c.toml"), 2, "gemhsa-sym: error: colour: unknown configuration field",
                          files=(("c.toml", _config(colour="red")),)),
    "model as config": Case(("sample", "{dir}/m.toml"), 2, "gemhsa-sym: error: config: {dir}/m.toml is a polynomial model file",
                            files=(("m.toml", _model("X")),)),
    "model injection": Case(("derive", "{dir}/m.toml"), 2, "gemhsa-sym: error: polynomial: cannot read",
                            files=(("m.toml", _model("X * __import__('os').system('touch pwned')")),)),
    "model heads": Case(("derive", "{dir}/m.toml", "--heads", "2"), 2, "gemhsa-sym: error: --heads: only for an attention",
                        files=(("m.toml", _model("X")),)),
    "model beta": Case(("verify", "{dir}/m.toml", "--beta", "2"), 2, "gemhsa-sym: error: --beta: only for an attention",
                       files=(("m.toml", _model("X")),)),
    "model backend": Case(("sweep", "{dir}/m.toml", "--vary", "dimensions.d=1,2", "--backend", "torch"), 2,
                          "gemhsa-sym: error: --backend: only for an attention", files=(("m.toml", _model("X")),)),
    "model vary heads": Case(("sweep", "{dir}/m.toml", "--vary", "heads=1,2"), 2,
                             "gemhsa-sym: error: heads: not a field of this polynomial model", files=(("m.toml", _model("X")),)),
    "model set scale": Case(("derive", "{dir}/m.toml", "--set", "gaussians.X.scale=__import__('os')"), 2,
                            "gemhsa-sym: error: gaussians.X.scale: ", files=(("m.toml", _model("X")),)),
    "model sizes": Case(("verify", "{dir}/m.toml", "--n", "201"), 2, "gemhsa-sym: error: n: ratio * n must be a positive integer",
                        files=(("m.toml", _model("X")),)),
    "share_k string group": Case(("sample", "{dir}/c.toml", "--n", "16"), 2, "gemhsa-sym: error: share_k: each head group must be a list",
                                 files=(("c.toml", _config(heads=4, d_k="1/4", share_k=["0123"])),)),
    "share_k leading zero": Case(("sample", "mha", "--n", "16", "--set", 'share_k=[["0123"]]'), 2, "gemhsa-sym: error: share_k: expected an integer"),
    "rho out of range": Case(("sample", "mha", "--n", "16", "--set", "rho=2"), 2, "gemhsa-sym: error: rho: "),
    "heads text": Case(("sample", "mha", "--n", "16", "--set", "heads=x"), 2, "gemhsa-sym: error: heads: expected an integer"),
    "set without value": Case(("sample", "mha", "--n", "16", "--set", "heads"), 2, "gemhsa-sym: error: set: expected FIELD=VALUE"),
    # --- sample ------------------------------------------------------------------------------
    "n 1": Case(("sample", "single-head", "--n", "1"), 2, "gemhsa-sym sample: error: argument --n: must be an integer from 2"),
    "n 1e9": Case(("sample", "single-head", "--n", "1000000000"), 2, "gemhsa-sym sample: error: argument --n: must be an integer"),
    "n memory": Case(("sample", "single-head", "--n", "1000000"), 2, "gemhsa-sym: error: n: a draw needs about"),
    "heads memory": Case(("sample", "mha", "--n", "300", "--set", "heads=1000000", "--set", "d_k=1/4"), 2, "gemhsa-sym: error: d_k: heads * d_k / n"),
    "draws 0": Case(("sample", "single-head", "--n", "20", "--draws", "0"), 2, "gemhsa-sym sample: error: argument --draws: must be"),
    "draws negative": Case(("sample", "single-head", "--n", "20", "--draws", "-1"), 2, "gemhsa-sym sample: error: argument --draws: must be"),
    "seed negative": Case(("sample", "single-head", "--n", "20", "--seed", "-1"), 2, "gemhsa-sym sample: error: argument --seed: must be"),
    "jobs 0": Case(("sample", "single-head", "--n", "20", "--jobs", "0"), 2, "gemhsa-sym sample: error: argument --jobs: must be"),
    "out folder": Case(("sample", "single-head", "--n", "20", "--out", "{dir}"), 2, "gemhsa-sym: error: out: '{dir}' is a folder"),
    "out missing folder": Case(("sample", "single-head", "--n", "20", "--out", "{dir}/no/a.npz"), 2,
                               "gemhsa-sym: error: out: cannot write {dir}/no/a.npz: the folder"),
    "ge overflow": Case(("sample", "single-head", "--n", "20", "--model", "ge", "--beta", "50"), 2,
                        "gemhsa-sym: error: beta: the Gaussian equivalent of the softmax score at beta = 50 overflows"),
    "model unknown": Case(("sample", "single-head", "--n", "20", "--model", "exact"), 2, "gemhsa-sym sample: error: argument --model: invalid choice"),
    # --- verify ------------------------------------------------------------------------------
    "edge tol negative": Case(("verify", "single-head", "--edge-tol", "-1"), 2, "gemhsa-sym verify: error: argument --edge-tol: must be"),
    "edge tol nan": Case(("verify", "single-head", "--edge-tol", "nan"), 2, "gemhsa-sym verify: error: argument --edge-tol: must be"),
    "verify n 0": Case(("verify", "single-head", "--n", "0"), 2, "gemhsa-sym verify: error: argument --n: every value must be"),
    "verify n text": Case(("verify", "single-head", "--n", "10,x"), 2, "gemhsa-sym verify: error: argument --n: expected an integer"),
    "verify draws 0": Case(("verify", "single-head", "--draws", "0"), 2, "gemhsa-sym verify: error: argument --draws: must be"),
    "verify plot folder": Case(("verify", "single-head", "--plot", "{dir}"), 2, "gemhsa-sym: error: plot: '{dir}' must end in one of"),
    "verify plot suffix": Case(("verify", "single-head", "--plot", "{dir}/a.txt"), 2, "gemhsa-sym: error: plot: '{dir}/a.txt' must end in"),
    "verify plot into folder": Case(("verify", "single-head", "--plot", "{dir}/no/a.png"), 2, "gemhsa-sym: error: plot: cannot write"),
    "verify cache file": Case(("verify", "single-head", "--cache", "{dir}/c.txt"), 2, "gemhsa-sym: error: cache: '{dir}/c.txt' is a file",
                              files=(("c.txt", b"x"),)),
    "verify sizes": Case(("verify", "mha", "--n", "18"), 2, "gemhsa-sym: error: d_k: "),
    "scheduler nobody": Case(("verify", "single-head", "--n", "20", "--scheduler", "tcp://127.0.0.1:9", "--scheduler-timeout", "1"), 2,
                             "gemhsa-sym: error: scheduler: no Dask scheduler answered at 'tcp://127.0.0.1:9' within 1 s"),
    "scheduler empty": Case(("verify", "single-head", "--n", "20", "--scheduler", ""), 2,
                            "gemhsa-sym verify: error: argument --scheduler: '' is not the address of a Dask scheduler"),
    "scheduler not an address": Case(("verify", "single-head", "--n", "20", "--scheduler", "not an address"), 2,
                                     "gemhsa-sym verify: error: argument --scheduler: 'not an address' is not the address"),
    "scheduler inproc": Case(("sweep", "single-head", "--vary", "beta=1,2", "--scheduler", "inproc://x"), 2,
                             "gemhsa-sym sweep: error: argument --scheduler: 'inproc://x' is not the address"),
    "scheduler http": Case(("verify", "single-head", "--n", "20", "--scheduler", "http://127.0.0.1:8787"), 2,
                           "gemhsa-sym verify: error: argument --scheduler: 'http://127.0.0.1:8787' is not the address"),
    "scheduler timeout 0": Case(("verify", "single-head", "--scheduler-timeout", "0"), 2,
                                "gemhsa-sym verify: error: argument --scheduler-timeout: must be"),
    # --- sweep and claims --------------------------------------------------------------------
    "sweep draws 0": Case(("sweep", "single-head", "--vary", "beta=1,2", "--draws", "0"), 2, "gemhsa-sym sweep: error: argument --draws"),
    "sweep draws negative": Case(("sweep", "single-head", "--vary", "beta=1,2", "--draws", "-1"), 2, "gemhsa-sym sweep: error: argument --draws"),
    "vary heads text": Case(("sweep", "mha", "--no-mc", "--vary", "heads=x"), 2, "gemhsa-sym: error: heads: expected an integer, got 'x'"),
    "vary infinite": Case(("sweep", "single-head", "--vary", "beta=0:inf:3"), 2, "gemhsa-sym sweep: error: argument --vary: expected finite"),
    "vary no points": Case(("sweep", "single-head", "--vary", "beta=0:1:0"), 2, "gemhsa-sym sweep: error: argument --vary: expected finite"),
    "vary malformed": Case(("sweep", "single-head", "--vary", "beta"), 2, "gemhsa-sym sweep: error: argument --vary: expected FIELD="),
    "vary unknown field": Case(("sweep", "single-head", "--no-mc", "--vary", "colour=1,2"), 2, "gemhsa-sym: error: colour: unknown configuration field"),
    "sweep plot folder": Case(("sweep", "single-head", "--vary", "beta=1,2", "--plot", "{dir}/no/s.png"), 2, "gemhsa-sym: error: plot: cannot write"),
    "claims out folder": Case(("claims", "--out", "{dir}"), 2, "gemhsa-sym: error: out: '{dir}' is a folder"),
    "claims presets": Case(("claims", "--presets", "nonesuch"), 2, "gemhsa-sym claims: error: argument --presets: unknown preset 'nonesuch'"),
    "claims causal preset": Case(("claims", "--presets", "causal-single-head"), 2,
                                 "gemhsa-sym claims: error: argument --presets: unknown preset 'causal-single-head'; choose from"),
    "claims n": Case(("claims", "--n", "7", "--out", "-"), 2, "gemhsa-sym: error: n: every preset needs integer sizes"),
    "claims causal n": Case(("claims", "--n", "600", "--causal-n", "2004", "--out", "-"), 2,
                            "gemhsa-sym: error: causal-n: every causal layer needs integer sizes at every n"),
    # --- the derivations library -------------------------------------------------------------
    "library missing": Case(("derivations", "--check", "--dir", "{dir}/none"), 2, "gemhsa-sym: error: dir: no derivations folder"),
    "library cache file": Case(("derivations", "--write", "--dir", "{dir}/lib", "--cache", "{dir}/c.txt"), 2,
                               "gemhsa-sym: error: cache: '{dir}/c.txt' is a file", files=(("c.txt", b"x"), ("lib/m.toml", b"n = 1"))),
    "polynomial zero": Case(("derivations", "--check", "--dir", "{dir}/lib"), 2, "gemhsa-sym: error: polynomial: '0' is not a polynomial",
                            files=(("lib/m.toml", _model("0")),)),
    "polynomial syntax": Case(("derivations", "--check", "--dir", "{dir}/lib"), 2, "gemhsa-sym: error: polynomial: cannot read 'X *'",
                              files=(("lib/m.toml", _model("X *")),)),
    "polynomial shapes": Case(("derivations", "--check", "--dir", "{dir}/lib"), 2, "gemhsa-sym: error: polynomial: cannot multiply",
                              files=(("lib/m.toml", _model("X * X")),)),
    "model unknown dimension": Case(("derivations", "--check", "--dir", "{dir}/lib"), 2, "gemhsa-sym: error: gaussians.X.cols: expected one of",
                                    files=(("lib/m.toml", _model("X").replace(b'cols = "d"', b'cols = "q"')),)),
    "model fullwidth name": Case(("derive", "{dir}/m.toml"), 2, "gemhsa-sym: error: gaussians.\uff58: a matrix name must be an ASCII identifier",
                                 files=(("m.toml", 'polynomial = "x * x"\n[dimensions]\nn = "1"\n[gaussians.x]\nrows = "n"\ncols = "n"\n'
                                                   '[gaussians."\uff58"]\nrows = "n"\ncols = "n"\nscale = "1/100"\n'.encode()),)),
    "polynomial fullwidth": Case(("derive", "{dir}/m.toml"), 2, "gemhsa-sym: error: polynomial: cannot read",
                                 files=(("m.toml", _model("X * \uff38.T")),)),
    "record truncated": Case(("derivations", "--check", "--dir", "{dir}/lib"), 2, "gemhsa-sym: error: record: {dir}/lib/m.json is not valid JSON",
                             files=(("lib/m.toml", _model("X")), ("lib/m.json", b'{"name": "m", '), ("lib/m.tex", b""))),
    "fill cache in /proc": Case(("derivations", "--fill-cache", "--cache", "/proc/gemhsa-sym-cache"), 2,
                                "gemhsa-sym: error: cache: cannot write in the folder '/proc/gemhsa-sym-cache'"),
    # --- valid edge cases: answered, not refused ----------------------------------------------
    "latex to /dev/null": Case(("derive", "marchenko-pastur", "--latex", "/dev/null"), 0, ""),
    "beta 0 is the point mass": Case(("derive", "single-head", "--beta", "0", "--dps", "5"), 0, ""),
    "infinitely many heads at beta 0": Case(("derive", "single-head", "--set", "heads=oo", "--beta", "0", "--dps", "5"), 0, ""),
}


def _place(case: Case, folder: Path) -> list[str]:
    """Create the case's files in ``folder``; its argv with ``{dir}`` filled in."""
    for name, data in case.files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return [a.replace("{dir}", str(folder)) for a in case.argv]


def _check_files(case: Case, folder: Path) -> None:
    created = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert created == sorted([n for n, _ in case.files] + list(case.outputs)), created


def test_enough_cases() -> None:
    assert len(CASES) + len(API_CASES) >= 60


@pytest.mark.parametrize("name", list(CASES))
def test_command_line_case(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           capsys: pytest.CaptureFixture[str]) -> None:
    """In this process through :func:`gemhsa_sym.cli.main`: an exception escaping it would be a traceback."""
    case = CASES[name]
    argv = _place(case, tmp_path)
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    status = main(argv)
    seconds = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert status == case.status, err
    if case.status:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith(case.message.replace("{dir}", str(tmp_path))), err
    _check_files(case, tmp_path)
    if case.status:
        assert seconds <= SLACK, f"{seconds:.1f} s: the error did not come before the work"


#: Cases that also run as a separate ``gemhsa-sym`` process (exit status and stderr as a user sees them).
SUBPROCESS = ("beta injection", "polynomial escape", "toml injection", "dps 0", "n memory", "verify plot suffix",
              "vary heads text", "claims presets", "beta 0 is the point mass", "infinitely many heads at beta 0")


def _run(case: Case, folder: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    argv = _place(case, folder)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gemhsa_sym.cli", *argv], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=120)
    return done, time.perf_counter() - start


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The SUBPROCESS cases, two at a time, beside the time of a bare ``gemhsa-sym presets``."""
    folders = {name: tmp_path_factory.mktemp("case") for name in SUBPROCESS}
    base = tmp_path_factory.mktemp("base")
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_run, CASES[name], folders[name]) for name in SUBPROCESS}
        baseline = [pool.submit(_run, Case(("presets",), 0, ""), base) for _ in range(2)]
        results = {name: future.result() for name, future in futures.items()}
        bare = min(future.result()[1] for future in baseline)
    return {"results": results, "folders": folders, "bare": bare}


@pytest.mark.parametrize("name", SUBPROCESS)
def test_command_line_process(name: str, processes: dict[str, Any]) -> None:
    case, folder = CASES[name], processes["folders"][name]
    done, seconds = processes["results"][name]
    assert done.returncode == case.status, done.stderr
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    if case.status:
        assert done.stderr.strip().splitlines() == [done.stderr.strip().splitlines()[0]]
        assert done.stderr.startswith(case.message.replace("{dir}", str(folder))), done.stderr
    _check_files(case, folder)
    if case.status:
        # twice the bare command's time: the two processes of a pair may share one core
        assert seconds <= 2 * processes["bare"] + SLACK, f"{seconds:.1f} s against {processes['bare']:.1f} s for a bare command"


@pytest.mark.parametrize("name", ["beta 0 is the point mass", "infinitely many heads at beta 0"])
def test_point_mass_at_beta_zero_is_reported(name: str, processes: dict[str, Any]) -> None:
    """Y = 0: the point mass at 0, with no minimal system to build (its reason is printed instead)."""
    done, _ = processes["results"][name]
    assert "atom at 0: mass 1" in done.stdout and "minimal system: none (Y = 0" in done.stdout


# --- the Python API -------------------------------------------------------------------------

n, d = Dim("n"), Dim("d")
X = Gaussian("X", n, d)


def _not_a_sample() -> Path:
    """An .npz file that is not a sample (written in the case's folder)."""
    np.savez("other.npz", a=np.zeros(3))
    return Path("other.npz")


def _mp_law() -> Any:
    return spectral_law(X, {n: 1, d: sp.Rational(1, 2)})


def _cache_entry(**changes: Any) -> dict[str, Any]:
    config = PRESETS["single-head"]
    entry = {"source": config.to_dict(), "moments": [{"exact": "E", "float": math.e}],
             "edges": [{"location": 0.0, "side": "lower", "hard": True, "refined": True},
                       {"location": 50.0, "side": "upper", "hard": False, "refined": True}],
             "atoms": [], "grid": [0.0, 1.0, 50.0], "table": [0.0, 0.5, 1.0], "probes": [[0.1, -0.2]], "seconds": 1.0,
             "error": 0.0, "answered": {}, "refused": {}, "whole": True, "tail": "inf", "density": None, "detail": {}}
    return {**entry, **changes}


API_CASES: dict[str, tuple[Callable[[], Any], type[BaseException], str]] = {
    "config beta injection": (lambda: Config(beta=INJECT), ValueError, "beta: cannot read"),
    "config escape": (lambda: Config(d=ESCAPE), ValueError, "d: cannot read"),
    "config d 1e300": (lambda: Config(d="1e300"), ValueError, "d: cannot read '1e300' as a number: 1e300 is out of range"),
    "config d 1e99": (lambda: Config(d="1e99"), ValueError, "d: d / n = 1e+99"),
    "parse exponent of ten million": (lambda: parse_number("1e9999999", "beta"), ValueError, "beta: cannot read '1e9999999' as a number: 1e9999999 is out of range"),
    "heads not an integer": (lambda: AttentionLaw(PRESETS["mha"], heads=2.5), ValueError, "heads: expected an integer"),
    "contour points 0": (lambda: _mp_law().numeric_moments(2, points=0), ValueError, "points: the contour rule needs an integer"),
    "covariance pairs of text": (lambda: Config(tokens="covariance", token_covariance=(("1", "x"),)), ValueError,
                                 "token_covariance[0].weight: cannot read"),
    "covariance not pairs": (lambda: Config(tokens="covariance", token_covariance=(1.0,)), ValueError, "token_covariance: expected (value, weight) pairs"),
    "npz not a sample": (lambda: SampleResult.load_npz(_not_a_sample()), ValueError, "path: "),
    "vary nothing": (lambda: parse_vary("beta= , ,"), ValueError, "vary: no value in"),
    "vary reversed": (lambda: parse_vary("beta=1:0:3"), ValueError, "vary: expected A <= B"),
    "config heads": (lambda: Config(heads=10**7), ValueError, "heads: at most"),
    "config share string": (lambda: Config(heads=4, share_k=["0123"]), ValueError, "share_k: each head group"),
    "config nan": (lambda: Config(beta=float("nan")), ValueError, "beta: must be finite"),
    "number power tower": (lambda: parse_number("9**9**9", "beta"), ValueError, "beta: cannot read '9**9**9'"),
    "number attribute": (lambda: parse_number("(1).__class__", "beta"), ValueError, "beta: cannot read"),
    "number lambda": (lambda: parse_number("(lambda: 1)()", "beta"), ValueError, "beta: cannot read"),
    "number long": (lambda: parse_number("1+" * 200 + "1", "beta"), ValueError, "beta: a number is at most"),
    "polynomial escape": (lambda: parse_polynomial(ESCAPE, {"X": X}), ValueError, "polynomial: cannot read"),
    "polynomial zero": (lambda: parse_polynomial("0", {"X": X}), ValueError, "polynomial: '0' is not a polynomial"),
    "polynomial call": (lambda: parse_polynomial("X.T.__class__", {"X": X}), ValueError, "polynomial: cannot read"),
    "model scale injection": (lambda: PolynomialModel({"polynomial": "X", "dimensions": {"n": "1", "d": "1"},
                                                      "gaussians": {"X": {"rows": "n", "cols": "d", "scale": INJECT}}}),
                              ValueError, "gaussians.X.scale: cannot read"),
    "ratio division by zero": (lambda: spectral_law(X, {n: 1, d: "1/0"}), ValueError, "ratios.d: cannot read"),
    "gaussian scale injection": (lambda: Gaussian("Y", n, d, scale=INJECT), ValueError, "Gaussian Y: scale: cannot read"),
    "edges dps 0": (lambda: _mp_law().edges(dps=0), ValueError, "dps: digits must be an integer from 1 to 100"),
    "edges dps huge": (lambda: _mp_law().edges(dps=10000), ValueError, "dps: digits must be"),
    "edges dps float": (lambda: _mp_law().edges(dps=2.5), ValueError, "dps: digits must be"),
    "stieltjes dps negative": (lambda: _mp_law().stieltjes(1 + 1j, dps=-1), ValueError, "dps: digits must be"),
    "stieltjes nan": (lambda: _mp_law().stieltjes(np.array([np.nan])), ValueError, "w: points must be finite"),
    "quantile level": (lambda: _mp_law().quantile([-0.1]), ValueError, "q: quantile levels"),
    "quantile nan": (lambda: _mp_law().quantile([np.nan]), ValueError, "q: got NaN"),
    "derive beta 50": (lambda: AttentionLaw(Config(beta=50)), ValueError, "beta: at beta = 50"),
    "sample n 1": (lambda: sample(Config(), n=1), ValueError, "n: "),
    "sample memory": (lambda: sample(Config(), n=10**6), ValueError, "n: a draw needs about"),
    "sample draws": (lambda: sample(Config(), n=10, draws=0), ValueError, "draws: need an integer"),
    "executor jobs": (lambda: open_executor(jobs=0).__enter__(), ValueError, "jobs: need an integer"),
    "executor timeout": (lambda: open_executor(scheduler="tcp://127.0.0.1:9", timeout=-1).__enter__(), ValueError,
                         "scheduler_timeout: need a positive"),
    "cache other config": (lambda: validated(_cache_entry(source={}), PRESETS["single-head"].to_dict(), True), ValueError,
                           "it belongs to another configuration"),
    "cache tampered moment": (lambda: validated(_cache_entry(moments=[{"exact": "E", "float": 99.0}]), PRESETS["single-head"].to_dict(), True),
                              ValueError, "moment 1 is 99.0, but its exact value E"),
    "cache missing key": (lambda: validated({k: v for k, v in _cache_entry().items() if k != "grid"}, PRESETS["single-head"].to_dict(), True),
                          ValueError, "a field is missing"),
    "cache bad cdf": (lambda: validated(_cache_entry(table=[0.0, 0.9, 0.5]), PRESETS["single-head"].to_dict(), True), ValueError,
                      "the CDF table is not a distribution"),
    "cache exact injection": (lambda: validated(_cache_entry(moments=[{"exact": INJECT, "float": 2.0}]), PRESETS["single-head"].to_dict(), True),
                              ValueError, "moment 1: cannot read"),
}


@pytest.mark.parametrize("name", list(API_CASES))
def test_api_case(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    call, error, message = API_CASES[name]
    start = time.perf_counter()
    with pytest.raises(error) as info:
        call()
    assert str(info.value).startswith(message), str(info.value)
    assert time.perf_counter() - start <= SLACK
    assert not (tmp_path / "pwned").exists()


def test_files_name_the_user_path(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_bytes(b"x = [")
    with pytest.raises(ValueError, match=f"^config: {tmp_path}/bad.toml is not valid TOML"):
        read_toml(tmp_path / "bad.toml")
    with pytest.raises(ValueError, match=f"^out: cannot write {tmp_path}/no/x.txt"):
        write_atomic(tmp_path / "no" / "x.txt", "text")


def test_write_interrupted_leaves_nothing(tmp_path: Path) -> None:
    def writer(fh: Any) -> None:
        fh.write(b"partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic_with(tmp_path / "out.npz", writer)
    assert list(tmp_path.iterdir()) == []


def test_a_cache_entry_is_read_only_through_its_validation(tmp_path: Path) -> None:
    """A valid entry comes back validated; a truncated, binary or tampered one gives None and a warning naming the file
    and the reason; the key, the kind and the layout each change the file."""
    from gemhsa_sym.verification.entries import entry_file, read_entry, write_entry

    config = PRESETS["single-head"]
    path = entry_file(tmp_path, "theory", 4, config.to_dict(), True)
    assert read_entry(path, lambda data: validated(data, config.to_dict(), True), "a summary") is None  # none yet, no warning
    write_entry(path, _cache_entry())
    assert read_entry(path, lambda data: validated(data, config.to_dict(), True), "a summary").moment_data[0]["exact"] == "E"
    for text, reason in (('{"config": ', "Expecting value"), ("\x00\xff", "not UTF-8 text"),
                         (json.dumps(_cache_entry(moments=[{"exact": "E", "float": 9.0}])), "moment 1 is 9.0")):
        path.write_bytes(text.encode("latin-1"))
        with pytest.warns(UserWarning, match=rf"cache: .*{path.name} is not a summary \(.*{reason}.*\); recomputing it"):
            assert read_entry(path, lambda data: validated(data, config.to_dict(), True), "a summary") is None
    others = {entry_file(tmp_path, "theory", 4, config.to_dict(), False), entry_file(tmp_path, "causal", 4, config.to_dict(), True),
              entry_file(tmp_path, "theory", 5, config.to_dict(), True)}
    assert path not in others and len(others) == 3


def test_a_table_with_an_exact_moment_longer_than_the_grammar_reads_back() -> None:
    """A law whose exact mean is longer than a number may be (c^2 for a scale c of 110 digits over 109: 440 characters)
    is tabulated with that moment as its float, so its cache entry reads back instead of being recomputed every time."""
    c = sp.Rational(10**110 + 7, 10**109 + 3)
    n, o = Dim("n"), Dim("o")
    law = spectral_law(c * Gaussian("X", n, o), {n: 1, o: 1})
    assert len(str(law.moments(1)[0])) > 200
    table = law.tabulate(moments=2)
    back = validated(json.loads(json.dumps(table.to_json_dict())), {}, True)
    assert back.moment_data[0]["exact"] is None and back.moments(1)[0] == pytest.approx(float(c**2), rel=1e-12)
    assert back.moment_data[1]["exact"] is None and back.moments(2)[1] == pytest.approx(2 * float(c**4), rel=1e-12)


def test_a_device_is_written_through_never_replaced(tmp_path: Path) -> None:
    """An output path that is not a regular file (/dev/null) is written through, never renamed over; a file is created
    with the permissions the umask gives (not 0600)."""
    import stat

    assert main(["derive", "marchenko-pastur", "--latex", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    old = os.umask(0o022)
    try:
        assert main(["derive", "marchenko-pastur", "--latex", str(tmp_path / "mp.tex")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "mp.tex").st_mode) == 0o644


def test_the_kernel_cache_falls_back_to_a_temporary_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A system-wide install run by a user without a writable home: numba gets a folder of the temporary directory
    instead of refusing to compile ("no locator available"); a writable place, or NUMBA_CACHE_DIR, is left to numba."""
    import tempfile

    from gemhsa_sym.free.numeric.kernel import cache_folder

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    nowhere = cache_folder(tmp_path / "package", tmp_path / "home", writable=lambda folder: False)
    assert nowhere is not None and nowhere.parent == Path(tempfile.gettempdir())
    assert cache_folder(tmp_path / "package", tmp_path / "home", writable=lambda folder: folder.name == "home") is None
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert cache_folder(tmp_path / "package", tmp_path / "home", writable=lambda folder: False) is None


def test_a_silent_scheduler_is_given_up_on_at_the_timeout() -> None:
    """A loopback server that accepts and never answers: the connection is given up on at --scheduler-timeout (plus one
    second), one line naming the scheduler, status 2 (Dask's own handshake alone would hold it for 30 s)."""
    import socket

    pytest.importorskip("distributed")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
    try:
        start = time.perf_counter()
        with pytest.raises(ConnectionError, match=f"^scheduler: no Dask scheduler answered at '{address}' within 2 s"):
            with open_executor(scheduler=address, timeout=2.0):
                pass
        assert time.perf_counter() - start < 10
    finally:
        server.close()


@pytest.mark.slow
def test_a_residual_of_1e_100_is_solved_not_refused() -> None:
    """``residual = "1e-100"``: the atom masses from P, whose coefficients span 800 decades, are found (no
    NoConvergence) and there is no atom; the moments are those of Marchenko-Pastur at ratio 1 (1, 2, 5) to 1e-12."""
    law = AttentionLaw(PRESETS["single-head"].replace(residual=sp.Rational(1, 10**100)))
    assert not [atom for atom in law.algebraic_atoms() or [] if atom.mass > 0]
    assert [float(m) for m in law.moments(3)] == pytest.approx([1, 2, 5], rel=1e-12)
