"""Tests of the ``presets`` and ``sample`` commands."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp

from gemhsa_sym.cli import main
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.sampling.result import SampleResult
from gemhsa_sym.sampling.sampler import sample


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    """Run ``sample ... --json --quiet`` and parse its output."""
    assert main(["sample", *argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def test_presets_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(PRESETS)
    assert any("W_K, W_V shared by all heads" in line for line in lines)


def test_presets_toml(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["presets", "--toml", "gqa"]) == 0
    assert Config.from_toml(capsys.readouterr().out) == PRESETS["gqa"]


def test_sample_json(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "mha", "--n", "64", "--draws", "2", "--seed", "3", "--model", "ge")
    assert {"moments", "min", "max", "n", "draws", "seed", "model", "sizes", "config"} <= set(data)
    assert (data["n"], data["draws"], data["seed"], data["model"]) == (64, 2, 3, "ge")
    assert data["sizes"] == {"n": 64, "d": 64, "d_k": 16, "d_v": 16, "d_out": 64}
    assert Config.from_dict(data["config"]) == PRESETS["mha"]
    expected = sample(PRESETS["mha"], 64, draws=2, seed=3, model="ge")
    assert data["moments"] == expected.moments(4).tolist()
    assert all(isinstance(m, float) for m in data["moments"])
    assert data["min"] <= data["moments"][0] <= data["max"]


def test_sample_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gqa", "--n", "32", "--beta", "3/2", "--set", "heads=8", "--set", "d_k=1/8",
                    "--set", "d_v=1/8")
    config = Config.from_dict(data["config"])
    assert config.beta == sp.Rational(3, 2) and config.heads == 8
    assert config.share_k == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert data["sizes"]["d_k"] == 4


def test_sample_toml_file_and_output(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "layer.toml"
    path.write_text(Config.from_sizes(n=40, d=30, d_k=10, heads=2, share_q="all").to_toml())
    out = tmp_path / "spectrum.npz"
    assert main(["sample", str(path), "--draws", "2", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Y_c^T Y_c / n" in text and "n=40, d=30, d_k=10, d_v=10, d_out=30" in text
    result = SampleResult.load_npz(out)
    assert result.eigenvalues.shape == (2, 30)
    assert result.config == Config.from_toml(path)
    np.testing.assert_array_equal(result.eigenvalues, sample(result.config, draws=2).eigenvalues)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["sample", "nonesuch", "--n", "16"], "config: 'nonesuch' is neither a preset"),
        (["sample", "mha"], "n: the configuration has no token count"),
        (["sample", "mha", "--n", "18"], "d_k: "),
        (["sample", "mha", "--n", "16", "--beta", "nan"], "beta: must be finite"),
        (["sample", "mha", "--n", "16", "--set", "heads"], "set: expected FIELD=VALUE"),
        (["sample", "mha", "--n", "16", "--set", "rho=2"], "rho: "),
        (["sample", "mha", "--n", "16", "--draws", "0"], "argument --draws: must be an integer from 1"),
        (["presets", "--toml", "nonesuch"], "config: 'nonesuch'"),
    ],
)
def test_bad_input_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


# --- --backend and --device (docs/verification.md §4.8) -------------------------------------------

COMMANDS = {
    "sample": ["sample", "mha", "--n", "16"],
    "verify": ["verify", "mha", "--n", "16"],
    "sweep": ["sweep", "mha", "--vary", "beta=1,2"],
    "threshold": ["threshold", "mha", "--beta", "1,2", "--n", "16"],
    "claims": ["claims", "--out", "-"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--backend", "jax"], "gemhsa-sym {command}: error: argument --backend: expected one of numpy, torch, got 'jax'"),
        (["--device", "tpu"], "gemhsa-sym {command}: error: argument --device: expected one of cpu, cuda, got 'tpu'"),
        (["--device", "cuda"], "gemhsa-sym: error: device: the numpy backend runs on the cpu; draw on cuda with the torch backend"),
    ],
)
def test_backend_options_are_checked(command: str, options: list[str], message: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*COMMANDS[command], *options]) == 2
    assert capsys.readouterr().err.splitlines() == [message.format(command=command)]


def test_torch_backend_without_torch(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    import gemhsa_sym.sampling

    monkeypatch.setitem(sys.modules, "torch", None)  # ``import torch`` fails as where it is not installed
    monkeypatch.delitem(sys.modules, "gemhsa_sym.sampling.torch_backend", raising=False)
    monkeypatch.delattr(gemhsa_sym.sampling, "torch_backend", raising=False)
    for command in COMMANDS.values():
        assert main([*command, "--backend", "torch"]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("gemhsa-sym: error: backend: the torch backend needs torch"), err
        assert err[0].endswith("pip install 'gemhsa_sym[torch]'")
    with pytest.raises(NotImplementedError, match="^backend: the torch backend needs torch"):
        sample(PRESETS["mha"], 16, backend="torch")
    assert sample(PRESETS["mha"], 16).backend == "numpy"
