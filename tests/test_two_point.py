"""The two-point Dyson equation of a causal layer's masked scores (docs/equations.md §2.11): its generic
pairings against the equations written out by hand, its noise-only case against the profiled law of
docs/equations.md §2.9, and m(w) against Monte Carlo of the causal Gaussian equivalent without c_0, for
one head and for several."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gemhsa_sym as gs
from gemhsa_sym.free.positions.head_orbits import side_blocks
from gemhsa_sym.free.positions.masked_pencil import MaskedPencil, Occurrence, heads_pencil, weightless_pencil
from gemhsa_sym.free.positions.profiled_law import stieltjes
from gemhsa_sym.free.positions.profiles import Quadrature
from gemhsa_sym.free.positions.two_point import TwoPointSystem
from gemhsa_sym.free.positions.two_point_solver import MaskedScoresModel, extrapolated, solve
from gemhsa_sym.laws.causal import causal_model
from gemhsa_sym.layer.config import Config
from gemhsa_sym.sampling.sampler import sample

POINTS = np.array([0.2 + 0.5j, 1 + 1j, 5 + 2j, 20 + 5j])
UNIT = {"d": 1.0, "d_k": 1.0, "d_v": 1.0, "d_out": 1.0}
#: Hermite data of softmax at beta = 1: mu_1^2 = 1, sigma^2 = e - 2.
SOFTMAX = (1.0, math.e - 2)


def by_hand(w: complex, rule: Quadrature, mu1_squared: float, sigma2: float, gamma: float) -> complex:
    """The model without weights, H = sum_k psi_k B_k^2 + chi_k B_k, its Dyson equation reduced by hand to the
    blocks (r, s_k) of the feature side and (p, q_k) per key interval (b_k eliminated: tau(B_k^2 R) =
    (g_{s_k s_k} + 1) / psi_k, tau(B_k R) = g_{s_k r}), iterated with damped half steps."""
    order = np.argsort(rule.nodes)
    t, om = rule.nodes[order], rule.weights[order]
    K = t.size
    dl = np.diff(np.r_[0.0, t])
    ge = np.arange(K)[None, :] >= np.arange(K)[:, None]  # ge[j, k]: node k's mask covers interval j
    delta = np.zeros(K, complex)
    Gd = np.zeros((K + 1, K + 1), complex)
    Gd[0, 0], Gd[1:, 1:] = -1 / w, -np.eye(K)
    for _ in range(20000):
        phi = om / (1 + delta)
        psi, chi = mu1_squared * phi / t**2, sigma2 * phi / t**2
        Dchi = ge @ chi
        grr, grs, gsr, gss = Gd[0, 0], Gd[0, 1:], Gd[1:, 0], Gd[1:, 1:]
        En = np.zeros((K, K + 1, K + 1), complex)
        En[:, 0, 0] = gamma * (grr * Dchi + ge @ grs)
        En[:, 0, 1:] = gamma * grr * psi[None, :] * ge
        En[:, 1:, 0] = gamma * (gsr[None, :] * Dchi[:, None] + (ge[:, None, :] * gss[None, :, :]).sum(-1))
        En[:, 1:, 1:] = gamma * gsr[None, :, None] * (psi[None, None, :] * ge[:, None, :])
        Gn = np.linalg.inv(-np.eye(K + 1)[None] - En)
        wpsi = psi[None, :] * ge
        Ed = np.zeros((K + 1, K + 1), complex)
        Ed[0, 0] = np.sum(dl * (Dchi * Gn[:, 0, 0] + np.einsum("jk,jk->j", wpsi, Gn[:, 1:, 0])))
        Ed[0, 1:] = np.einsum("j,jl->l", dl * Dchi, Gn[:, 0, 1:]) + np.einsum("j,jk,jkl->l", dl, wpsi, Gn[:, 1:, 1:])
        Ed[1:, 0] = ge.T @ (dl * Gn[:, 0, 0])
        Ed[1:, 1:] = ge.T @ (dl[:, None] * Gn[:, 0, 1:])
        Ld = -np.eye(K + 1, dtype=complex)
        Ld[0, 0] = -w
        new = np.linalg.inv(Ld - Ed)
        new_delta = gamma / t**2 * (mu1_squared * (np.diag(new[1:, 1:]) + 1) / psi + sigma2 * new[1:, 0])
        change = max(np.max(np.abs(new - Gd)), np.max(np.abs(new_delta - delta)))
        Gd, delta = (new + Gd) / 2, (new_delta + delta) / 2
        if change < 1e-12:
            return complex(-Gd[0, 0])
    raise AssertionError(f"the equations by hand did not converge at w = {w}")


@pytest.mark.parametrize("gamma", [1.0, 0.5])
def test_generic_pairings_reproduce_the_equations_written_by_hand(gamma: float) -> None:
    rule = Quadrature.graded(1, 3, 3)
    m, _ = solve(TwoPointSystem(weightless_pencil(rule.size, gamma), rule, *SOFTMAX), POINTS)
    hand = np.array([by_hand(w, rule, *SOFTMAX, gamma) for w in POINTS])
    assert np.max(np.abs(m - hand)) < 1e-8


def test_points_near_the_real_axis_stay_on_the_physical_solution() -> None:
    """A cold start near the real axis may land on another solution; the descent from above may not: Im m < 0, and
    the same m whether a point is solved alone or with the others (a batch shrinks as its points converge)."""
    rule = Quadrature.graded(1, 3, 3)
    system = TwoPointSystem(heads_pencil(rule.size, 1, UNIT), rule, *SOFTMAX)
    w = np.geomspace(1e-3, 1e3, 7) * (1 + 1e-6j)
    together, _ = solve(system, w)
    alone = np.array([solve(system, w[i : i + 1])[0][0] for i in (0, 3, 6)])
    assert np.all(together.imag < 0)
    assert np.max(np.abs(together[[0, 3, 6]] - alone) / np.abs(alone)) < 1e-7


def test_without_scores_the_two_point_law_is_the_profiled_noise_law() -> None:
    """mu_1 = 0: the rows given the tokens of sigma Z X W_V W_O / t (two-point equation, exact sums over key
    intervals) against the Dyson equation with the variance profile 1{u <= t} / t^2 (product integration),
    two discretisations of one law: the two-point equation's achieved error bounds its distance to the other."""
    square = Config(mask="causal", score="square")
    profiled = stieltjes(causal_model(square), POINTS, tol=1e-6)
    masked = stieltjes(MaskedScoresModel(lambda K: heads_pencil(K, 1, UNIT), 0.0, 2.0), POINTS, tol=1e-3)
    assert np.all(masked.error <= 1e-3 * (1 + np.abs(masked.m))) and masked.level >= 1
    assert np.all(np.abs(masked.m - profiled.m) <= masked.error)


def test_softmax_causal_model_is_the_two_point_equation_and_refuses_what_it_does_not_cover() -> None:
    model = causal_model(Config(mask="causal", heads=2))
    assert isinstance(model, MaskedScoresModel) and model.scores == pytest.approx(2.0) and model.noise == pytest.approx(math.e - 2)
    assert model.system(0).pencil.nodes == model.quadrature(0).size
    with pytest.raises(NotImplementedError, match="^tokens: the two-point equation.*Haar projection"):
        causal_model(Config(mask="causal", tokens="orthonormal"))


def test_a_pencil_that_does_not_fit_its_sides_is_refused() -> None:
    pencil = weightless_pencil(2, 1.0)
    with pytest.raises(ValueError, match="^occurrences: X in row p"):
        MaskedPencil(pencil.sides, pencil.gaussians, (Occurrence("X", True, "p", "r"),), pencil.ratios, "r", pencil.delta,
                     pencil.links)
    with pytest.raises(ValueError, match="^node: the occurrence"):
        Occurrence("X", True, "s0", "p", masked=True)


def draw_without_c0(config: Config, n: int, seed: np.random.SeedSequence, variant: str = "") -> np.ndarray:
    """Eigenvalues of Y_c^T Y_c of the causal Gaussian equivalent without its uniform part, written out here: tokens
    N(0, 1), W_Q, W_K, W_V N(0, 1 / d) (one per sharing group), W_O N(0, 1 / (H d_v)), A^h = tril(mu_1 Q^h K^hT / sqrt(d_k) + sigma Z^h) / i,
    Y = sum_h A^h X W_V^h W_O^h (the layer's normalisation, docs/model.md §1.1), tied values W_K^h, correlated ones
    rho W_K^h + sqrt(1 - rho^2) W_V^h, key-built outputs sqrt(d / (H d_v)) W_K^hT (docs/model.md §1.8); with a
    residual stream, of R_c^T R_c with R = X / sqrt(n) + alpha Y (docs/extensions.md §8.4); with a token covariance
    Sigma of mean spectrum 1 (so that the Hermite data stay those at beta = 1), X = G Sigma^(1/2). ``variant``
    "fresh": the queries Q^h from an independent token matrix; "copy": the values and outputs read an independent
    copy of W_K^h; "plain": tokens without their covariance."""
    sizes = config.sizes(n)
    d, dk, dv, dout, H = sizes["d"], sizes["d_k"], sizes["d_v"], sizes["d_out"], int(config.heads)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    if config.token_covariance is not None and variant != "plain":  # X = G Sigma^(1/2), Sigma's blocks in turn
        X *= np.repeat([math.sqrt(value) for value, _ in config.token_covariance], [int(w * d) for _, w in config.token_covariance])
    queries = rng.standard_normal((n, d)) if variant == "fresh" else X
    rows = np.arange(1, n + 1, dtype=float)[:, None]
    Y = np.zeros((n, dout))
    drawn: dict[tuple[str, int], np.ndarray] = {}  # W_Q, W_K, W_V by sharing group: the heads of a group read one

    def weight(which: str, head: int, cols: int) -> np.ndarray:
        key = (which, config.group_of(which, head))
        if key not in drawn:
            drawn[key] = rng.normal(0.0, d**-0.5, (d, cols))
        return drawn[key]

    for h in range(H):
        WQ, WK, WV = weight("q", h, dk), weight("k", h, dk), weight("v", h, dv)
        keys = rng.normal(0.0, d**-0.5, (d, dk)) if variant == "copy" else WK
        rho = float(config.rho)
        WV = {"independent": WV, "tied": keys, "correlated": rho * keys + math.sqrt(1 - rho**2) * WV}[config.kv]
        WO = rng.normal(0.0, (H * dv) ** -0.5, (dv, dout)) if config.output == "independent" else math.sqrt(d / (H * dv)) * keys.T
        A = np.tril(SOFTMAX[0] ** 0.5 * (queries @ WQ) @ (X @ WK).T / math.sqrt(dk) + math.sqrt(SOFTMAX[1]) * rng.standard_normal((n, n)))
        Y += (A / rows) @ (X @ WV) @ WO
    if config.residual is not None:
        Y = X / math.sqrt(n) + float(config.residual) * Y
    Y -= Y.mean(axis=0)
    return np.linalg.eigvalsh(Y.T @ Y)


@pytest.mark.parametrize("config", [Config(mask="causal", d_out="1/2"), Config(mask="causal", heads=2),
                                    Config(mask="causal", heads=2, share_q="all")])
def test_two_point_law_against_monte_carlo(config: Config) -> None:
    """m(w) at the 27 nodes of the first level against the mean of 1 / (w - lambda) over two draws at n = 800 of the
    model written out above (measured: 0.0018 for one head with d_out = d / 2, 0.0008 for two heads, 0.0017 for two
    heads sharing W_Q), and the same equation with the masked scores replaced by independent noise of their variance,
    which misses it (measured: 0.024, 0.020 and 0.030): the two-point structure carries the law."""
    model = causal_model(config)
    m, _ = solve(model.system(0), POINTS)
    eigenvalues = np.concatenate([draw_without_c0(config, 800, s) for s in np.random.SeedSequence(11).spawn(2)])
    empirical = np.array([np.mean(1 / (w - eigenvalues)) for w in POINTS])
    assert np.max(np.abs(empirical - m)) < 0.006
    noise = MaskedScoresModel(model.pencil, 0.0, model.scores * float(config.ratios()["d_k"]) + model.noise)
    assert np.max(np.abs(empirical - solve(noise.system(0), POINTS)[0])) > 0.012


def test_causal_attention_matrix_against_monte_carlo() -> None:
    """The causal attention matrix sqrt(n) (A - C), its resolvent on the key positions (docs/equations.md §2.11, the
    attention matrix): m(w) extrapolated over the first two levels against two draws at n = 1000 of the sampler's
    equivalent (measured: 0.0015), and the bidirectional attention matrix's law, which misses it (measured: 0.19)."""
    config = Config(target="attention", mask="causal")
    m = next(value for level, _, value, _ in causal_model(config).levels(POINTS, 0.0) if level == 1)
    eigenvalues = sample(config, 1000, draws=2, seed=0, model="ge_without_uniform", progress=False).eigenvalues
    empirical = np.array([np.mean(1 / (w - eigenvalues)) for w in POINTS])
    assert np.max(np.abs(empirical - m)) < 0.004
    assert np.max(np.abs(empirical - gs.law("attention-matrix").stieltjes(POINTS))) > 0.1


#: A token covariance of values 1/4 and 7/4 (weights 1/2): mean spectrum 1.
SPREAD = {"values": ["1/4", "7/4"], "weights": ["1/2", "1/2"]}
RULES = [  # a configuration, the variant of its model that must miss the law, and by how much at least
    (Config(mask="causal", residual=1), "fresh", 0.02),
    (Config(mask="causal", heads=2, residual=2), "fresh", 0.02),
    (Config(mask="causal", kv="tied"), "", 0.0),
    (Config(mask="causal", heads=2, output="keys", share_k="all"), "copy", 0.05),
    (Config(mask="causal", tokens="covariance", token_covariance=SPREAD), "plain", 0.03),
    pytest.param(Config(mask="causal", heads=2, d_k="1/2", d_v="1/2", share_k="all", share_v="all", tokens="covariance",
                        token_covariance=SPREAD), "plain", 0.02, marks=pytest.mark.slow),
    pytest.param(Config(mask="causal", kv="correlated", rho="1/2"), "", 0.0, marks=pytest.mark.slow),
    pytest.param(Config(mask="causal", heads=2, kv="tied", d_k="1/2", d_v="1/2"), "copy", 0.012, marks=pytest.mark.slow),
    pytest.param(Config(mask="causal", heads=2, kv="correlated", rho="-1/2", share_k="all", share_v="all", residual=1), "",
                 0.0, marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("config", "variant", "gap"), RULES)
def test_values_outputs_and_residual_stream_against_monte_carlo(config: Config, variant: str, gap: float) -> None:
    """Tied, correlated and key-built values and outputs (W_K occurring in V^h or W_O^h too), the residual stream
    X + alpha Y, whose row t is x_t (I + g_t A_t) plus the noise, one token as query and residual, and a token
    covariance, d split into its blocks (docs/equations.md §2.11). m(w) at the 27 nodes of the first level against two
    draws at n = 800 of the model written out above (measured: residual 0.0019 and 0.0013, tied 0.0014, key-built
    MQA 0.0010, covariance 0.0015, correlated 0.0023, tied with two heads 0.0024, correlated MQA with a residual
    stream 0.0023, covariance MQA 0.0030); where named, a variant that misses it: queries from independent tokens,
    whose rows lose the cross term (0.038, 0.034), values and outputs that read an independent copy of W_K (0.19,
    0.020), or tokens without their covariance (0.051, 0.042)."""
    m, _ = solve(causal_model(config).system(0), POINTS)

    def miss(name: str) -> float:
        eigenvalues = np.concatenate([draw_without_c0(config, 800, s, name) for s in np.random.SeedSequence(11).spawn(2)])
        return float(np.max(np.abs(np.array([np.mean(1 / (w - eigenvalues)) for w in POINTS]) - m)))

    assert miss("") < 0.006
    assert not variant or miss(variant) > gap


def test_pattern_inverse_equals_the_dense_inverse() -> None:
    """Components, an index outside the pattern, and a Schur complement on an independent set: the inverse of
    -I plus entries on the pattern, against numpy's, for a stack of matrices."""
    from gemhsa_sym.free.positions.pattern_inverse import PatternInverse

    rng = np.random.default_rng(4)
    size = 30
    pattern = np.zeros((size, size), dtype=bool)
    hub = np.arange(0, 6)  # a star: 6 hubs linked to 20 leaves, which are independent
    pattern[np.ix_(hub, np.arange(6, 26))] = pattern[np.ix_(np.arange(6, 26), hub)] = True
    pattern[np.ix_(hub, hub)] = True
    pattern[26:29, 26:29] = True  # a dense component; index 29 lies outside the pattern
    inverse = PatternInverse(pattern)
    (C, R), dense = sorted(inverse.parts, key=lambda part: -part[1].size)
    assert set(R) == set(range(6, 26)) and set(C) == set(hub) and dense[1].size == 0 and list(inverse.isolated) == [29]
    M = -np.eye(size) + np.where(pattern, rng.standard_normal((3, size, size)) + 1j * rng.standard_normal((3, size, size)), 0)
    assert np.max(np.abs(inverse(M) - np.linalg.inv(M))) < 1e-10


def test_pattern_inverse_of_wanted_entries_skips_the_rest() -> None:
    """Only G_CR and some rows of G_RC wanted: those entries equal numpy's inverse, G_RR is not formed."""
    from gemhsa_sym.free.positions.pattern_inverse import PatternInverse

    rng = np.random.default_rng(5)
    size, hub, leaves = 20, np.arange(4), np.arange(4, 20)
    pattern = np.zeros((size, size), dtype=bool)
    pattern[np.ix_(hub, leaves)] = pattern[np.ix_(leaves, hub)] = pattern[np.ix_(hub, hub)] = True
    wanted = np.zeros_like(pattern)
    wanted[np.ix_(hub, leaves)] = True
    wanted[np.ix_(leaves[:3], hub)] = True
    inverse = PatternInverse(pattern, wanted)
    M = -np.eye(size) + np.where(pattern, rng.standard_normal((2, size, size)) + 1j * rng.standard_normal((2, size, size)), 0)
    G = inverse(M)
    assert np.max(np.abs(np.where(wanted, G - np.linalg.inv(M), 0))) < 1e-10
    assert np.all(G[:, leaves[3]:, leaves] == 0)


def test_key_side_sums_match_the_inverses_of_every_interval() -> None:
    """Pairings with random values, coefficients, columns and last intervals: the Woodbury chain's reads against
    sum_{j <= J} len_j (Lambda - E_j)^-1[a, b], every E_j written out and inverted densely."""
    from gemhsa_sym.free.positions.key_side import KeySide

    rng = np.random.default_rng(6)
    size, K, count, points = 9, 5, 30, 3
    lengths = rng.uniform(0.1, 1.0, K)
    writes = np.column_stack([np.arange(count), rng.integers(0, size, count), rng.integers(0, 3, count) * 3,
                              rng.integers(0, K, count)])
    reads = np.column_stack([rng.integers(0, size, 12), rng.integers(0, size, 12), rng.integers(0, K, 12)])
    values = 0.1 * (rng.standard_normal((count, points)) + 1j * rng.standard_normal((count, points)))
    lam = np.repeat(-np.eye(size, dtype=complex)[None], points, 0)
    lam[:, 0, 0] = -(0.5 + 1j) * np.arange(1, points + 1)
    coefficients = rng.uniform(-2.0, 2.0, count)
    got = KeySide(size, lengths, writes, reads, count, coefficients)(lam, values)
    G = []
    for j in range(K):
        E = np.zeros((points, size, size), dtype=complex)
        for (v, a, b, J), c in zip(writes, coefficients):
            if J >= j:
                E[:, a, b] += c * values[v]
        G.append(np.linalg.inv(lam - E))
    want = np.array([[sum(lengths[j] * G[j][p, a, b] for j in range(J + 1)) for a, b, J in reads] for p in range(points)])
    assert np.max(np.abs(got - want)) < 1e-12 * np.max(np.abs(want))


@pytest.mark.parametrize("heads", [2, 3, 4])
def test_two_heads_standing_for_all_equal_every_head_written_out(heads: int) -> None:
    """The reduced pencil (two labelled heads, orbits counted, sides inverted in their blocks; docs/solving.md
    §3.14) against the pencil with every head written out, H d_k = d: the same m to the iteration's tolerance."""
    rule = Quadrature.graded(1, 3, 3)
    ratios = {"d": 1.0, "d_k": 1 / heads, "d_v": 1 / heads, "d_out": 0.5}
    full = solve(TwoPointSystem(heads_pencil(rule.size, heads, ratios, reduced=False), rule, 4.0, math.e - 2), POINTS, 1e-13)[0]
    reduced = solve(TwoPointSystem(heads_pencil(rule.size, heads, ratios), rule, 4.0, math.e - 2), POINTS, 1e-13)[0]
    assert np.max(np.abs(full - reduced)) < 1e-11


@pytest.mark.parametrize("heads", [2, 3])
def test_shared_keys_and_values_leave_the_law_unchanged_and_shared_queries_do_not(heads: int) -> None:
    """Every head written out, sharing W_K and W_V (multi-query), W_K alone, or W_K and W_V in groups of two, against
    the heads' own projections: the same m to the iteration's tolerance, since the pairings of a shared W_K or W_V
    across heads read blocks that the symmetry (W_Q^h, W_O^h) -> -(W_Q^h, W_O^h) of one head turns into their
    negatives (docs/equations.md §2.11). Sharing W_Q breaks that symmetry and changes m (by 0.023 at two heads and
    0.041 at three, at w = 0.2 + 0.5i)."""
    rule = Quadrature.graded(1, 3, 3)
    ratios = {"d": 1.0, "d_k": 1 / heads, "d_v": 1 / heads, "d_out": 0.5}
    own, pairs, one = tuple(range(heads)), tuple(h // 2 for h in range(heads)), (0,) * heads
    alone = solve(TwoPointSystem(heads_pencil(rule.size, heads, ratios), rule, 4.0, math.e - 2), POINTS, 1e-13)[0]
    for groups in ({"q": own, "k": one, "v": one}, {"q": own, "k": one, "v": own}, {"q": own, "k": pairs, "v": pairs}):
        pencil = heads_pencil(rule.size, heads, ratios, reduced=False, groups=groups)
        assert np.max(np.abs(solve(TwoPointSystem(pencil, rule, 4.0, math.e - 2), POINTS, 1e-13)[0] - alone)) < 1e-10
    pencil = heads_pencil(rule.size, heads, ratios, reduced=False, groups={"q": one, "k": own, "v": own})
    assert np.max(np.abs(solve(TwoPointSystem(pencil, rule, 4.0, math.e - 2), POINTS, 1e-13)[0] - alone)) > 0.01
    with pytest.raises(ValueError, match="^reduced: heads that share a projection"):
        heads_pencil(rule.size, heads, ratios, groups={"q": one, "k": own, "v": own})
    gqa = causal_model(Config(mask="causal", heads=heads, share_k="all", share_v="all"))
    assert gqa.system(0).pencil.exchangeable == heads  # solved as the heads' own projections, two standing for all
    assert causal_model(Config(mask="causal", heads=heads, share_q="all")).system(0).pencil.exchangeable == 1


def test_side_blocks_invert_a_matrix_symmetric_in_its_heads() -> None:
    """A random matrix over O shared variables and H copies of T, unchanged by permuting the copies: its entries on
    two copies taken into the blocks, inverted there and read back, against numpy's inverse of the whole matrix."""
    rng = np.random.default_rng(8)
    o, t, H = 2, 3, 4

    def random(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    MOO, MOT, MTO, A, B = random(o, o), random(o, t), random(t, o), random(t, t), random(t, t)
    full = np.block([[MOO, np.tile(MOT, H)], [np.tile(MTO, (H, 1)), np.kron(np.eye(H), A - B) + np.kron(np.ones((H, H)), B)]])
    labels = [(None, None)] * o + [(0, f"x{i}") for i in range(t)] + [(1, f"x{i}") for i in range(t)]
    two = full[: o + 2 * t, : o + 2 * t]  # the shared variables and the first two copies
    blocks = side_blocks(labels, H)
    back = sum(block.back @ np.linalg.inv((block.into @ two.reshape(-1)).reshape(block.size, block.size)).reshape(-1)
               for block in blocks)
    assert len(blocks) == 2 and [b.size for b in blocks] == [o + t, t]
    assert np.max(np.abs(back.reshape(two.shape) - np.linalg.inv(full)[: o + 2 * t, : o + 2 * t])) < 1e-12


def test_a_pencil_whose_heads_differ_is_refused() -> None:
    rule_size, ratios = 2, {"d": 1.0, "d_k": 0.5, "d_v": 0.5, "d_out": 1.0}
    pencil = heads_pencil(rule_size, 2, ratios)
    with pytest.raises(ValueError, match="^labels: on side d the two heads"):
        MaskedPencil(pencil.sides, pencil.gaussians, pencil.occurrences, pencil.ratios, "r", pencil.delta, pencil.links,
                     2, tuple(label for label in pencil.labels if label[0] != "b1"))
    with pytest.raises(ValueError, match="^labels: X in row p0, column v0 joins two heads"):
        MaskedPencil(pencil.sides, pencil.gaussians, pencil.occurrences, pencil.ratios, "r", pencil.delta, pencil.links,
                     2, tuple((name, 1 - h if name in ("p0", "p1") else h, t) for name, h, t in pencil.labels))


def test_a_point_whose_first_height_lands_off_the_physical_solution_is_reached_along_its_ray() -> None:
    """Four heads, w = 4.2e-4 (1 + 1e-4 i): iterated from Lambda^-1 at Im w = |w| the 27-node equation converges to a
    solution with Im m > 0 (m = 112 + 57i); the descent from |w| >= 1 along the ray reaches the physical one, which
    the 36-node equation, solved the same way, meets to its discretisation error."""
    model = causal_model(Config(mask="causal", heads=4, d_k="1/4", d_v="1/4"))
    w = np.array([4.21697e-4 * (1 + 1e-4j)])
    coarse, finer = (solve(model.system(level), w)[0][0] for level in (0, 1))
    assert coarse.imag < 0 and finer.imag < 0
    assert abs(coarse - finer) < 0.005 * abs(finer)


def test_a_point_is_solved_alike_in_any_batch() -> None:
    """A point's m does not depend on the points solved beside it (each keeps the state of its first step below the
    tolerance, docs/solving.md §3.13): one head at 27 nodes, a batch from below the bulk to far in the tail against each
    point alone, and every m physical (Im m < 0)."""
    system = causal_model(Config(mask="causal")).system(0)
    w = np.array([1 + 1j, 0.05 + 5e-6j, 9646.62 + 0.964662j])
    batch = solve(system, w)[0]
    alone = np.array([solve(system, w[i:i + 1])[0][0] for i in range(w.size)])
    assert np.all(batch.imag < 0)
    assert np.max(np.abs(batch - alone) / (1 + np.abs(alone))) < 1e-7


def test_the_levels_extrapolate_over_the_order_and_estimate_their_error_by_an_embedded_pair(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """extrapolated (docs/solving.md §3.13) is exact on m + a p^-2 + b p^-3 from three orders and on m + a p^-2 from two,
    and with a count takes only the last orders;
    the levels of the single head yield it with the change from the extrapolation of one order fewer as the error,
    which at w = 0.2 + 0.5i (the limit 0.16945 - 1.17175i, extrapolated from orders 4, 6, 8) bounds the true error;
    after a level, a progress line estimates the time left at most."""
    from gemhsa_sym.progress import configure

    m, a, b = 0.25 - 0.5j, 3.0 + 1j, -2.0
    for orders in ([3, 4, 6], [4, 6, 8], [2, 5, 7]):
        values = [np.array([m + a / p**2 + b / p**3]) for p in orders]
        assert abs(extrapolated(orders, values)[0] - m) < 1e-12
    assert abs(extrapolated([3, 4], [np.array([m + a / p**2]) for p in (3, 4)])[0] - m) < 1e-12
    # the cruder value of the pair at the fourth level: m + a p^-2 over its last two orders only
    values = [np.array([m + a / p**2 + b / p**3]) for p in (3, 4, 6, 8)]
    assert abs(extrapolated([3, 4, 6, 8], values, 2)[0] - (64 * values[3][0] - 36 * values[2][0]) / 28) < 1e-12
    monkeypatch.setenv("GEMHSA_SYM_PROGRESS", "lines")
    configure(False)
    try:
        levels = causal_model(Config(mask="causal")).levels(np.array([0.2 + 0.5j]), 0.0)
        _, _, first, none = next(levels)
        _, nodes, second, error = levels.send(np.array([True]))
        levels.close()
    finally:
        configure(True)
    notes = [line for line in capsys.readouterr().err.splitlines() if "s more" in line]
    assert len(notes) == 1 and notes[0].endswith("s more, 1 point through 4 more levels at the rate so far"), notes
    assert none is None and nodes == 36
    assert abs(second[0] - (0.16945 - 1.17175j)) < error[0] < abs(second[0] - first[0])  # 1.9e-4, 1.0e-3, 1.8e-3
