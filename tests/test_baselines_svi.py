"""Gaussian black-box SVI: full-rank is exact on a Gaussian posterior, mean-field underestimates
the marginal variances of a correlated one by exactly the known amount.

Both runs start from the prior (``init="prior"``, Dai et al.'s start, whose convergence these
tests measure; the default Laplace start is tested in tests/test_baselines_defaults.py), use the
full data set as the batch (no mini-batch noise) and plain SGD with the Robbins-Monro rate
``η_t = a / (τ + t)``, so the only noise is the reparameterisation noise of ``S`` Monte Carlo
draws, and the remaining error after ``T`` steps is predicted by linearising
the ELBO gradient at its optimum (:func:`baselines_helpers.robbins_monro_sd`). For a Gaussian
posterior with precision ``Λ``, at the optimum ``L Lᵀ`` of a family:

* mean ``μ``: curvature ``Λ``, gradient noise ``Λ L ε̄`` (covariance ``Λ L Lᵀ Λ / S``);
* log-scale ``ρ_k`` (``L_kk = e^{ρ_k}``): curvature 2 (``∂/∂ρ_k`` of ``-Λ_kk e^{2ρ_k} + 1``), noise
  variance ``(2 + Σ_{j≠k} Λ_kj² L_jj² L_kk²) / S`` (the fourth moment of ``ε_k`` plus cross terms);
* off-diagonal ``L_kj`` (full-rank): curvature ``Λ_kk``, noise variance ``Λ_kk² L_jj²/S``
  (isotropic case).

Tolerances are 4 of those standard deviations; the variance ``e^{2ρ}`` moves by ``2 e^{2ρ} δρ``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import pmd
from pmd_bench.baselines import SVI
from baselines_helpers import Conjugate, robbins_monro_sd
from pmd.model import gaussian_log_density

A, TAU, STEPS, DRAWS = 1.0, 10.0, 4000, 8


def _fit(model, data, family, seed=0):
    algo = SVI(model, data_size=data.shape[0], num_particles=DRAWS, family=family, optimizer="sgd",
               learning_rate=A, tau=TAU, kappa=1.0, init="prior")
    res = pmd.run(algo, data, jax.random.key(seed), batch_size=data.shape[0], num_passes=STEPS)
    return res.posterior


def test_fullrank_svi_is_exact_on_the_conjugate_posterior():
    # N σ⁻² = 64/64 = 1, so P = 2 and the posterior is N(μ*, I/2): every curvature is 2.
    conj = Conjugate.make(num_data=64, noise_std=8.0)
    P = conj.precision
    post = _fit(conj.model, conj.data, "fullrank")
    s2 = 1.0 / P
    sd_loc = robbins_monro_sd(A, TAU, STEPS, curvature=P, noise_var=P / DRAWS)
    sd_rho = robbins_monro_sd(A, TAU, STEPS, curvature=2.0, noise_var=2.0 / DRAWS)
    sd_tril = robbins_monro_sd(A, TAU, STEPS, curvature=P, noise_var=P**2 * s2 / DRAWS)
    np.testing.assert_array_less(np.abs(np.asarray(post.mean()) - conj.mean), 4 * sd_loc)
    cov = np.asarray(post.cov())
    np.testing.assert_array_less(np.abs(np.diag(cov) - s2), 4 * 2 * s2 * sd_rho)  # L_21² is second order
    assert abs(cov[0, 1]) < 4 * np.sqrt(s2) * sd_tril


def _correlated_model(prior_cov, noise_std):
    """θ ~ N(0, Σ0), x_n | θ ~ N(θ, σ² I): a Gaussian posterior with correlated coordinates."""
    chol0 = jnp.linalg.cholesky(jnp.asarray(prior_cov, jnp.float32))
    prec0 = jnp.linalg.inv(jnp.asarray(prior_cov, jnp.float32))
    return pmd.Model(
        dim=2,
        log_prior=lambda th: -0.5 * th @ prec0 @ th,
        log_likelihood=lambda th, x: gaussian_log_density(x, th, noise_std),
        sample_prior=lambda key, n: jax.random.normal(key, (n, 2)) @ chol0.T,
        name="correlated-gaussian",
    )


def test_meanfield_svi_underestimates_correlated_marginal_variances():
    """Prior correlation 0.9 and N σ⁻² = 1 give the posterior precision
    ``Λ = Σ0⁻¹ + I = [[6.263, -4.737], [-4.737, 6.263]]``. The mean-field optimum (Bishop 2006,
    eq. 10.12-10.14) has the exact mean and variances ``1/Λ_kk = 0.160``, less than half the true
    marginal variances ``(Λ⁻¹)_kk = 0.373``."""
    prior_cov = np.array([[1.0, 0.9], [0.9, 1.0]])
    noise_std, n = 8.0, 64
    x = np.random.default_rng(0).normal(0.5, noise_std, (n, 2)).astype(np.float32)
    lam = np.linalg.inv(prior_cov) + n / noise_std**2 * np.eye(2)
    true_cov = np.linalg.inv(lam)
    true_mean = true_cov @ x.astype(np.float64).sum(axis=0) / noise_std**2
    mf_var = 1.0 / np.diag(lam)
    np.testing.assert_allclose(mf_var, 0.160, atol=5e-4)
    np.testing.assert_allclose(np.diag(true_cov), 0.373, atol=5e-4)

    post = _fit(_correlated_model(prior_cov, noise_std), x, "meanfield", seed=1)

    # The mean: in Λ's eigenbasis U each mode j relaxes with curvature λ_j under noise of variance
    # (Uᵀ Λ D Λ U)_jj / S, D = diag(mf_var); a coordinate's sd is at most Σ_j |U_kj| sd_j.
    eigvals, u = np.linalg.eigh(lam)
    noise = np.diag(u.T @ lam @ np.diag(mf_var) @ lam @ u) / DRAWS
    sd_modes = np.array([robbins_monro_sd(A, TAU, STEPS, c, v) for c, v in zip(eigvals, noise)])
    sd_loc = np.abs(u) @ sd_modes
    np.testing.assert_array_less(np.abs(np.asarray(post.mean()) - true_mean), 4 * sd_loc)

    cross = lam[0, 1] ** 2 * mf_var[0] * mf_var[1]
    sd_rho = robbins_monro_sd(A, TAU, STEPS, curvature=2.0, noise_var=(2.0 + cross) / DRAWS)
    var = np.diag(np.asarray(post.cov()))
    tol = 4 * 2 * mf_var * sd_rho
    np.testing.assert_array_less(np.abs(var - mf_var), tol)
    np.testing.assert_array_less(var + tol, np.diag(true_cov))
    assert np.asarray(post.cov())[0, 1] == 0.0
