"""Tests of gemhsa_sym.layer.config: validation, canonical forms, round trips, presets."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
import sympy as sp

from gemhsa_sym.layer.config import Config
from gemhsa_sym.layer.presets import PRESETS, load_config

R = sp.Rational
INDEPENDENT4 = ((0,), (1,), (2,), (3,))
ALL4 = ((0, 1, 2, 3),)


# --- presets -----------------------------------------------------------------

PRESET_FIELDS = {
    "single-head": dict(heads=1, d_k=1, d_v=1),
    "mha": dict(heads=4, d_k=R(1, 4), d_v=R(1, 4)),
    "mqa": dict(heads=4, d_k=R(1, 4), share_k=ALL4, share_v=ALL4),
    "gqa": dict(heads=4, d_k=R(1, 4), share_k=((0, 1), (2, 3)), share_v=((0, 1), (2, 3))),
    "shared-q": dict(heads=4, d_k=R(1, 4), share_q=ALL4, share_k=INDEPENDENT4),
    "tied-kv": dict(heads=1, kv="tied", rho=0),
    "correlated-kv": dict(heads=1, kv="correlated", rho=R(1, 2)),
    "key-output": dict(heads=1, output="keys"),
    "heads-8": dict(heads=8, d_k=R(1, 8), d_v=R(1, 8)),
    "attention-matrix": dict(heads=1, d_k=1, target="attention", tokens="gaussian"),
    "attention-orthonormal": dict(heads=1, d_k=1, target="attention", tokens="orthonormal"),
    "residual": dict(heads=1, residual=1),
    "tokens-two-level": dict(heads=1, tokens="covariance", token_covariance=((R(1, 2), R(1, 2)), (R(3, 2), R(1, 2)))),
    "heads-infinite": dict(heads="oo", d_k=None, d_v=None, share_q="independent", share_k="independent"),
    "causal-single-head": dict(heads=1, d_k=1, mask="causal"),
    "causal-mha": dict(heads=4, d_k=R(1, 4), d_v=R(1, 4), mask="causal"),
    "causal-mqa": dict(heads=4, d_k=R(1, 4), d_v=R(1, 4), share_k=ALL4, share_v=ALL4, mask="causal"),
    "causal-gqa": dict(heads=8, d_k=R(1, 8), d_v=R(1, 8), share_k=((0, 1), (2, 3), (4, 5), (6, 7)),
                       share_v=((0, 1), (2, 3), (4, 5), (6, 7)), mask="causal"),
    "causal-attention-matrix": dict(heads=1, d_k=1, target="attention", tokens="gaussian", mask="causal"),
}


def test_preset_names() -> None:
    assert set(PRESETS) == set(PRESET_FIELDS)


@pytest.mark.parametrize("name", sorted(PRESET_FIELDS))
def test_preset_fields(name: str) -> None:
    config = PRESETS[name]
    assert config.name == name
    assert config.beta == 1 and config.score == "softmax" and config.normalisation == "row"
    assert config.n == 1 and config.d == 1 and config.d_out == 1 and config.size_n is None
    for key, value in PRESET_FIELDS[name].items():
        assert getattr(config, key) == value, key
    if name not in {"mqa", "gqa", "shared-q", "heads-infinite", "causal-mqa", "causal-gqa"}:
        independent = tuple((h,) for h in range(config.heads))
        assert config.share_q == config.share_k == config.share_v == independent


@pytest.mark.parametrize("name", sorted(PRESET_FIELDS))
def test_preset_round_trips(name: str) -> None:
    config = PRESETS[name]
    assert Config.from_toml(config.to_toml()) == config
    assert Config.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert load_config(name) is config


def test_summary_mentions_structure() -> None:
    assert "W_K, W_V shared by all heads" in PRESETS["mqa"].summary()
    assert "in 2 groups" in PRESETS["gqa"].summary()
    assert "W_Q shared" in PRESETS["shared-q"].summary()
    assert "W_V = W_K" in PRESETS["tied-kv"].summary()
    assert "rho=1/2" in PRESETS["correlated-kv"].summary()
    assert "d_k=n/8" in PRESETS["heads-8"].summary()


# --- dimensions ----------------------------------------------------------------


def test_ratio_input_and_defaults() -> None:
    config = Config(d="1/2", heads=2)
    assert config.ratios() == {"n": 1, "d": R(1, 2), "d_k": R(1, 4), "d_v": R(1, 4), "d_out": R(1, 2)}
    assert all(isinstance(v, sp.Rational) for v in config.ratios().values())
    assert Config(d=Fraction(1, 2), d_k=0.25, d_v=R(1, 4), heads=2) == config
    assert config.sizes(8) == {"n": 8, "d": 4, "d_k": 2, "d_v": 2, "d_out": 4}


def test_size_input() -> None:
    config = Config.from_sizes(n=2000, d=1000, d_k=250, d_v=125, d_out=500, heads=4)
    assert config.size_n == 2000
    assert config.ratios() == {"n": 1, "d": R(1, 2), "d_k": R(1, 8), "d_v": R(1, 16), "d_out": R(1, 4)}
    assert config.sizes() == {"n": 2000, "d": 1000, "d_k": 250, "d_v": 125, "d_out": 500}
    assert config.sizes(4000)["d_v"] == 250
    assert Config(n=2000, d=1000, d_k=250, d_v=125, d_out=500, heads=4) == config
    assert Config.from_toml(config.to_toml()) == config
    assert Config.from_sizes(n=12, heads=3).sizes() == {"n": 12, "d": 12, "d_k": 4, "d_v": 4, "d_out": 12}


def test_sizes_need_a_token_count() -> None:
    with pytest.raises(ValueError, match="^n: .*no token count"):
        Config().sizes()
    with pytest.raises(ValueError, match="^n: "):
        Config().sizes(0)


def test_sizes_must_be_integers() -> None:
    with pytest.raises(ValueError, match="^d_k: 1/3 \\* n = 1000/3"):
        Config(heads=3).sizes(1000)
    with pytest.raises(ValueError, match="^d_k: "):
        Config.from_sizes(n=10, heads=3)


@pytest.mark.parametrize("field", ["d", "d_k", "d_v", "d_out"])
@pytest.mark.parametrize("value", [0, -1, "-1/2"])
def test_non_positive_ratio(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"^{field}: must be positive"):
        Config(**{field: value})


@pytest.mark.parametrize("field", ["d", "d_k", "d_v", "d_out"])
def test_non_integer_size(field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}: n is a size"):
        Config(n=100, **{field: 2.5})
    with pytest.raises(ValueError, match=f"^{field}: must be positive"):
        Config(n=100, **{field: 0})


def test_bad_token_count() -> None:
    for bad in (0, -5, "5/2"):
        with pytest.raises(ValueError, match="^n: "):
            Config(n=bad)
    with pytest.raises(ValueError, match="^size_n: "):
        Config(size_n=0)
    with pytest.raises(ValueError, match="^size_n: "):
        Config(n=100, size_n=200)


def test_non_numeric_dimension() -> None:
    with pytest.raises(ValueError, match="^d: cannot read 'wide' as a number: unknown name"):
        Config(d="wide")
    with pytest.raises(ValueError, match="^d: .*rational"):
        Config(d="sqrt(2)")


# --- heads and sharing ---------------------------------------------------------


@pytest.mark.parametrize("heads", [0, -1])
def test_too_few_heads(heads: int) -> None:
    with pytest.raises(ValueError, match="^heads: need at least one head"):
        Config(heads=heads)


def test_non_integer_heads() -> None:
    with pytest.raises(ValueError, match="^heads: expected an integer"):
        Config(heads=2.5)
    with pytest.raises(ValueError, match="^heads: expected an integer"):
        Config(heads=True)


def test_sharing_forms() -> None:
    config = Config(heads=4, share_q="all", share_k={"groups": 2}, share_v=[[3, 1], [2], [0]])
    assert config.share_q == ALL4
    assert config.share_k == ((0, 1), (2, 3))
    assert config.share_v == ((0,), (1, 3), (2,))
    assert Config(heads=4, share_v='[[0], [1, 3], [2]]') .share_v == config.share_v
    assert Config(heads=4, share_k='{"groups": 2}').share_k == config.share_k
    assert [config.group_of("k", h) for h in range(4)] == [0, 0, 1, 1]
    assert [config.group_of("V", h) for h in range(4)] == [0, 1, 2, 1]
    assert config.group_of("w_q", 3) == 0
    assert Config.from_toml(config.to_toml()) == config


def test_group_of_bad_arguments() -> None:
    with pytest.raises(ValueError, match="^which: "):
        Config().group_of("o", 0)
    with pytest.raises(ValueError, match="^head: "):
        Config().group_of("q", 1)


@pytest.mark.parametrize("field", ["share_q", "share_k", "share_v"])
def test_sharing_must_partition_the_heads(field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}: heads \\[3\\] are in no group"):
        Config(heads=4, **{field: [[0, 1], [2]]})
    with pytest.raises(ValueError, match=f"^{field}: heads \\[1\\] appear in more than one group"):
        Config(heads=4, **{field: [[0, 1], [1, 2, 3]]})
    with pytest.raises(ValueError, match=f"^{field}: heads \\[4\\] out of range"):
        Config(heads=4, **{field: [[0, 1], [2, 3, 4]]})
    with pytest.raises(ValueError, match=f"^{field}: heads \\[-1\\] out of range"):
        Config(heads=4, **{field: [[-1, 0, 1], [2, 3]]})
    with pytest.raises(ValueError, match=f"^{field}: empty head group"):
        Config(heads=4, **{field: [[0, 1, 2, 3], []]})
    with pytest.raises(ValueError, match=f"^{field}: expected 'independent'"):
        Config(heads=4, **{field: "some"})
    with pytest.raises(ValueError, match=f"^{field}: expected a list"):
        Config(heads=4, **{field: 3})


@pytest.mark.parametrize("groups", [3, 0, 5])
def test_groups_must_divide_heads(groups: int) -> None:
    with pytest.raises(ValueError, match=f"^share_k: {groups} groups do not divide 4 heads"):
        Config(heads=4, share_k={"groups": groups})


def test_groups_mapping_keys() -> None:
    with pytest.raises(ValueError, match="^share_q: a mapping must be"):
        Config(heads=4, share_q={"size": 2})


# --- beta, score, keywords --------------------------------------------------------


def test_beta_forms() -> None:
    assert Config(beta=0.5).beta == R(1, 2)
    assert Config(beta="3/2").beta == R(3, 2)
    assert Config(beta="1.5").beta == R(3, 2)
    assert Config(beta="sqrt(2)").beta == sp.sqrt(2)
    assert Config(beta=-1).beta == -1


@pytest.mark.parametrize("beta", [float("nan"), float("inf"), "nan", "-inf", "oo", "log(0)"])
def test_beta_must_be_finite(beta: object) -> None:
    with pytest.raises(ValueError, match="^beta: must be finite"):
        Config(beta=beta)


def test_beta_must_be_a_real_number() -> None:
    with pytest.raises(ValueError, match="^beta: must be real"):
        Config(beta="1 + sqrt(-1)")
    with pytest.raises(ValueError, match="^beta: cannot read 'hot' as a number: unknown name"):
        Config(beta="hot")


def test_unknown_score() -> None:
    with pytest.raises(ValueError, match="^score: unknown score function 'tanh'"):
        Config(score="tanh")
    assert Config(score="sigmoid", normalisation="none").score == "sigmoid"


@pytest.mark.parametrize("field", ["normalisation", "kv", "output"])
def test_unknown_keyword(field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}: unknown option 'other'"):
        Config(**{field: "other"})


# --- key-value dependence and key output --------------------------------------------


def test_tied_values_follow_key_sharing() -> None:
    config = Config(heads=4, d_k="1/4", kv="tied", share_k="all")
    assert config.share_v == ALL4
    assert Config(heads=4, d_k="1/4", kv="tied", share_k="all", share_v="all") == config
    with pytest.raises(ValueError, match="^share_v: with kv = 'tied'"):
        Config(heads=4, kv="tied", share_k="all", share_v="independent")
    with pytest.raises(ValueError, match="^share_v: with kv = 'correlated'"):
        Config(heads=4, kv="correlated", rho="1/2", share_v="all")


@pytest.mark.parametrize("kv", ["tied", "correlated"])
def test_dependent_values_need_equal_widths(kv: str) -> None:
    with pytest.raises(ValueError, match="^kv: .*d_v == d_k"):
        Config(kv=kv, d_v="1/2")


@pytest.mark.parametrize("rho", [1.5, "-3/2", -1.01])
def test_rho_range(rho: object) -> None:
    with pytest.raises(ValueError, match="^rho: must lie in \\[-1, 1\\]"):
        Config(kv="correlated", rho=rho)


def test_rho_only_with_correlated_values() -> None:
    assert Config(kv="correlated", rho=-1).rho == -1
    with pytest.raises(ValueError, match="^rho: only used with kv = 'correlated'"):
        Config(rho="1/2")
    with pytest.raises(ValueError, match="^rho: must be finite"):
        Config(kv="correlated", rho=float("nan"))


def test_key_output_shapes() -> None:
    with pytest.raises(ValueError, match="^output: 'keys'.*d_v == d_k"):
        Config(output="keys", d_v="1/2")
    with pytest.raises(ValueError, match="^output: 'keys'.*d_out == d"):
        Config(output="keys", d_out="1/2")


def test_name_must_be_text() -> None:
    with pytest.raises(ValueError, match="^name: "):
        Config(name=3)


# --- replace, dict, TOML, load ---------------------------------------------------------


def test_replace_coerces_strings() -> None:
    config = PRESETS["gqa"].replace(heads="8", beta="1.5", share_q="all", n="2000")
    assert config.heads == 8 and config.beta == R(3, 2) and config.size_n == 2000
    assert config.share_k == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert config.share_q == (tuple(range(8)),)
    assert config.d_k == R(1, 8)  # one rule for heads: gqa has H d_k = d, which the new H keeps
    assert PRESETS["gqa"].replace(heads="8", d_k="1/4").d_k == R(1, 4)  # given, d_k stays
    assert PRESETS["mha"].replace(heads=2) == PRESETS["mha"].with_heads(2) and PRESETS["mha"].replace(heads=2).d_v == R(1, 2)
    assert PRESETS["mha"].replace(share_k='[[0, 3], [1, 2]]').share_k == ((0, 3), (1, 2))
    assert PRESETS["tied-kv"].replace(heads=4, d_k="1/4", d_v="1/4", share_k="all").share_v == ALL4
    assert PRESETS["correlated-kv"].replace(rho="-0.25").rho == R(-1, 4)


def test_replace_validates() -> None:
    with pytest.raises(ValueError, match="^rho: must lie"):
        PRESETS["correlated-kv"].replace(rho=2)
    with pytest.raises(ValueError, match="^width: unknown configuration field"):
        PRESETS["mha"].replace(width=3)
    with pytest.raises(ValueError, match="^heads: expected an integer"):
        PRESETS["mha"].replace(heads="four")


def test_to_dict_is_exact_text() -> None:
    data = PRESETS["correlated-kv"].replace(beta="1/3").to_dict()
    assert data["beta"] == "1/3" and data["rho"] == "1/2" and data["d_k"] == "1"
    assert json.loads(json.dumps(data)) == data
    assert "size_n" not in data


def test_from_dict_unknown_field() -> None:
    with pytest.raises(ValueError, match="^colour: unknown configuration field"):
        Config.from_dict({"colour": "blue"})


def test_toml_file_round_trip(tmp_path) -> None:
    config = Config(
        name="odd", heads=6, d="3/2", d_k="1/5", d_out="7/3", beta="sqrt(3)/2",
        share_q=[[0, 5], [1, 2, 3, 4]], share_k={"groups": 3}, kv="correlated", rho="-1/3",
        normalisation="none", score="sigmoid", size_n=30,
    )
    path = tmp_path / "odd.toml"
    path.write_text(config.to_toml())
    assert Config.from_toml(path) == config
    assert Config.from_toml(str(path)) == config
    assert load_config(str(path)) == config


def test_toml_text() -> None:
    text = 'heads = 4\nshare_k = "all"\nshare_v = "all"\nd_k = "1/4"\nname = "mqa"\n'
    assert Config.from_toml(text) == PRESETS["mqa"]


def test_toml_hand_written_sizes() -> None:
    config = Config.from_toml("n = 1000\nd = 500\nheads = 2\n")
    assert config.sizes() == {"n": 1000, "d": 500, "d_k": 250, "d_v": 250, "d_out": 500}


def test_load_config_unknown() -> None:
    with pytest.raises(ValueError, match="^config: 'nonesuch' is neither a preset \\(single-head, mha"):
        load_config("nonesuch")
