"""Data-augmentation Gibbs on the Welling-Teh mixture against the exact (gridded) posterior."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd_bench.baselines import MixtureGibbs
from pmd.metrics import Grid
from pmd.models.mixture import WellingTehMixture

BATCHES = 20  # batch means: 20 consecutive blocks of retained samples


@pytest.fixture(scope="module")
def mixture_run():
    mixture = WellingTehMixture()
    x = mixture.simulate(seed=0, n=1000)
    kept, burn_in = 2000, 50
    algo = MixtureGibbs(mixture.model(), data_size=1000, num_particles=kept, data=x, burn_in=burn_in,
                        num_steps=burn_in + kept)
    # the mini-batch is ignored: batches of 10 just set the number of sweeps (one per step)
    res = pmd.run(algo, x, jax.random.key(0), batch_size=10, num_passes=(burn_in + kept) * 10 / 1000)
    return mixture, x, algo, res


def test_counts_every_datum_of_every_sweep(mixture_run):
    _, _, _, res = mixture_run
    assert res.num_steps == 2050
    assert res.visited[-1] == 2050 * 1000


def test_gibbs_matches_the_grid_posterior_within_its_mode(mixture_run):
    """The exact posterior restricted to the half-plane of the mode the chain is in.

    The mixture's label swap ``(θ1, θ2) -> (θ1 + θ2, -θ2)`` maps the half-planes ``θ2 < 0`` and
    ``θ2 > 0`` onto each other, so each holds one mode and half the mass. Monte Carlo error by
    batch means (20 blocks of 100 consecutive sweeps, which accounts for the autocorrelation):
    the mean and the variance of each coordinate must lie within 4 standard errors. The grid
    (spacing 0.025, posterior sds ≈ 0.1-0.3) adds a quadrature error far below that.
    """
    mixture, x, _, res = mixture_run
    samples = np.asarray(res.posterior.samples, np.float64)  # count == m: slots are in time order
    side = np.sign(samples[:, 1].mean())
    assert np.all(np.sign(samples[:, 1]) == side)  # H.1: Gibbs stays in one mode

    grid = Grid(lower=(-3.0, -4.0), upper=(3.0, 4.0), size=(241, 321))
    truth = mixture.grid_posterior(x, grid)
    pts = grid.points.astype(np.float64)
    prob = np.exp(np.asarray(truth.log_prob, np.float64)) * (np.sign(pts[:, 1]) == side)
    prob /= prob.sum()
    true_mean = prob @ pts
    true_var = prob @ (pts - true_mean) ** 2

    blocks = samples.reshape(BATCHES, -1, 2)
    mean = samples.mean(axis=0)
    se_mean = blocks.mean(axis=1).std(axis=0, ddof=1) / np.sqrt(BATCHES)
    sq = ((blocks - mean) ** 2).mean(axis=1)
    se_var = sq.std(axis=0, ddof=1) / np.sqrt(BATCHES)
    np.testing.assert_array_less(np.abs(mean - true_mean), 4 * se_mean)
    np.testing.assert_array_less(np.abs(samples.var(axis=0) - true_var), 4 * se_var)


def test_the_two_conditionals_are_exact():
    """Each half-sweep against its closed form, with ``K = 20000`` independent draws.

    ``z | θ``: ``n1 = Σ z_n`` has mean ``Σ p_n`` and variance ``Σ p_n (1 - p_n)``, ``p_n`` the
    responsibility of the second component; ``θ | z``: mean ``Λ⁻¹ Aᵀx/σx²``, covariance ``Λ⁻¹``
    (solved here in numpy). Tolerances: 4 standard errors of the ``K``-draw averages.
    """
    mixture = WellingTehMixture()
    x = mixture.simulate(seed=1, n=200)
    algo = MixtureGibbs(mixture.model(), data_size=200, num_particles=10, data=x)
    keys = jax.random.split(jax.random.key(0), 20000)
    k = keys.shape[0]

    theta = jnp.asarray([0.5, -1.0])
    n1 = np.asarray(jax.vmap(lambda key: jnp.sum(algo.sample_indicators(key, theta)))(keys), np.float64)
    xs = x.astype(np.float64)
    p = 1 / (1 + np.exp(-((xs - 0.5) ** 2 - (xs + 0.5) ** 2) / (2 * 2.5**2)))  # weight ½: no prior log-odds
    assert abs(n1.mean() - p.sum()) < 4 * np.sqrt((p * (1 - p)).sum() / k)

    z = (np.arange(200) % 3 == 0).astype(np.float32)
    a = np.stack([np.ones(200), z], axis=1)
    lam = np.diag([1.0, 1.0]) + a.T @ a / 2.5**2
    cov = np.linalg.inv(lam)
    mean = cov @ a.T @ xs / 2.5**2
    draws = np.asarray(jax.vmap(lambda key: algo.sample_theta(key, jnp.asarray(z)))(keys), np.float64)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - mean), 4 * np.sqrt(np.diag(cov) / k))
    np.testing.assert_array_less(np.abs(np.cov(draws.T) - cov), 4 * np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / k))
