"""The paper-scale reference sampler (workflow.reference.sample_nuts_laplace) against posteriors known
exactly: a Gaussian (the Laplace approximation is exact) and a 2-d logistic regression on ten rows
under a broad prior, integrated on a grid, where the Laplace approximation is 0.45 sd off and the
chain must not be."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from logistic_helpers import GridLogistic

from pmd_bench.workflow.experiments.logistic import reference_log_density
from pmd_bench.workflow.reference import ConvergenceError, check_convergence, laplace_approximation, sample_nuts_laplace


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def test_laplace_is_exact_on_a_correlated_gaussian():
    """Newton from far away lands on the mean of a Gaussian with correlation -0.99999 (kilpisjarvi's
    ridge) and returns its covariance to round-off."""
    mean = np.array([30.0, -0.015, 2.0])
    sd = np.array([30.0, 0.015, 1.0])
    corr = np.array([[1.0, -0.99999, 0.0], [-0.99999, 1.0, 0.0], [0.0, 0.0, 1.0]])
    cov = corr * np.outer(sd, sd)
    precision = jnp.asarray(np.linalg.inv(cov))
    mode, got = laplace_approximation(lambda t: -0.5 * (t - mean) @ precision @ (t - mean), np.zeros(3))
    np.testing.assert_allclose(mode, mean, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got, cov, rtol=1e-5, atol=1e-12)


def test_laplace_refuses_a_density_without_a_mode():
    """A log density that is convex in a coordinate has no Laplace approximation: the error says so."""
    with pytest.raises(ConvergenceError, match="not negative definite"):
        laplace_approximation(lambda t: jnp.sum(t ** 2), np.ones(2))


@pytest.mark.slow
def test_nuts_with_the_laplace_metric_reaches_the_exact_posterior_where_laplace_does_not():
    """Four chains x 1000 draws pass the gate (R-hat <= 1.01, ESS >= 400). Tolerances: with a
    bulk ESS of 2,000 or more (checked) the Monte Carlo sd of a mean is at most 0.022 posterior sd
    and of a log sd about 0.016; 0.1 is 4.5 of the former. The Laplace mode misses the grid's mean
    by more than 0.3 sd, so a sampler that returned the approximation would fail."""
    grid = GridLogistic.make(num_data=10, w_true=(3.0, 1.0), size=1601, half_width=20.0, prior_std=3.0)
    logdensity = reference_log_density(grid.data, 3.0)
    mean, sd = grid.mean, np.sqrt(np.diag(grid.cov))
    mode, _ = laplace_approximation(logdensity, np.zeros(2))
    assert np.max(np.abs(mode - mean) / sd) > 0.3
    idata = sample_nuts_laplace(logdensity, np.zeros(2), draws=1000, tune=300, chains=4, seed=0)
    diagnostics = check_convergence(idata, "w")
    assert diagnostics["ess_bulk_min"] >= 2000
    draws = np.asarray(idata.posterior["w"].values).reshape(-1, 2)
    assert np.max(np.abs(draws.mean(0) - mean) / sd) < 0.1
    assert np.max(np.abs(np.log(draws.std(0) / sd))) < 0.1
    np.testing.assert_allclose(idata.attrs["laplace_mode"], mode)
