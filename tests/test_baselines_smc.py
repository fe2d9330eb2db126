"""One-pass SMC (Balakrishnan & Madigan 2006) against the conjugate Gaussian."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd_bench.baselines import OnePassSMC
from baselines_helpers import Conjugate


def test_one_pass_smc_recovers_conjugate_posterior():
    """Mean and variance within 4 Monte Carlo standard errors, bounded as follows.

    The final weighted estimate of the mean has variance ≈ ``v/ESS`` (``v = 1/P`` the posterior
    variance). Each of the ``K`` resample-and-rejuvenate events adds to the cloud's mean an error
    of variance at most ``(1 + h²) v_k / m`` (multinomial resampling ``v_k/m``, kernel noise
    ``h² v_k/m``; ``v_k = 1/P_k`` the posterior variance at that point). Later conjugate updates
    shrink that error by ``P_k/P`` (the posterior mean is the precision-weighted average), so its
    contribution to the end is ``(P_k/P)² (1+h²)/(P_k m) ≤ (1+h²) v/m``. Hence
    ``Var ≤ v (1/ESS + K (1+h²)/m)``; the same argument on relative errors gives the variance's
    relative variance ``≤ 2 (1/ESS + K (1+h²)/m)`` (Gaussian kurtosis). ``h²`` is the
    normal-reference bandwidth at the smallest ESS that triggers a resampling, ``threshold · m``.
    """
    conj = Conjugate.make(num_data=100)
    m, threshold = 10_000, 0.5
    algo = OnePassSMC(conj.model, data_size=100, num_particles=m, threshold=threshold)
    res = pmd.run(algo, conj.data, jax.random.key(0), batch_size=10, num_passes=1)
    post = res.posterior
    resamplings = int(np.sum(res.info["resampled"]))
    assert resamplings >= 1  # the first batch alone shrinks the prior variance elevenfold
    ess = float(post.effective_sample_size())
    h2 = (4.0 / (4.0 * threshold * m)) ** (2.0 / 6.0)
    rel_var = 1.0 / ess + resamplings * (1.0 + h2) / m
    v = conj.cov[0, 0]
    np.testing.assert_array_less(np.abs(np.asarray(post.mean()) - conj.mean), 4 * np.sqrt(v * rel_var))
    cov = np.asarray(post.cov())
    np.testing.assert_array_less(np.abs(np.diag(cov) / v - 1.0), 4 * np.sqrt(2 * rel_var))
    assert abs(cov[0, 1]) < 4 * v * np.sqrt(rel_var)


def test_kernel_posterior_keeps_the_weighted_moments():
    """Liu-West shrinkage ``a = sqrt(1-h²)``: centres ``aθ + (1-a)θ̄`` plus kernel ``h²V`` have
    exactly the particles' weighted mean and covariance ``V``."""
    conj = Conjugate.make(num_data=100)
    algo = OnePassSMC(conj.model, data_size=100, num_particles=500)
    state = algo.init(jax.random.key(0))
    state, _ = algo.step(jax.random.key(1), state, jnp.asarray(conj.data[:3]))
    post = algo.posterior(state)
    particles = pmd.ParticlePosterior(state.positions, state.log_weights)
    np.testing.assert_allclose(post.mean(), particles.mean(), atol=1e-6)
    np.testing.assert_allclose(post.cov(), particles.cov(), rtol=1e-4, atol=1e-7)


@pytest.mark.slow
def test_reads_each_datum_once_then_stops():
    """95 data in batches of 10: the 10th batch straddles two passes and only its first 5 rows
    are read; every step after that changes nothing and reports no data visited."""
    conj = Conjugate.make(num_data=95)
    algo = OnePassSMC(conj.model, data_size=95, num_particles=200)
    one = pmd.run(algo, conj.data, jax.random.key(3), batch_size=10, num_passes=1, eval_every=10)
    two = pmd.run(algo, conj.data, jax.random.key(3), batch_size=10, num_passes=2)
    assert one.num_steps == 10 and one.visited[-1] == 95
    assert list(one.info["visited"]) == [10] * 9 + [5]
    assert two.num_steps == 19 and int(np.sum(two.info["visited"])) == 95
    np.testing.assert_array_equal(two.info["visited"][10:], 0)
    jax.tree_util.tree_map(np.testing.assert_array_equal, one.state.positions, two.state.positions)
    np.testing.assert_array_equal(one.state.log_weights, two.state.log_weights)


def test_reweights_by_the_batch_likelihood_to_the_power_one():
    """Without resampling (threshold 0) the log-weights are the prior draws' log-likelihood of
    the data read so far, normalised: importance sampling from the prior."""
    conj = Conjugate.make(num_data=30)
    algo = OnePassSMC(conj.model, data_size=30, num_particles=50, threshold=0.0)
    state = algo.init(jax.random.key(0))
    start = state.positions
    for i in range(3):
        state, info = algo.step(jax.random.key(i), state, jnp.asarray(conj.data[10 * i:10 * i + 10]))
        assert not bool(info["resampled"])
    loglik = np.asarray(conj.model.batch_log_likelihood(start, jnp.asarray(conj.data))).sum(axis=1)
    expected = loglik - np.logaddexp.reduce(loglik)
    np.testing.assert_allclose(state.log_weights, expected, rtol=1e-4, atol=1e-3)
