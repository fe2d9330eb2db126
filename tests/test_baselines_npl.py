"""NPL's posterior bootstrap (Fong, Lyddon & Holmes 2019) against its closed form and the mixture.

On the conjugate Gaussian model (``σ = s0 = 1``, ``μ0 = 0``) every replicate's objective is
quadratic, so its minimiser is ``θ_b = N/P · Σ_n w_n x_n`` with ``P = N + 1`` and
``w ~ Dir(1, ..., 1)``: the NPL posterior has the Bayesian posterior's mean ``N x̄ / P`` exactly
and the variance ``(N/P)² S² / (N + 1)`` per coordinate (``S²`` the data's population variance,
the Dirichlet-weighted mean's variance), which is the Bayesian ``1/P`` up to the factor
``S² N² / (P (N + 1)) = 1 + O(N^-1/2)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd_bench.baselines import PosteriorBootstrap
from pmd_bench.baselines.bootstrap.npl import bootstrap_weights
from baselines_helpers import Conjugate
from pmd.models.mixture import WellingTehMixture

N = 1000
M = 2000  # replicates of the conjugate runs


def _npl_closed_form(conj: Conjugate) -> tuple[np.ndarray, np.ndarray]:
    x = conj.data.astype(np.float64)
    precision = N + 1.0
    return N / precision * x.mean(axis=0), (N / precision) ** 2 * x.var(axis=0) / (N + 1)


def test_weights_are_a_function_of_the_datum_not_its_position():
    x = jnp.arange(12.0).reshape(6, 2)
    key = jax.random.key(3)
    w = bootstrap_weights(key, 5, x)
    np.testing.assert_array_equal(np.asarray(bootstrap_weights(key, 5, x[::-1])), np.asarray(w)[:, ::-1])
    assert np.unique(np.asarray(w)).size == w.size  # independent across data and replicates


@pytest.fixture(scope="module")
def conjugate_runs():
    """One full-data run and one mini-batch run of the same ``M`` replicates (same key, so the same
    per-datum weights): the full-data optimum of every replicate, and where mini-batches take it."""
    conj = Conjugate.make(num_data=N, noise_std=1.0)
    kw = dict(data_size=N, num_particles=M, optimizer="sgd")
    full = PosteriorBootstrap(conj.model, learning_rate=1.0 / N, kappa=0.0, **kw)
    mini = PosteriorBootstrap(conj.model, learning_rate=2.0 / N, tau=1.0, kappa=1.0, **kw)
    at = lambda algo, batch_size, passes: np.asarray(pmd.run(
        algo, conj.data, jax.random.key(0), batch_size=batch_size, num_passes=passes).posterior.samples, np.float64)
    return conj, at(full, N, 8), at(mini, 50, 10)


@pytest.mark.slow
def test_full_data_replicates_have_the_closed_form_npl_posterior(conjugate_runs):
    # M replicates, each optimised to round-off (SGD with step 1/N on a quadratic of curvature
    # G ≈ N ± √N: 8 steps contract the error by |1 - G/N|^8 ≈ 1e-12). Tolerances: 4 Monte Carlo
    # standard errors of M draws, sqrt(var/M) for the mean and sqrt(2/M) var for the variance
    # (12.6% of it at M = 2000: a Dirichlet-weight error of a factor 2 in the variance, or weights
    # ignored, fails).
    conj, samples, _ = conjugate_runs
    mean, var = _npl_closed_form(conj)
    np.testing.assert_array_less(np.abs(samples.mean(axis=0) - mean), 4 * np.sqrt(var / M))
    np.testing.assert_array_less(np.abs(samples.var(axis=0) - var), 4 * np.sqrt(2 / M) * var)
    # and the mean is the Bayesian posterior's exactly
    np.testing.assert_allclose(mean, conj.mean, rtol=0, atol=1e-8)  # float32 data


def test_minibatch_passes_reach_each_replicates_own_optimum(conjugate_runs):
    # Same key => same per-datum weights, whatever the batches: after 10 passes of batch 50 each
    # replicate sits at the optimum of ITS weighted objective (the full-data run's value), within
    # 0.1 of the NPL posterior's sd (measured: 0.02-0.03; the step 2/(N(1 + t)) leaves a
    # Robbins-Monro residual of order 1/sqrt(t)). Passes that redrew the weights would converge
    # instead to the unweighted optimum, 1 sd from most replicates; replicates with other weights
    # (another key) sit 1.4 sd away in rms.
    conj, target, got = conjugate_runs
    _, var = _npl_closed_form(conj)
    rms = np.sqrt(np.mean((got - target) ** 2, axis=0))
    np.testing.assert_array_less(rms, 0.1 * np.sqrt(var))


def test_parallel_and_sequential_replicates_agree():
    conj = Conjugate.make(num_data=20, noise_std=1.0)
    runs = [pmd.run(PosteriorBootstrap(conj.model, data_size=20, num_particles=4, parallel=p, data=conj.data),
                    conj.data, jax.random.key(2), batch_size=5, num_passes=1).posterior.samples for p in (True, False)]
    np.testing.assert_allclose(np.asarray(runs[0]), np.asarray(runs[1]), rtol=1e-5, atol=1e-6)


def test_random_restarts_find_both_mixture_modes():
    # Welling-Teh's posterior has two modes, near (1, -2) and (-1, 2), of masses 0.54 / 0.46 here,
    # joined by a ridge through the saddle at θ2 = 0. With 300 full-data Adam steps from prior draws,
    # 100 replicates split between the modes: each holds between 25% and 75% of them (a
    # binomial(100, 0.5) count is within 0.5 ± 0.25 with probability 1 - 1e-6; the split is the
    # basins' prior masses, near one half by the symmetry), and under 10% are still on the ridge
    # (|θ2| < 1; the exact posterior puts 0.7% there).
    mix = WellingTehMixture()
    x = mix.simulate(0, N)
    algo = PosteriorBootstrap(mix.model(), data_size=N, num_particles=100, learning_rate=0.05, kappa=0.0)
    s = np.asarray(pmd.run(algo, jnp.asarray(x), jax.random.key(0), batch_size=N, num_passes=300).posterior.samples)
    right = (s[:, 0] > 0) & (s[:, 1] < -1)
    left = (s[:, 0] < 0) & (s[:, 1] > 1)
    assert 0.25 < right.mean() < 0.75 and 0.25 < left.mean() < 0.75
    assert np.mean(np.abs(s[:, 1]) < 1) < 0.1


@pytest.mark.parametrize("bad, field", [
    ({"num_particles": 0}, "num_particles"),
    ({"learning_rate": -1.0}, "learning_rate"),
    ({"kappa": 2.0}, "kappa"),
    ({"optimizer": "lbfgs"}, "optimizer"),
    ({"parallel": "yes"}, "parallel"),
])
def test_bad_hyperparameters_name_the_field(bad, field):
    conj = Conjugate.make(num_data=10)
    with pytest.raises(pmd.ConfigError, match=field):
        PosteriorBootstrap(conj.model, data_size=10, **bad)
