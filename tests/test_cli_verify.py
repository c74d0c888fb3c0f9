"""The verify, sweep and claims commands: JSON keys, plots, determinism under --jobs and on Dask.

Solving an attention law takes minutes, so these tests put a stand-in law (the exact
law of docs/reference-values.md §9.2, case i′) in the theory cache under the configuration's key; the
samples are the real softmax and Gaussian-equivalent draws. The slow test at the
end verifies the real single-head law.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from verification_helpers import mp_law, mp_theory, store_stand_in

from gemhsa_sym.cli import main
from gemhsa_sym.layer.presets import PRESETS
from gemhsa_sym.sampling.sampler import sample
from gemhsa_sym.verification.claims import ClaimsResult, laws_equal, render_markdown
from gemhsa_sym.verification.compare import compare
from gemhsa_sym.verification.sweep import parse_vary, sweep, vary_config

CONFIG = PRESETS["single-head"]


@pytest.fixture(scope="module")
def theory():
    return mp_theory()


@pytest.fixture()
def cache(tmp_path: Path, theory) -> Path:
    store_stand_in(tmp_path / "cache", CONFIG, theory)
    return tmp_path / "cache"


def verify_json(capsys: pytest.CaptureFixture[str], cache: Path, *argv: str) -> dict:
    assert main(["verify", "single-head", "--json", "--quiet", "--cache", str(cache), *argv]) == 0
    return json.loads(capsys.readouterr().out)


def test_verify_json_keys_and_figures(capsys, cache: Path) -> None:
    data = verify_json(capsys, cache, "--n", "120", "--draws", "2", "--seed", "4")
    assert {"ks", "w1", "floor", "moments", "edges", "outliers", "timing", "atoms"} <= set(data)
    for key in ("ks", "w1"):
        assert set(data[key]) == {"theory_softmax", "theory_ge"}
        assert all(isinstance(v, float) and 0 <= v <= 10 for v in data[key].values())
    assert {"ks", "w1"} <= set(data["floor"])
    # the moments of the samples are those of the sampler with the same seed
    soft = sample(CONFIG, 120, draws=2, seed=4, model="softmax").moments(4)
    assert [m["samples"] for m in data["moments"]["softmax"]] == pytest.approx(soft.tolist(), rel=1e-12)
    assert [m["k"] for m in data["moments"]["ge"]] == [1, 2, 3, 4]
    assert data["outliers"]["softmax"]["count"] >= data["outliers"]["softmax"]["above_top"] >= 0
    assert data["edges"]["softmax"][-1]["side"] == "upper" and "quantile" in data["edges"]["softmax"][-1]
    assert {"softmax_s", "ge_s", "floor_s", "total_s"} <= set(data["timing"])


def test_verify_does_not_depend_on_jobs(capsys, cache: Path) -> None:
    runs = []
    for jobs in ("1", "2"):
        data = verify_json(capsys, cache, "--n", "60,100", "--draws", "2", "--jobs", jobs)
        for record in (data, *data["by_n"]):
            record.pop("timing")
        runs.append(data)
    assert runs[0] == runs[1]
    scaling = runs[0]["scaling"]
    assert scaling["n"] == [60, 100] and len(runs[0]["by_n"]) == 2
    assert "ks_theory_softmax_exponent" in scaling


def test_verify_text_table(capsys, cache: Path) -> None:
    assert main(["verify", "single-head", "--n", "80", "--draws", "2", "--quiet", "--cache", str(cache)]) == 0
    text = capsys.readouterr().out
    for needle in ("theory-softmax", "floor (GE-GE)", "M_4", "upper edge", "outliers softmax", "atoms"):
        assert needle in text


def test_verify_plot_is_rendered(tmp_path: Path, capsys, cache: Path) -> None:
    plt = pytest.importorskip("matplotlib.pyplot")
    out = tmp_path / "verify.png"
    assert main(["verify", "single-head", "--n", "80", "--draws", "2", "--quiet", "--cache", str(cache),
                 "--plot", str(out)]) == 0
    assert out.stat().st_size > 20_000
    image = plt.imread(out)[..., :3]
    assert image.shape[0] > 300 and image.shape[1] > 1000
    not_white = np.mean(np.any(image < 0.9, axis=-1))
    assert 0.02 < not_white < 0.9 and image.std() > 0.05


def test_sweep_parsing_and_heads() -> None:
    assert parse_vary("beta=0.25:1.5:6") == ("beta", ["0.25", "0.5", "0.75", "1", "1.25", "1.5"])
    assert parse_vary("heads=1,2,4,8") == ("heads", ["1", "2", "4", "8"])
    with pytest.raises(ValueError, match="vary"):
        parse_vary("beta")
    config = vary_config(PRESETS["mha"], {"heads": "8"})
    assert config.heads == 8 and config.d_k * 8 == config.d and config.d_v == config.d_k


def test_sweep_is_the_same_serially_in_processes_and_on_dask() -> None:
    distributed = pytest.importorskip("distributed")
    from gemhsa_sym.sampling.executors import open_executor

    vary = [("beta", ["0.5", "1"]), ("heads", ["1", "2"])]
    args = dict(n=48, draws=2, seed=7, theory=False)
    serial = sweep(CONFIG, vary, **args).to_json_dict()
    with open_executor(jobs=2) as pool:
        assert sweep(CONFIG, vary, executor=pool, **args).to_json_dict() == serial
    with distributed.LocalCluster(host="127.0.0.1", protocol="tcp://", n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        with open_executor(scheduler=cluster.scheduler_address) as executor:
            assert sweep(CONFIG, vary, executor=executor, **args).to_json_dict() == serial
    # different points draw different seeds
    rows = [p["mc"]["softmax"]["M_1"]["mean"] for p in serial["points"]]
    assert len(set(rows)) == len(rows)


def test_sweep_command_with_theory_and_plot(tmp_path: Path, capsys, theory) -> None:
    pytest.importorskip("matplotlib")
    cache = tmp_path / "cache"
    for beta in ("0.5", "1"):
        store_stand_in(cache, CONFIG.replace(beta=beta), theory, cdf=False)
    out = tmp_path / "sweep.png"
    assert main(["sweep", "single-head", "--vary", "beta=0.5:1:2", "--n", "40", "--draws", "2", "--quiet",
                 "--cache", str(cache), "--plot", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["values"] for p in data["points"]] == [{"beta": "0.5"}, {"beta": "1"}]
    assert data["points"][0]["theory"]["moments"][:2] == pytest.approx([1, 3])
    assert set(data["points"][1]["mc"]) == {"softmax", "ge"} and out.stat().st_size > 10_000


def test_claims_verdicts_are_computed(theory) -> None:
    from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
    from gemhsa_sym.laws.spectral import spectral_law

    n, D = Dim("n"), Dim("D")
    other = spectral_law(Gaussian("X", n, D), {n: 1, D: 4}).tabulate()
    assert laws_equal(theory, theory)[0] and not laws_equal(theory, other)[0]
    law = mp_law()
    rows = {}
    for name in PRESETS:
        samples = {key: law.sample(40, seed=seed, draws=2) for seed, key in enumerate(("softmax", "ge", "floor"))}
        rows[name] = [compare(theory, samples, 40)]
    theories = {name: theory for name in PRESETS} | {"shared-q": other}
    text = render_markdown(ClaimsResult([40], 2, 0, theories, rows), "gemhsa-sym claims --n 40")
    line = next(row for row in text.splitlines() if row.startswith("| Q sharing"))
    assert "law changed" in line and line.endswith("| yes |")
    line = next(row for row in text.splitlines() if row.startswith("| Tying"))
    assert "law preserved" in line and line.endswith("| NO |")
    assert "**does not narrow**" in text
    assert "attention matrix (predecessor paper" not in text


def test_claims_attention_section(theory) -> None:
    """The attention matrix's section: its edge against 4 v and its mu_2 against 2 v^2, v = e^{beta^2} - 1.
    The stand-in law (mean 1, mu_2 3, top edge 2 (1 + 1/sqrt 2)^2 = 5.83) is beyond 4 v only where v < 1.457."""
    law = mp_law()
    rows = {"attention-matrix": [compare(theory, {k: law.sample(40, seed=s, draws=2) for s, k in enumerate(("softmax", "ge", "floor"))}, 40)]}
    text = render_markdown(ClaimsResult([40], 2, 0, {"attention-matrix": theory}, rows, {"1/2": theory, "3/2": theory}),
                           "gemhsa-sym claims --n 40")
    table = [row for row in text.splitlines() if row.startswith(("| 1/2 |", "| 3/2 |"))]
    assert table[0].endswith("| yes |") and table[1].endswith("| NO |")
    assert "**not every** beta" in text and "**not Marchenko–Pastur**" in text


def test_claims_causal_section_verdicts_are_computed(theory) -> None:
    """The causal section's verdicts follow its figures: a gap fitted as n^-0.5 shrinks, a flat one does not; each
    law's KS(theory, GE without the uniform part) is compared with the floor + 0.002 and its KS(theory, softmax) fitted
    like the gap (a layer without a law shows none)."""
    from gemhsa_sym.laws.tabulated import TabulatedLaw
    from gemhsa_sym.verification.compare import Comparison, VerifyResult
    from gemhsa_sym.verification.positional_claims import CAUSAL

    def comparisons(gaps: list[float], theory_free: float | None) -> list[Comparison]:
        """KS(theory, softmax) at the two n: the gaps halved (fitted as the gaps are); KS(theory, GE) 0.03."""
        sets = {name: np.zeros((2, 1)) for name in ("softmax", "ge", "ge_without_uniform", "floor")}
        ks = {"theory_softmax": 0.0, "theory_ge": 0.03, "theory_ge_without_uniform": theory_free}
        return [Comparison(n, 2, None if theory_free is None else ks | {"theory_softmax": gap / 2}, None,
                           {"ks": 0.002, "w1": 0.0}, {"ks": gap, "w1": 0.0}, None, None, None, {},
                           {"q": [0.1, 0.5, 0.9, 0.99], "theory": None, "softmax": [0.0, 0.1, 19.0, 220.0],
                            "ge": [0.0, 0.11, 20.0, 250.0], "ge_without_uniform": [0.0, 0.105, 19.5, 230.0]},
                           {"theory": None, "softmax": 1.0, "ge": 1.0, "ge_without_uniform": 1.0}, {}, sets)
                for n, gap in zip((500, 2000), gaps)]

    law = TabulatedLaw({}, np.array([1e-4, 1.0]), np.array([0.18, 0.5]), [], 1e-4, {}, {}, whole=False)
    rows = {"single-head": [compare(theory, {k: mp_law().sample(40, seed=s, draws=2) for s, k in enumerate(("softmax", "ge", "floor"))}, 40)]}
    for gaps, verdict in (([0.02, 0.01], "**shrinks**, fitted as n^-0.50"), ([0.01, 0.0099], "**does not shrink**")):
        causal = {"softmax": VerifyResult(CAUSAL["softmax"], 0, law, comparisons(gaps, 0.0095), 0.0),
                  "square": VerifyResult(CAUSAL["square"], 0, law, comparisons(gaps, 0.0035), 0.0),
                  "shared": VerifyResult(CAUSAL["softmax"], 0, None, comparisons(gaps, None), 0.0, reason="no law")}
        text = render_markdown(ClaimsResult([40], 2, 0, {"single-head": theory}, rows, {}, causal), "gemhsa-sym claims")
        assert "## Causal attention (a decoder layer)" in text and verdict in text
        assert f"Verdict (softmax): KS(softmax, GE) {verdict}" in text and "Verdict (square):" not in text
        assert "| shared | 500 | no law | no law | no law |" in text and "Verdict (shared law)" not in text
        assert "0.1 / 0.11 / 0.105 | 220 / 250 / 230 |" in text
        assert "the causal section at n = 500, 2000;" in text
        assert ("Verdict (square law): KS(theory, GE w/o c_0) at n = 2000 is 0.0035 against the floor 0.0020: **within** "
                "the floor + 0.002 (KS(theory, GE) 0.0300)") in text
        assert "Verdict (softmax law): KS(theory, GE w/o c_0) at n = 2000 is 0.0095 against the floor 0.0020: **beyond**" in text
        assert f"the floor + 0.002 (KS(theory, GE) 0.0300); KS(theory, softmax) {verdict}" in text and "the law's own error of F is 0.0001." in text


def test_claims_depth_section_verdicts_are_computed(theory) -> None:
    """The depth section's verdicts follow its figures: the Marchenko-Pastur stand-in's own samples are within the floor
    and hold, a law of another ratio against the same samples is beyond the floor and fails."""
    from gemhsa_sym.free.expressions.matrices import Dim, Gaussian
    from gemhsa_sym.laws.spectral import spectral_law
    from gemhsa_sym.verification.compare import VerifyResult
    from gemhsa_sym.verification.positional_claims import DEPTH

    n, D = Dim("n"), Dim("D")
    other = spectral_law(Gaussian("X", n, D), {n: 1, D: 4}).tabulate()
    law = mp_law()
    labels = list(DEPTH)[:2]
    depth = {}
    for label, table in zip(labels, (theory, other)):
        rows = [compare(table, {k: law.sample(size, seed=s, draws=2) for s, k in enumerate(("softmax", "ge", "floor"))}, size)
                for size in (200, 800)]
        depth[label] = VerifyResult(CONFIG, 0, table, rows, 0.0)
    text = render_markdown(ClaimsResult([200, 800], 2, 0, {}, {}, {}, {}, depth), "gemhsa-sym claims")
    assert "## Depth: transformer blocks at initialisation" in text
    good, bad = (next(line for line in text.splitlines() if line.startswith(f"Verdict ({label})")) for label in labels)
    assert "**within** the floor + 0.002; the law **holds**" in good and "KS(real, GE) ~ n^" in good
    assert "**beyond** the floor + 0.002; the law **fails**" in bad
    assert f"| {labels[0]} | 800 |" in text and "1 / " in text.split(f"| {labels[0]} | 800 |")[1].splitlines()[0]


@pytest.mark.slow
def test_verify_single_head_real_law(capsys) -> None:
    assert main(["verify", "single-head", "--n", "400", "--draws", "2", "--json", "--quiet"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ks"]["theory_ge"] < 0.03 and data["ks"]["theory_softmax"] < 0.04
    assert data["moments"]["ge"][0]["rel_diff"] == pytest.approx(0, abs=0.03)
