"""The logistic-regression model, its predictive scores and the sample-based distances."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

from pmd import GaussianPosterior, ModelError, ParticlePosterior
from pmd.models.logistic import BayesianLogisticRegression, add_bias, labelled, log_sigmoid, predictive_scores
from pmd.sample_metrics import SampleReference, energy_distance, wasserstein2_1d


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    data = labelled(rng.normal(size=(40, 3)), np.where(rng.random(40) < 0.5, 1, -1))
    return BayesianLogisticRegression(4, prior_std=2.0), data, rng.normal(size=(7, 4))


def test_likelihood_and_prior_match_the_formula(problem):
    blr, data, ws = problem
    model = blr.model()
    x, y = data["x"].astype(np.float64), data["y"].astype(np.float64)
    direct = -np.log1p(np.exp(-y[None, :] * (ws @ x.T)))  # log 1/(1+exp(-y wᵀx)) (H.2)
    ours = np.asarray(model.batch_log_likelihood(jnp.asarray(ws, jnp.float32), data))
    np.testing.assert_allclose(ours, direct, rtol=1e-5, atol=1e-5)
    prior = -0.5 * np.sum(ws**2, axis=1) / 4.0 - 4 * math.log(2.0) - 2 * math.log(2 * math.pi)
    np.testing.assert_allclose(np.asarray(model.log_prior_many(jnp.asarray(ws, jnp.float32))), prior, rtol=1e-5)


@pytest.mark.slow
def test_log_sigmoid_matches_logaddexp_with_its_first_and_second_derivatives():
    """The fast ``log σ`` is ``-logaddexp(0, -z)`` in value, slope ``σ(-z)`` and curvature ``-σ(z)σ(-z)``
    from ``-inf`` to ``+inf``, in float32 (the tolerance: a few float32 ulps of values of order 1;
    the margins ±30 and beyond test the tails, where a naive ``log(1 + exp(-z))`` overflows)."""
    z = jnp.asarray([-jnp.inf, -1e4, -80.0, -30.0, -5.0, -1.0, -1e-3, 0.0, 1e-3, 1.0, 5.0, 30.0, 80.0, 1e4, jnp.inf],
                    jnp.float32)

    def reference(v):
        return -jnp.logaddexp(0.0, -v)

    np.testing.assert_allclose(np.asarray(log_sigmoid(z)), np.asarray(reference(z)), rtol=1e-6, atol=1e-6)
    slope = jax.vmap(jax.grad(log_sigmoid))(z)
    np.testing.assert_allclose(np.asarray(slope), np.asarray(jax.vmap(jax.grad(reference))(z)), rtol=1e-6, atol=1e-7)
    curvature = jax.vmap(jax.grad(jax.grad(log_sigmoid)))(z)
    exact = -jax.nn.sigmoid(z) * jax.nn.sigmoid(-z)
    np.testing.assert_allclose(np.asarray(curvature), np.asarray(exact), rtol=1e-5, atol=1e-7)
    assert float(curvature[7]) == pytest.approx(-0.25)
    # the likelihood's gradient and Hessian in w go through it: σ(-m) y x and -σ(m)σ(-m) x xᵀ, m = y wᵀx
    model = BayesianLogisticRegression(2).model()
    x, y = np.asarray([0.5, -2.0]), -1.0
    datum = {"x": jnp.asarray(x), "y": jnp.asarray(y)}
    w = jnp.asarray([0.3, 0.7])
    s = 1.0 / (1.0 + math.exp(y * float(x @ np.asarray(w))))  # σ(-m)
    np.testing.assert_allclose(np.asarray(jax.grad(model.log_likelihood)(w, datum)), s * y * x, rtol=1e-6)
    hessian = jax.hessian(model.log_likelihood)(w, datum)
    np.testing.assert_allclose(np.asarray(hessian), -s * (1 - s) * np.outer(x, x), rtol=1e-5)


def test_likelihood_is_stable_for_large_margins():
    model = BayesianLogisticRegression(1).model()
    datum = {"x": jnp.ones(1), "y": jnp.asarray(1.0)}
    assert float(model.log_likelihood(jnp.asarray([-200.0]), datum)) == pytest.approx(-200.0)
    assert float(model.log_likelihood(jnp.asarray([200.0]), datum)) == 0.0


def test_bias_and_label_checks():
    assert add_bias(np.zeros((3, 2)))[:, -1].tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ModelError, match="-1 or \\+1"):
        labelled(np.zeros((3, 2)), np.array([0, 1, 1]))
    with pytest.raises(ModelError, match="matching the 3 input rows"):
        labelled(np.zeros((3, 2)), np.array([1, 1]))


def test_check_model_rejects_another_model(problem):
    blr, _, _ = problem
    blr.check_model(blr.model())
    with pytest.raises(ModelError, match="not those of"):
        BayesianLogisticRegression(4, prior_std=1.0).check_model(blr.model())
    with pytest.raises(ModelError, match="dim=4"):
        BayesianLogisticRegression(5).check_model(blr.model())


def test_predictive_scores_match_numpy(problem):
    _, data, ws = problem
    log_w = np.log(np.arange(1.0, 8.0))
    post = ParticlePosterior(jnp.asarray(ws, jnp.float32), jnp.asarray(log_w - np.log(np.exp(log_w).sum()), jnp.float32))
    x, y = data["x"].astype(np.float64), data["y"].astype(np.float64)
    prob = (np.exp(log_w) / np.exp(log_w).sum()) @ (1.0 / (1.0 + np.exp(-y[None, :] * (ws @ x.T))))
    out = predictive_scores(post, data, jax.random.key(0))
    assert out["test_error"] == pytest.approx(np.mean(prob <= 0.5))
    assert out["test_loglik"] == pytest.approx(np.mean(np.log(prob)), rel=1e-5)


def test_gaussian_posterior_is_scored_by_draws(problem):
    _, data, _ = problem
    post = GaussianPosterior(jnp.zeros(4), 1e-6 * jnp.eye(4))  # w ≈ 0: p̂ = ½ everywhere, a tie = error
    out = predictive_scores(post, data, jax.random.key(0), 100)
    assert out["test_error"] == 1.0
    assert out["test_loglik"] == pytest.approx(math.log(0.5), abs=1e-5)


def test_a_broken_posterior_scores_nan_not_zero_error(problem):
    _, data, ws = problem
    samples = np.array(ws, np.float32)
    samples[0] = np.nan
    out = predictive_scores(ParticlePosterior.equally_weighted(jnp.asarray(samples)), data, jax.random.key(0))
    assert math.isnan(out["test_error"]) and math.isnan(out["test_loglik"])


def _e_abs_normal(mu, sd):
    """E|Z| for Z ~ N(mu, sd²)."""
    return sd * math.sqrt(2 / math.pi) * math.exp(-mu**2 / (2 * sd**2)) + mu * (1 - 2 * norm.cdf(-mu / sd))


def test_energy_distance_of_shifted_normals():
    """1-D: the energy distance of N(0,1) and N(δ,1) is 2E|X-Y| - 2E|X-X'| with X-Y ~ N(-δ, 2).

    The V-statistic's standard deviation at n = 2000 per side is below 0.01 (measured over 20
    seeds: 0.004); tolerance 0.03, and a V-statistic bias of E|X-X'|/n ≈ 6e-4."""
    delta, n = 1.0, 2000
    rng = np.random.default_rng(1)
    x, y = rng.normal(0, 1, (n, 1)), rng.normal(delta, 1, (n, 1))
    exact = 2 * _e_abs_normal(delta, math.sqrt(2)) - 2 * _e_abs_normal(0.0, math.sqrt(2))
    zeros = jnp.zeros(n)
    got = float(energy_distance(jnp.asarray(x, jnp.float32), zeros, jnp.asarray(y, jnp.float32), zeros))
    assert got == pytest.approx(exact, abs=0.03)


@pytest.mark.slow
def test_w2_1d_equal_weights_and_replicated_weights():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=50), rng.normal(1.0, 2.0, size=50)
    uniform = jnp.full(50, 1 / 50)
    exact = np.mean((np.sort(a) - np.sort(b)) ** 2)  # equal sizes, equal weights: sorted matching
    assert float(wasserstein2_1d(jnp.asarray(a), uniform, jnp.asarray(b), uniform)) == pytest.approx(exact, rel=1e-5)
    # weight 2 on each point of a is the same distribution as a listed twice
    w2 = float(wasserstein2_1d(jnp.asarray(a), jnp.asarray(np.full(50, 2.0) / 100), jnp.asarray(b), uniform))
    twice = float(wasserstein2_1d(jnp.asarray(np.repeat(a, 2)), jnp.full(100, 1 / 100), jnp.asarray(b), uniform))
    assert w2 == pytest.approx(twice, rel=1e-5)
    # n points against 2n, equal weights: every other cumulative weight of b ties one of a, and the
    # quantile matching pairs each sorted a twice with the sorted b
    c = rng.normal(size=100)
    exact = np.mean((np.repeat(np.sort(a), 2) - np.sort(c)) ** 2)
    assert float(wasserstein2_1d(jnp.asarray(a), uniform, jnp.asarray(c), jnp.full(100, 1 / 100))) == pytest.approx(
        exact, rel=1e-5)


@pytest.mark.slow
def test_sliced_w2_projects_every_sample_on_the_references_own_directions():
    """The reference's sliced distance is the mean of :func:`wasserstein2_1d` over its fixed
    directions (its sorted projections computed once), the same directions at every call."""
    rng = np.random.default_rng(4)
    draws, sample = rng.normal(size=(3000, 4)), rng.normal(0.3, 1.5, (500, 4))
    log_w = rng.normal(size=500)
    ref = SampleReference(draws, num_projections=16)
    z, r = (sample - ref.mean) / ref.std, (draws - ref.mean) / ref.std
    w = np.exp(log_w - log_w.max()) / np.exp(log_w - log_w.max()).sum()
    direct = np.sqrt(np.mean([float(wasserstein2_1d(jnp.asarray(z @ u), jnp.asarray(w), jnp.asarray(r @ u),
                                                    jnp.full(3000, 1 / 3000))) for u in np.asarray(ref.directions)]))
    assert ref.score(sample, log_w)["sliced_w2"] == pytest.approx(direct, rel=1e-4)
    assert ref.score(sample, log_w)["sliced_w2"] == ref.score(sample, log_w)["sliced_w2"]


@pytest.mark.slow
def test_reference_scores_itself_as_zero_and_a_shift_by_its_size():
    rng = np.random.default_rng(3)
    draws = rng.normal([1.0, -2.0, 0.5], [0.1, 1.0, 3.0], (2000, 3))
    ref = SampleReference(draws)
    own = ref.score(draws, np.zeros(2000))
    assert own["energy"] == pytest.approx(0.0, abs=1e-4)
    assert own["mean_error"] == pytest.approx(0.0, abs=1e-5) and own["log_std_ratio"] == pytest.approx(0.0, abs=1e-5)
    shifted = ref.score(draws + 0.5 * draws.std(axis=0), np.zeros(2000))
    assert shifted["mean_error"] == pytest.approx(0.5, rel=1e-4)  # half a reference sd in every coordinate
    narrow = ref.score(draws.mean(axis=0) + 0.5 * (draws - draws.mean(axis=0)), np.zeros(2000))
    assert narrow["log_std_ratio"] == pytest.approx(math.log(0.5), rel=1e-4)
    # a pure shift by c: each projection's W2² is (c·u)², with E_u (c·u)² = ‖c‖²/d for uniform unit u,
    # so sliced W2 = ‖c‖/√d = ½ here (c = ½ per coordinate). Over 128 projections (c·u)²/‖c‖² = cos² has
    # sd √(2(d-1)/(d²(d+2))) = 0.30 about its mean 1/3: 8% relative on W2², 4% on W2; tolerance 10%.
    assert shifted["sliced_w2"] == pytest.approx(0.5, rel=0.1)
    with pytest.raises(ValueError, match="must be \\(n, 3\\)"):
        ref.score(draws[:, :2], np.zeros(2000))
