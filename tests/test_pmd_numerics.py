"""Numerical safety: with N = 10⁶ a step multiplies by the batch likelihood to the power Nγ."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmd import PMD, run
from pmd.models.conjugate import ConjugateGaussian

N = 10**6


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["robust", "paper"])
@pytest.mark.parametrize("strategy", ["particles", "kde", "hybrid"])
def test_weights_stay_finite_for_a_million_points(strategy, variant):
    prob = ConjugateGaussian(dim=2)
    _, x = prob.simulate(seed=0, n=400)  # a few batches of a data set of size N
    algo = PMD(prob.model(), data_size=N, num_particles=500, variant=variant, strategy=strategy, kde_steps=2)
    state = algo.init(jax.random.key(0))
    batch_loglik = N * np.mean(np.asarray(prob.model().batch_log_likelihood(state.positions, jnp.asarray(x[:100]))), 1)
    assert np.ptp(batch_loglik) > 1e4, "the test must reach the regime where Nγ log p spans thousands"
    for t in range(4):
        state, info = algo.step(jax.random.key(t), state, jnp.asarray(x[100 * t:100 * (t + 1)]))
        log_w = np.asarray(state.log_weights)
        assert not np.any(np.isnan(log_w)) and not np.any(log_w == np.inf)
        assert np.isfinite(log_w).any()
        np.testing.assert_allclose(np.logaddexp.reduce(log_w[np.isfinite(log_w)].astype(np.float64)), 0.0, atol=1e-5)
        if variant == "paper":
            assert np.isfinite(float(info["gamma"])) and float(info["gamma"]) > 0
        else:  # the streaming start: every batch's likelihood taken in full, in capped sub-steps
            assert float(info["exponent"]) == pytest.approx(100 * (t + 1) / N)
            assert not bool(info["uncapped"])
            if strategy != "particles":  # each sub-step keeps half the ESS of a set redrawn below half
                assert float(info["ess"]) >= 0.5 * 0.5 * 500 * 0.98
    post = algo.posterior(state)
    assert np.all(np.isfinite(np.asarray(post.mean())))
    assert np.all(np.isfinite(np.asarray(post.cov())))


@pytest.mark.slow
def test_ess_cap_keeps_the_floor():
    """Paper variant: a KDE step with γ = 1 and N = 10⁶ would put every weight on one particle; the cap keeps the
    conditional ESS at the floor and records the γ it used."""
    prob = ConjugateGaussian(dim=2)
    _, x = prob.simulate(seed=1, n=100)
    algo = PMD(prob.model(), data_size=N, num_particles=1000, variant="paper", strategy="kde", ess_floor=0.5)
    state, info = algo.step(jax.random.key(0), algo.init(jax.random.key(1)), jnp.asarray(x))
    assert float(info["gamma_scheduled"]) == 1.0
    assert 0 < float(info["gamma"]) < 1e-3
    # the bisection finds the largest γ with ESS ≥ 0.5 m, to its tolerance
    assert 0.49 * 1000 <= float(info["ess"]) <= 0.55 * 1000


@pytest.mark.parametrize("offset", [1e2, 1e3, 3e3])
def test_kde_density_does_not_depend_on_where_the_cloud_sits(offset):
    """A narrow cloud far from the origin (|mean|/sd = offset) has the KDE log-density of the same
    cloud at the origin, to float32 accuracy of the centred values (the uncentred
    ``‖a‖² + ‖b‖² - 2a·b`` is off by 0.012 / 1.4 / 6.0 nats at 100 / 1,000 / 3,000)."""
    from pmd.kde import kde_log_density

    rng = np.random.default_rng(0)
    centres = rng.standard_normal((300, 5)).astype(np.float32)
    points = rng.standard_normal((200, 5)).astype(np.float32)
    chol = 0.3 * jnp.eye(5)
    log_w = jnp.asarray(rng.standard_normal(300), jnp.float32)
    at_origin = np.asarray(kde_log_density(jnp.asarray(points), jnp.asarray(centres), log_w, chol))
    far = np.asarray(kde_log_density(jnp.asarray(points + offset), jnp.asarray(centres + offset), log_w, chol))
    # measured: 1e-4 / 7e-4 / 2.2e-3 nats (float32 rounds the shifted inputs by offset × 6e-8);
    # without the centring 0.07 / 5.8 / 26
    np.testing.assert_allclose(far, at_origin, atol=5e-3)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["robust", "paper"])
def test_particles_of_zero_likelihood_get_zero_weight(variant):
    """A likelihood that is zero on half the prior (``-inf`` for θ ≤ 0, as posteriordb's ARMA
    overflows to in float32): those particles end with zero weight and nothing is NaN (before the
    fix, ``0 · (-inf)`` in the robust variant's step-size search made every weight NaN; the paper
    variant's hybrid passed without it and is checked so that it stays that way)."""
    from pmd import Model
    from pmd.model import gaussian_log_density

    model = Model(
        dim=1,
        log_prior=lambda th: gaussian_log_density(th, 0.0, 1.0),
        log_likelihood=lambda th, x: jnp.where(th[0] > 0, gaussian_log_density(x, th, 1.0), -jnp.inf),
        sample_prior=lambda key, n: jax.random.normal(key, (n, 1)),
        name="half-support",
    )
    x = np.full((40, 1), 0.5, np.float32)
    algo = PMD(model, data_size=40, num_particles=400, variant=variant)
    result = run(algo, x, jax.random.key(0), batch_size=10, num_passes=1)
    positions, log_w = result.posterior.weighted_samples()
    positions, log_w = np.asarray(positions)[:, 0], np.asarray(log_w)
    assert not np.isnan(log_w).any()
    assert np.all(np.isneginf(log_w[positions <= 0]))
    assert np.isfinite(log_w[positions > 0]).any()


def test_kernel_factor_keeps_a_narrow_coordinate_beside_a_wide_one():
    """posteriordb's kilpisjarvi: an intercept (sd 30) and a slope (sd 0.015) at correlation −0.9999.
    ``stable_cholesky``'s jitter is relative to each coordinate's variance, so in float32 the factor's
    slope-given-intercept sd ``L[1,1]`` is the exact ``sd_β √(1−ρ²)`` inflated only by the jitter:
    ``√((1−ρ²) + ε(1+ρ²)) / √(1−ρ²) = 1.048`` at ε = 1e-5 (tolerance 1% beyond that for float32,
    whose error on a correlation matrix of condition 2·10⁴ is about 1e-3). A jitter sized to the
    trace (ε·tr/d·I, the earlier rule) makes it 316 times too wide (measured)."""
    from pmd.bandwidth import stable_cholesky

    sd, rho, eps = np.array([30.0, 0.015]), -0.9999, 1e-5
    cov = np.outer(sd, sd) * np.array([[1.0, rho], [rho, 1.0]])
    chol = np.asarray(stable_cholesky(jnp.asarray(cov, jnp.float32), eps), np.float64)
    exact = sd[1] * np.sqrt(1 - rho**2)
    inflation = np.sqrt((1 - rho**2) + eps * (1 + rho**2)) / np.sqrt(1 - rho**2)
    assert chol[1, 1] / exact == pytest.approx(inflation, rel=0.01)
    np.testing.assert_allclose(chol[:, 0], cov[:, 0] / sd[0], rtol=1e-5)  # the first column: cov/sd
