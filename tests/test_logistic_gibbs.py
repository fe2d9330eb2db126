"""Pólya-Gamma Gibbs for logistic regression: the PG(1, c) sampler's moments, and the chain
against the exact (gridded) 2-D posterior with Monte Carlo tolerances from its effective sample size."""

from __future__ import annotations

import math

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from logistic_helpers import GridLogistic

from pmd_bench.baselines.gibbs.polya_gamma import PolyaGammaGibbs, polya_gamma_tail_sd_bound, sample_polya_gamma
from pmd import ConfigError, run

C = np.array([0.0, 0.5, 2.0, 8.0])


def pg_variance(c: np.ndarray) -> np.ndarray:
    """``Var PG(1, c) = (sinh c - c) / (4 c³ cosh²(c/2))`` (Polson et al. 2013, sec. 2), 1/24 at 0."""
    c = np.asarray(c, np.float64)
    safe = np.where(c == 0, 1.0, c)
    return np.where(c == 0, 1 / 24, (np.sinh(safe) - safe) / (4 * safe**3 * np.cosh(safe / 2) ** 2))


def tail_variance(c: np.ndarray, truncation: int, terms: int = 200_000) -> np.ndarray:
    """Variance of the omitted series terms ``k > K``: ``1/(4π⁴) Σ ((k-½)² + c²/4π²)⁻²``."""
    k = np.arange(truncation + 1, truncation + terms + 1, dtype=np.float64)[None, :]
    return np.sum(((k - 0.5) ** 2 + (np.asarray(c)[:, None] / (2 * np.pi)) ** 2) ** -2, axis=1) / (4 * np.pi**4)


def _draws(truncation: int, n: int = 200_000) -> np.ndarray:
    c = jnp.repeat(jnp.asarray(C, jnp.float32), n)
    return np.asarray(sample_polya_gamma(jax.random.key(7), c, truncation), np.float64).reshape(len(C), n)


@pytest.mark.parametrize("truncation", [64, 1])
def test_polya_gamma_moments(truncation):
    """Mean ``tanh(c/2)/(2c)`` (kept exactly by the tail-mean correction, whatever ``K``) and variance
    ``Var PG(1,c)`` minus the omitted tail's variance (< 1e-8 at K = 64; at most 1.5% at K = 1), each
    within 4 standard errors of the 200,000-draw estimate (standard errors from the draws' own
    second and fourth central moments)."""
    w = _draws(truncation)
    n = w.shape[1]
    mean = np.tanh(C / 2) / (2 * np.where(C == 0, 1, C))
    mean[C == 0] = 0.25
    var = pg_variance(C) - tail_variance(C, truncation)
    centred = w - w.mean(axis=1, keepdims=True)
    m2, m4 = np.mean(centred**2, axis=1), np.mean(centred**4, axis=1)
    assert np.all(np.abs(w.mean(axis=1) - mean) < 4 * np.sqrt(m2 / n))
    assert np.all(np.abs(m2 - var) < 4 * np.sqrt((m4 - m2**2) / n)), (m2, var)
    assert np.all(np.sqrt(tail_variance(C, truncation)) <= polya_gamma_tail_sd_bound(truncation))


@pytest.fixture(scope="module")
def chain():
    grid = GridLogistic.make()
    kept, burn_in = 4000, 100
    algo = PolyaGammaGibbs(grid.problem.model(), data_size=50, num_particles=kept, data=grid.data, burn_in=burn_in,
                           num_steps=burn_in + kept)
    # one step = one sweep: the runner's batch is the whole data set
    result = run(algo, grid.data, jax.random.key(0), batch_size=50, num_passes=burn_in + kept)
    return grid, result


@pytest.mark.slow
def test_every_sweep_visits_every_datum(chain):
    _, result = chain
    assert result.visited[-1] == 4100 * 50
    assert np.all(result.info["visited"] == 50)


def test_gibbs_matches_the_gridded_posterior(chain):
    """Mean within 4 Monte Carlo standard errors ``sd/√ESS``; variance within 4 standard errors of
    the mean of ``(w - w̄)²``, ``sd((w - w̄)²)/√ESS((w - w̄)²)``; ESS by ArviZ (bulk) on the chain.
    The grid's quadrature error (801² points, mass < 1e-12 at the edges) is far below both."""
    grid, result = chain
    w = np.asarray(result.posterior.samples, np.float64)  # in sweep order: the ring buffer never wrapped
    centred_sq = (w - w.mean(axis=0)) ** 2
    for k in range(2):
        ess = float(az.ess(w[None, :, k]))
        ess_sq = float(az.ess(centred_sq[None, :, k]))
        assert ess > 500, ess  # PG Gibbs mixes well here; a collapse would make the test weak
        assert abs(w[:, k].mean() - grid.mean[k]) < 4 * w[:, k].std() / math.sqrt(ess)
        assert abs(centred_sq[:, k].mean() - grid.cov[k, k]) < 4 * centred_sq[:, k].std() / math.sqrt(ess_sq)


def test_bad_settings_are_named():
    grid = GridLogistic.make(num_data=10)
    model = grid.problem.model()
    with pytest.raises(ConfigError, match="data="):
        PolyaGammaGibbs(model, data_size=10, num_particles=5)
    with pytest.raises(ConfigError, match="truncation"):
        PolyaGammaGibbs(model, data_size=10, num_particles=5, data=grid.data, truncation=0)
    with pytest.raises(ConfigError, match="not those of"):
        PolyaGammaGibbs(model, data_size=10, num_particles=5, data=grid.data, prior_std=2.0)
    with pytest.raises(ConfigError, match="burn_in"):
        PolyaGammaGibbs(model, data_size=10, num_particles=5, data=grid.data, burn_in=10, num_steps=10)
    # a burn-in given as a fraction of the run: of num_steps sweeps, rounded down; refused without them
    assert PolyaGammaGibbs(model, data_size=10, num_particles=5, data=grid.data, burn_in=0.5,
                           num_steps=51).burn_in == 25
    with pytest.raises(ConfigError, match="num_steps"):
        PolyaGammaGibbs(model, data_size=10, num_particles=5, data=grid.data, burn_in=0.5)
    with pytest.raises(ConfigError, match="fraction"):
        PolyaGammaGibbs(model, data_size=10, num_particles=5, data=grid.data, burn_in=1.5, num_steps=10)
    with pytest.raises(ConfigError, match="keys 'x' and 'y'"):
        PolyaGammaGibbs(model, data_size=10, num_particles=5, data={"x": grid.data["x"], "z": grid.data["y"]})
