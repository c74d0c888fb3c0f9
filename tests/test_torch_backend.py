"""The sampler's torch backend against the numpy backend (docs/verification.md §4.8).

Both backends take the same tokens, weights and noise, drawn by numpy from the same seeds, so their
spectra agree to rounding (about 1e-15 of the largest eigenvalue; 1e-10 is asserted) and their
Kolmogorov–Smirnov distance sits far inside the Monte Carlo floor (two independent sample sets).
Runs on the cpu; the cuda checks that need no GPU (refusals, the device's memory) use stand-ins.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from gemhsa_sym.cli import main
from gemhsa_sym.layer import scores
from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.sampling.result import SampleResult
from gemhsa_sym.sampling.sampler import DrawTask, check_draws, draw_bytes, head_batch, run_draw, sample, spectrum
from gemhsa_sym.verification.compare import draw_tasks, two_sample

torch = pytest.importorskip("torch")
torch_backend = pytest.importorskip("gemhsa_sym.sampling.torch_backend")

N = 48
CASES = {
    "mha": PRESETS["mha"],
    "mqa": PRESETS["mqa"],
    "gqa": PRESETS["gqa"],
    "shared-q": PRESETS["shared-q"],
    "tied-kv": PRESETS["tied-kv"],
    "correlated-kv": PRESETS["correlated-kv"],
    "key-output": PRESETS["key-output"],
    "relu-none": PRESETS["single-head"].replace(score="relu", normalisation="none", beta=2),
    "wide-output-none": PRESETS["single-head"].replace(normalisation="none", d_v="1/2", d_out="3/2"),
    "sigmoid-beta": PRESETS["mha"].replace(score="sigmoid", beta="0.7"),
}


def assert_agree(expected: np.ndarray, actual: np.ndarray) -> None:
    """Equal to 1e-10, relative to the largest eigenvalue (zero eigenvalues are round-off of that size)."""
    np.testing.assert_allclose(actual, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())


@pytest.mark.parametrize("model", ["softmax", "ge"])
@pytest.mark.parametrize("name", list(CASES))
def test_torch_spectra_equal_numpy_spectra(name: str, model: str) -> None:
    config = CASES[name]
    numpy_draws = sample(config, N, draws=3, seed=3, model=model)
    torch_draws = sample(config, N, draws=3, seed=3, model=model, backend="torch")
    assert (torch_draws.backend, torch_draws.device) == ("torch", "cpu")
    assert_agree(numpy_draws.eigenvalues, torch_draws.eigenvalues)
    # the Monte Carlo floor: the same distance between two independent numpy sample sets
    floor = two_sample(numpy_draws.eigenvalues, sample(config, N, draws=3, seed=4, model=model).eigenvalues)["ks"]
    ks = two_sample(numpy_draws.eigenvalues, torch_draws.eigenvalues)["ks"]
    assert ks <= min(floor, 2 / numpy_draws.eigenvalues.size), (ks, floor)


def test_scores_read_the_same_on_tensors() -> None:
    s = np.concatenate([np.linspace(-60, 60, 1201), np.random.default_rng(0).standard_normal(500) * 5])
    for score in scores.SCORES.values():
        assert score.tensor is not None, score.name
        np.testing.assert_allclose(score.tensor(torch.from_numpy(s)).numpy(), score.numeric(s), rtol=1e-13, atol=1e-300)


def test_a_score_without_a_tensor_form_runs_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    score = scores.Score("test_sech", lambda s: 1 / __import__("sympy").cosh(s), lambda s: 1 / np.cosh(s))
    monkeypatch.setitem(scores.SCORES, score.name, score)
    config = PRESETS["gqa"].replace(score=score.name)
    assert_agree(sample(config, N, draws=2, seed=5).eigenvalues, sample(config, N, draws=2, seed=5, backend="torch").eigenvalues)


@pytest.mark.parametrize(("n", "d_out"), [(30, 12), (12, 30), (20, 20)])
def test_tensor_spectrum_is_the_spectrum(n: int, d_out: int) -> None:
    Y = np.random.default_rng(1).standard_normal((n, d_out)) + 3.0
    eigenvalues = torch_backend.tensor_spectrum(torch.from_numpy(Y))
    assert eigenvalues.shape == (d_out,) and np.all(np.diff(eigenvalues) >= 0)
    assert_agree(spectrum(Y), eigenvalues)


def test_softmax_is_max_shifted() -> None:
    # beta = 400 overflows exp without the shift
    config = PRESETS["mha"].replace(beta=400)
    assert np.isfinite(sample(config, 16, backend="torch").eigenvalues).all()


# --- execution: jobs, threads ------------------------------------------------------------


def test_torch_draws_do_not_depend_on_execution() -> None:
    config = PRESETS["mqa"]
    serial = sample(config, N, draws=4, seed=1, backend="torch", model="ge")
    pooled = sample(config, N, draws=4, seed=1, backend="torch", model="ge", jobs=2)
    np.testing.assert_array_equal(serial.eigenvalues, pooled.eigenvalues)
    with ThreadPoolExecutor(2) as executor:
        threaded = sample(config, N, draws=4, seed=1, backend="torch", model="ge", executor=executor)
    np.testing.assert_array_equal(serial.eigenvalues, threaded.eigenvalues)
    prefix = sample(config, N, draws=2, seed=1, backend="torch", model="ge")
    np.testing.assert_array_equal(serial.eigenvalues[:2], prefix.eigenvalues)


def test_draws_pin_torch_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []

    def spy(s: torch.Tensor) -> torch.Tensor:
        seen.append(torch.get_num_threads())
        return s.exp()

    monkeypatch.setitem(scores.SCORES, "test_exp", scores.Score("test_exp", scores.SCORES["exp"].symbolic, np.exp, True, spy))
    before = torch.get_num_threads()
    for threads in (1, 2):
        run_draw(DrawTask(PRESETS["mha"].replace(score="test_exp"), 16, "softmax", np.random.SeedSequence(0), threads, "torch"))
    assert seen == [1, 2]
    assert torch.get_num_threads() == before


# --- memory and devices --------------------------------------------------------------------


def test_memory_estimate_holds_the_batched_heads() -> None:
    config = PRESETS["mha"]
    assert head_batch(2000, 4) == 4 and head_batch(4096, 4) == 4 and head_batch(8192, 4) == 1 and head_batch(8192, 8) == 1
    sizes = config.sizes(2000)
    numpy_bytes, torch_bytes = draw_bytes(config, sizes, "softmax"), draw_bytes(config, sizes, "softmax", "torch")
    assert torch_bytes >= numpy_bytes + 3 * 2 * 8 * 2000**2
    assert draw_bytes(config, sizes, "ge", "torch") == draw_bytes(config, sizes, "ge")


def test_cuda_draws_are_checked_against_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch_backend, "device_problem", lambda device: None)
    monkeypatch.setattr(torch_backend, "free_memory", lambda device: 2**20)
    task = DrawTask(PRESETS["mha"], 2000, "softmax", np.random.SeedSequence(0), backend="torch", device="cuda")
    with pytest.raises(ValueError, match=r"^n: a draw needs about .* of memory; the cuda device has 1 MiB available$"):
        check_draws([task], 1)
    with pytest.raises(ValueError, match="^jobs: draws on the cuda device run in this process"):
        check_draws([task], 2)
    check_draws([task], None)  # elsewhere (a scheduler): not checked here


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_cuda_without_a_device_is_refused() -> None:
    with pytest.raises(ValueError, match="^device: no CUDA device is available to torch"):
        sample(PRESETS["mha"], 16, backend="torch", device="cuda")
    task = DrawTask(PRESETS["mha"], 16, "softmax", np.random.SeedSequence(0), backend="torch", device="cuda")
    with pytest.raises(ValueError, match="^device: no CUDA device"):
        run_draw(task)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
@pytest.mark.parametrize("command", [
    ["sample", "mha", "--n", "16"],
    ["verify", "mha", "--n", "16"],
    ["sweep", "mha", "--vary", "beta=1,2"],
    ["claims", "--out", "-"],
])
def test_cli_refuses_cuda_without_a_device(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*command, "--backend", "torch", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == ["gemhsa-sym: error: device: no CUDA device is available to torch " + torch.__version__]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_spectra_equal_numpy_spectra() -> None:
    for model in ("softmax", "ge"):
        expected = sample(PRESETS["gqa"], 64, draws=2, seed=2, model=model).eigenvalues
        assert_agree(expected, sample(PRESETS["gqa"], 64, draws=2, seed=2, model=model, backend="torch", device="cuda").eigenvalues)


# --- the command line ------------------------------------------------------------------------


def test_sample_command_with_torch(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "spectrum.npz"
    argv = ["sample", "tied-kv", "--n", "32", "--draws", "2", "--backend", "torch", "--json", "--quiet", "--out", str(out)]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["backend"], data["device"]) == ("torch", "cpu")
    expected = sample(PRESETS["tied-kv"], 32, draws=2, backend="torch")
    assert data["moments"] == expected.moments(4).tolist()
    loaded = SampleResult.load_npz(out)
    assert (loaded.backend, loaded.device) == ("torch", "cpu")
    np.testing.assert_array_equal(loaded.eigenvalues, expected.eigenvalues)


def test_verification_passes_the_backend_through(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = Config.from_sizes(n=40, heads=2, d_k=10)
    tasks = draw_tasks(config, 40, 2, 1, "torch", "cpu")
    for name, group in draw_tasks(config, 40, 2, 1).items():
        for (fn, (numpy_task,)), (_, (torch_task,)) in zip(group, tasks[name], strict=True):
            assert (torch_task.backend, torch_task.device, numpy_task.backend) == ("torch", "cpu", "numpy")
            assert_agree(fn(numpy_task)[0], fn(torch_task)[0])
    runs = {}
    for backend in ("numpy", "torch"):
        assert main(["sweep", "mha", "--vary", "beta=1,2", "--n", "32", "--no-theory", "--json", "--backend", backend]) == 0
        runs[backend] = json.loads(capsys.readouterr().out)["points"]
    for first, second in zip(runs["numpy"], runs["torch"], strict=True):
        for model in ("softmax", "ge"):
            for key, figures in first["mc"][model].items():
                assert second["mc"][model][key]["mean"] == pytest.approx(figures["mean"], rel=1e-10), (model, key)
    seen = []

    def spy(*args: object, **kwargs: object) -> None:
        seen.append((kwargs["backend"], kwargs["device"]))
        raise ValueError("stop")

    monkeypatch.setattr("gemhsa_sym.cli.verify.verify", spy)
    monkeypatch.setattr("gemhsa_sym.cli.claims.claims", spy)
    assert main(["verify", "mha", "--n", "16", "--backend", "torch"]) == 2
    assert main(["claims", "--out", "-", "--backend", "torch", "--device", "cpu"]) == 2
    assert seen == [("torch", "cpu")] * 2
