"""NPV (Gershman, Hoffman & Blei 2012): its objective, and what its optimum is on a Gaussian posterior.

On the conjugate posterior ``N(μ*, I/P)`` the log joint is ``f(θ) = -P/2 ‖θ - μ*‖² + c``, so
``tr ∇²f = -P d`` and GHB12's ``L2`` is ``-P/(2m) Σ_i (‖μ_i - μ*‖² + d σ_i²) + H_lb``, where the
entropy bound ``H_lb`` is invariant to translating all means and gains ``d log c`` when means
and widths are scaled by ``c`` about any point. Differentiating along those two motions gives,
for any parameters with ``L2``-gradient ``g``:

* ``μ̄ - μ* = -(1/P) Σ_i g_{μ_i}``                       (translation);
* ``tr Cov_q + ‖μ̄ - μ*‖² = (d - R)/P``, ``R = Σ_i (μ_i - μ*)·g_{μ_i} + 2 Σ_i g_{log σ_i²}``  (scaling).

So at a stationary point the mixture has exactly the posterior mean and the trace of the
posterior covariance (the objective does not pin how the trace splits between coordinates: on an
isotropic posterior it is rotation invariant), and near one the errors are bounded by the
gradient, which is the tolerance used (plus float32 rounding). Either identity fails if the
Hessian-trace term or the entropy bound is wrong (e.g. ``σ² tr ∇²f`` without the ½ gives trace
``d/(2P)``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd_bench.baselines import NPV, StochasticNPV
from pmd.posterior import MixturePosterior
from baselines_helpers import Conjugate

ROUNDING = 1e-5  # relative float32 error of the objective's gradient, in units of the posterior sd / variance


def _grad_norm(grads) -> float:
    return float(jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree_util.tree_leaves(grads))))


def _assert_posterior_moments(conj: Conjugate, post: MixturePosterior, grad_l2: dict):
    P, d = conj.precision, conj.mean.shape[0]
    means = np.asarray(post.samples, np.float64)
    g_mu = np.asarray(grad_l2["means"], np.float64)
    g_logvar = np.asarray(grad_l2["log_var"], np.float64)
    mean = np.asarray(post.mean(), np.float64)
    mean_tol = np.abs(g_mu.sum(axis=0)) / P + ROUNDING / np.sqrt(P)
    np.testing.assert_array_less(np.abs(mean - conj.mean), mean_tol)
    residual = np.sum((means - conj.mean) * g_mu) + 2 * g_logvar.sum()
    trace_tol = (abs(residual) + P * np.sum((mean - conj.mean) ** 2)) / P + ROUNDING * d / P
    assert abs(np.trace(np.asarray(post.cov(), np.float64)) - d / P) < trace_tol


@pytest.mark.slow
def test_full_data_npv_converges_to_the_posterior_mean_and_trace():
    conj = Conjugate.make(num_data=100)
    algo = NPV(conj.model, data_size=100, num_particles=30, data=conj.data, iterations=50, init="prior")
    # 20 steps of 50 L-BFGS iterations. Measured (8 run keys): after 350 iterations the gradient is
    # still 0.4e-3 to 2.4e-3 of the prior start's (L-BFGS crosses the flat log-variance directions
    # slowly, and not monotonically), so a 1000-fold test there passes or fails by the start and the
    # platform's rounding; after 1000 it is 1e-6 to 7e-5 of it (float32 floor ~2e-7).
    res = pmd.run(algo, conj.data, jax.random.key(0), batch_size=100, num_passes=20)
    start = algo.init(jax.random.key(99))  # a prior start, to measure the gradient's reduction
    grad_objective = jax.jit(jax.grad(algo.objective))
    grad_l2 = grad_objective(res.state.params)
    # L-BFGS converged: a 1000-fold smaller gradient than at the (prior) start
    assert _grad_norm(grad_l2) < 1e-3 * _grad_norm(grad_objective(start.params))
    _assert_posterior_moments(conj, res.posterior, grad_l2)
    # every L-BFGS iteration evaluates the full data at least once
    assert np.all(res.info["visited"] >= 100 * 50) and np.all(res.info["visited"] % 100 == 0)


def test_stochastic_npv_objective_is_unbiased_over_a_pass():
    """``L2`` is linear in ``f``, and ``N · mean_b`` over the ten batches of a pass averages to the
    full-data sum: the batch objectives and gradients average to the full-data ones."""
    conj = Conjugate.make(num_data=100)
    full = NPV(conj.model, data_size=100, num_particles=20, data=conj.data)
    stochastic = StochasticNPV(conj.model, data_size=100, num_particles=20, data=conj.data)
    params = stochastic.init(jax.random.key(0)).params
    batches = jnp.asarray(conj.data).reshape(10, 10, 2)
    values, grads = jax.jit(jax.vmap(jax.value_and_grad(stochastic.objective), in_axes=(None, 0)))(params, batches)
    full_value, full_grad = jax.jit(jax.value_and_grad(full.objective))(params)
    np.testing.assert_allclose(jnp.mean(values), full_value, rtol=1e-5)
    for name in params:
        scale = float(jnp.max(jnp.abs(full_grad[name])))
        np.testing.assert_allclose(jnp.mean(grads[name], axis=0), full_grad[name], atol=1e-5 * scale)


def test_stochastic_npv_on_full_batches_reaches_the_same_stationary_identities():
    conj = Conjugate.make(num_data=100)
    algo = StochasticNPV(conj.model, data_size=100, num_particles=30, optimizer="sgd", learning_rate=0.1)
    res = pmd.run(algo, conj.data, jax.random.key(1), batch_size=100, num_passes=3000)
    grad_l2 = jax.jit(jax.grad(algo.objective))
    start = algo.init(jax.random.key(99))  # a prior start, to measure the gradient's reduction
    data = jnp.asarray(conj.data)
    assert _grad_norm(grad_l2(res.state.params, data)) < 1e-3 * _grad_norm(grad_l2(start.params, data))
    _assert_posterior_moments(conj, res.posterior, grad_l2(res.state.params, data))


def test_mixture_posterior_density_moments_and_draws():
    """``log q`` against a direct sum of Gaussian densities; the covariance of draws against
    ``cov()`` within 4 standard errors (``K`` draws: ``sqrt((Σ_kk Σ_ll + Σ_kl²)/K)``)."""
    means = jnp.asarray([[0.0, 0.0], [2.0, 1.0], [-1.0, 3.0]])
    stds = jnp.asarray([0.5, 1.0, 0.2])
    log_w = jnp.log(jnp.asarray([0.2, 0.5, 0.3]))
    post = MixturePosterior(means, log_w, stds)
    theta = np.array([[0.3, -0.2], [1.0, 2.0]])
    direct = np.log(sum(
        w * np.exp(-0.5 * np.sum((theta - np.asarray(mu)) ** 2, axis=1) / s**2) / (2 * np.pi * s**2)
        for w, mu, s in zip([0.2, 0.5, 0.3], np.asarray(means), [0.5, 1.0, 0.2])))
    np.testing.assert_allclose(post.log_density(jnp.asarray(theta)), direct, rtol=1e-5)
    np.testing.assert_allclose(post.log_density(jnp.asarray(theta[0])), direct[0], rtol=1e-5)
    k = 200_000
    draws = np.asarray(post.sample(jax.random.key(0), k), np.float64)
    cov = np.asarray(post.cov(), np.float64)
    np.testing.assert_array_less(np.abs(draws.mean(axis=0) - np.asarray(post.mean())), 4 * np.sqrt(np.diag(cov) / k))
    # non-Gaussian draws: the standard error of a covariance entry uses the draws' fourth moments
    centred = draws - draws.mean(axis=0)
    prods = centred[:, :, None] * centred[:, None, :]
    np.testing.assert_array_less(np.abs(np.cov(draws.T) - cov), 4 * prods.std(axis=0) / np.sqrt(k))
    assert post.has_density()
