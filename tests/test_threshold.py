"""The threshold command: KS(softmax, GE) and KS(theory, softmax) on a grid of beta and n (docs/verification.md §4.9)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from gemhsa_sym.cli import main
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.sampling.sampler import sample
from gemhsa_sym.verification.sweep import vary_config
from gemhsa_sym.verification.threshold import STALLED, threshold

N = [64, 128]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    plot = tmp_path_factory.mktemp("threshold") / "threshold.png"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["threshold", "single-head", "--beta", "1/2,2", "--n", "64,128", "--draws", "2", "--seed", "3",
                     "--json", "--quiet", "--plot", str(plot)]) == 0
    return json.loads(out.getvalue()), plot


def test_the_gap_is_the_two_sample_ks_of_the_sampler_with_the_same_seed(measured) -> None:
    data, _ = measured
    assert [r["beta"] for r in data["rows"]] == ["1/2", "2"] and data["n"] == N
    for row in data["rows"]:
        config = vary_config(PRESETS["single-head"], {"beta": row["beta"]})
        for n, gap in zip(N, row["ks_softmax_ge"]):
            soft = sample(config, n, draws=2, seed=3, model="softmax").eigenvalues.ravel()
            ge = sample(config, n, draws=2, seed=3, model="ge").eigenvalues.ravel()
            want = stats.ks_2samp(np.maximum(soft, 0), np.maximum(ge, 0)).statistic
            assert gap == pytest.approx(want, abs=1e-12)


def test_exponents_are_the_log_log_fits_of_the_reported_distances(measured) -> None:
    data, _ = measured
    for row in data["rows"]:
        for key, fit in (("ks_softmax_ge", "exponent_softmax_ge"), ("ks_theory_softmax", "exponent_theory_softmax")):
            a, b = row[key]
            assert row[fit] == pytest.approx(np.log(b / a) / np.log(N[1] / N[0]), rel=1e-9)


def test_the_verdict_says_what_the_exponents_say(measured) -> None:
    data, plot = measured
    stalled = [r["beta"] for r in data["rows"] if r["exponent_softmax_ge"] > STALLED]
    assert ("stops shrinking" in data["verdict"]) == bool(stalled)
    assert f"{np.sqrt(np.log(64)):.2f} at n = 64" in data["verdict"]
    assert plot.stat().st_size > 0
    # the gap at beta = 2 is larger than at beta = 1/2 (the linearisation worsens with beta)
    assert data["rows"][1]["ks_softmax_ge"][-1] > data["rows"][0]["ks_softmax_ge"][-1]


@pytest.mark.parametrize("argv, field", [
    (["threshold", "single-head", "--beta", "1:2"], "--beta"),
    (["threshold", "derivations/marchenko-pastur.toml", "--beta", "1,2"], "config"),
    (["threshold", "single-head", "--beta", "1,2", "--set", "mask=causal"], "mask"),
    (["threshold", "single-head", "--beta", "1,x", "--n", "64"], "beta"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], field: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err


def test_threshold_refuses_a_causal_layer_before_any_draw() -> None:
    config = PRESETS["single-head"].replace(mask="causal", score="square")
    with pytest.raises(ValueError, match="mask"):
        threshold(config, ["1"], N)
