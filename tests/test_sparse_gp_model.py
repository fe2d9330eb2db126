"""The sparse-GP model and its float64 truth (pmd/models/sparse_gp.py): kernel, median trick, the
exact GP, Titsias' optimal q(u), the DTC evidence, and the mixture posterior's moments."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from pmd import ConfigError
from pmd.models.sparse_gp import (SparseGP, SparseGPPosterior, dtc_log_evidence, exact_gp_predict, median_bandwidth,
                                  prox_update, rbf, svgp_elbo, titsias_elbo, titsias_posterior, titsias_predict, whitening)

from sparse_gp_helpers import TEST_X, problem, x64  # noqa: F401  (x64: autouse fixture)


def test_median_trick_is_the_median_pairwise_distance():
    x = np.random.default_rng(1).normal(size=(60, 3))
    brute = np.median([np.linalg.norm(x[i] - x[j]) for i in range(60) for j in range(i + 1, 60)])
    assert median_bandwidth(x, 0.1) == pytest.approx(0.1 * brute, rel=1e-12)
    # above max_points: the median of a random subset, within 5% here (1225 of 1770 pairs' rows)
    assert median_bandwidth(x, 1.0, max_points=50) == pytest.approx(brute, rel=0.05)
    with pytest.raises(ConfigError, match="bandwidth_scale"):
        median_bandwidth(x, 0.0)


def test_kernel_agrees_between_jax_and_numpy():
    x1, x2 = np.random.default_rng(2).normal(size=(5, 4)), np.random.default_rng(3).normal(size=(7, 4))
    direct = 2.0 * np.exp(-0.5 * np.sum((x1[:, None] - x2[None]) ** 2, -1) / 1.5**2)
    np.testing.assert_allclose(rbf(x1, x2, 1.5, 2.0, np), direct, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(rbf(jnp.asarray(x1), jnp.asarray(x2), 1.5, 2.0)), direct, rtol=1e-12)


@pytest.mark.parametrize("field,value", [("noise_variance", 0.0), ("lengthscale", -1.0), ("num_inducing", 0),
                                         ("jitter", -1e-6)])
def test_bad_hyperparameters_name_the_field(field, value):
    args = dict(lengthscale=0.1, noise_variance=0.01, num_inducing=8, lower=(0.0,), upper=(1.0,))
    with pytest.raises(ConfigError, match=field):
        SparseGP(**{**args, field: value})
    with pytest.raises(ConfigError, match="lower < upper"):
        SparseGP(**{**args, "lower": (1.0,)})


def test_titsias_with_every_input_inducing_is_the_exact_gp():
    """With Z = X the DTC model is the full GP: Titsias' predictive and evidence are the exact ones
    up to the jitter ε on K_mm, whose effect is linear in ε here (on the mean: measured 5e-3, 5e-5,
    5e-7 at ε = 1e-6, 1e-8, 1e-10; on the evidence 6e-5, 9e-7, 8e-9): at ε = 1e-10, tolerance 1e-5
    on the predictive, 1e-6 on the log evidence."""
    model, data = problem(n=40, num_inducing=40, jitter=1e-10, bandwidth_scale=0.05)
    mean, var = titsias_predict(model, data["x"], data["x"], data["y"], TEST_X)
    exact_mean, exact_var = exact_gp_predict(model, data["x"], data["y"], TEST_X)
    np.testing.assert_allclose(mean, exact_mean, atol=1e-5)
    np.testing.assert_allclose(var, exact_var, atol=1e-5)
    k = model.kernel(data["x"], data["x"], np) + model.noise_variance * np.eye(40)
    exact_evidence = multivariate_normal(np.zeros(40), k).logpdf(data["y"])
    assert dtc_log_evidence(model, data["x"], data["x"], data["y"]) == pytest.approx(exact_evidence, abs=1e-6)
    assert titsias_elbo(model, data["x"], data["x"], data["y"]) == pytest.approx(exact_evidence, abs=1e-6)


def test_dtc_evidence_and_titsias_bound_for_fewer_inducing_inputs():
    """The Woodbury evidence equals the dense Gaussian log density; Titsias' bound lies below it
    and below the exact GP's evidence."""
    model, data = problem(n=60, num_inducing=6)
    z = np.linspace(-0.5, 0.5, 6)[:, None]
    kzx = model.kernel(z, data["x"], np)
    q = kzx.T @ np.linalg.solve(model.kmm(z, np), kzx)
    dense = multivariate_normal(np.zeros(60), q + model.noise_variance * np.eye(60)).logpdf(data["y"])
    assert dtc_log_evidence(model, z, data["x"], data["y"]) == pytest.approx(dense, abs=1e-7)
    exact = multivariate_normal(np.zeros(60), model.kernel(data["x"], data["x"], np)
                                + model.noise_variance * np.eye(60)).logpdf(data["y"])
    assert titsias_elbo(model, z, data["x"], data["y"]) < min(dense, exact)


def test_titsias_posterior_in_row_slices_is_the_whole_kernels():
    """The slices' sums of ``K_mn K_nm`` and ``K_mn y`` are the whole kernel's: equal to float64
    round-off, with a last slice shorter than the others (80 rows in slices of 30)."""
    model, data = problem(n=80, num_inducing=8)
    z = np.linspace(-0.45, 0.45, 8)[:, None]
    whole = titsias_posterior(model, z, data["x"], data["y"], chunk_rows=80)
    sliced = titsias_posterior(model, z, data["x"], data["y"], chunk_rows=30)
    for a, b in zip(whole, sliced):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    with pytest.raises(ConfigError, match="chunk_rows"):
        titsias_posterior(model, z, data["x"], data["y"], chunk_rows=0)


@pytest.mark.slow
def test_hensman_bound_peaks_at_titsias_q():
    """Hensman's bound at Titsias' optimal q(u) equals the collapsed bound (Titsias 2009), and any
    other q scores lower: an identity, so the tolerance is float64 round-off."""
    model, data = problem(n=80, num_inducing=8)
    z = np.linspace(-0.45, 0.45, 8)[:, None]
    mean_u, cov_u = titsias_posterior(model, z, data["x"], data["y"])
    chol_k = np.asarray(whitening(model, jnp.asarray(z)))
    loc = np.linalg.solve(chol_k, mean_u)
    scale = np.linalg.cholesky(np.linalg.solve(chol_k, np.linalg.solve(chol_k, cov_u).T))
    batch = {k: jnp.asarray(v) for k, v in data.items()}
    bound = svgp_elbo(model, jnp.asarray(z), jnp.asarray(chol_k), jnp.asarray(loc), jnp.asarray(scale), batch, 80)
    assert float(bound) == pytest.approx(titsias_elbo(model, z, data["x"], data["y"]), abs=1e-6)
    worse = svgp_elbo(model, jnp.asarray(z), jnp.asarray(chol_k), jnp.asarray(loc) + 0.1, jnp.asarray(scale), batch, 80)
    assert float(worse) < float(bound)
    # in slices of 30 rows (the last padded with 10 masked rows): the same sum
    sliced = svgp_elbo(model, jnp.asarray(z), jnp.asarray(chol_k), jnp.asarray(loc), jnp.asarray(scale), batch, 80,
                       chunk_rows=30)
    assert float(sliced) == pytest.approx(float(bound), abs=1e-8)


def _two_component_posterior(model):
    rng = np.random.default_rng(0)
    z = rng.uniform(-0.5, 0.5, (2, model.num_inducing, 1))
    chol_k = np.linalg.cholesky(np.stack([model.kmm(zz, np) for zz in z]))
    loc = rng.standard_normal((2, model.num_inducing))
    scale = 0.3 * np.tril(rng.standard_normal((2, model.num_inducing, model.num_inducing)))
    return SparseGPPosterior(*map(jnp.asarray, (z, chol_k, np.log([0.3, 0.7]), loc, scale, model.lengthscale,
                                                model.variance)))


def test_mixture_predictive_moments():
    """The mixture's predictive equals the weighted combination of each component's closed form
    (computed here in NumPy from u's moments: mean k*ᵀK⁻¹m, variance k** - Q** + k*ᵀK⁻¹SK⁻¹k*)."""
    model, _ = problem(num_inducing=5)
    post = _two_component_posterior(model)
    means, variances = [], []
    for j in range(2):
        z, l = np.asarray(post.inducing[j]), np.asarray(post.chol_k[j])
        m_u, r = l @ np.asarray(post.loc[j]), l @ np.asarray(post.scale[j])
        proj = np.linalg.solve(model.kmm(z, np), model.kernel(z, TEST_X, np))
        means.append(proj.T @ m_u)
        variances.append(model.variance - np.sum(model.kernel(z, TEST_X, np) * proj, 0) + np.sum((r.T @ proj) ** 2, 0))
    w = np.array([0.3, 0.7])
    mean = w @ np.array(means)
    var = w @ (np.array(variances) + np.array(means) ** 2) - mean**2
    got_mean, got_var = jax.jit(lambda p: p.predict(jnp.asarray(TEST_X)))(post)
    np.testing.assert_allclose(np.asarray(got_mean), mean, atol=1e-9)
    np.testing.assert_allclose(np.asarray(got_var), var, atol=1e-9)


def test_mixture_mean_and_covariance_match_draws():
    """θ = (vec Z, u): the closed-form mean and covariance against 20,000 draws. Tolerance: 5
    Monte Carlo standard errors of each entry (sd / sqrt(n) for the mean; for the covariance the
    standard error of a product moment, estimated from the draws)."""
    model, _ = problem(num_inducing=3)
    post = _two_component_posterior(model)
    draws = np.asarray(jax.jit(lambda p: p.sample(jax.random.key(5), 20_000))(post))
    assert draws.shape == (20_000, 3 * 2)
    se = draws.std(0) / np.sqrt(len(draws))
    mean, cov = jax.jit(lambda p: (p.mean(), p.cov()))(post)
    assert np.all(np.abs(draws.mean(0) - np.asarray(mean)) < 5 * se + 1e-12)
    centred = draws - draws.mean(0)
    products = centred[:, :, None] * centred[:, None, :]
    cov_se = products.std(0) / np.sqrt(len(draws))
    assert np.all(np.abs(products.mean(0) - np.asarray(cov)) < 5 * cov_se + 1e-9)


@pytest.mark.parametrize("eta", [1.0, 0.25, 1 / 1024])
def test_harmonic_steps_temper_the_likelihood_by_one_minus_the_product(eta):
    """F.1's prox step ``Λ ← (1-γ)Λ + γ(I + P)``, ``h ← (1-γ)h + γr`` from the prior ``(I, 0)`` with
    the same batch statistics at every step and ``γ_t = η/t``: after ``T`` steps the iterate is the
    power posterior ``(I + λ_T P, λ_T r)`` with ``λ_T = 1 - Π_{t≤T}(1 - η/t)``. η = 1 gives λ = 1
    from the first step (the posterior); η < 1 keeps λ_T < 1 at every finite ``T`` (at η = 1/1024
    and ``T`` = 64, λ ≈ 0.005): the likelihood tempered, which is what a held-out criterion on a
    model with too small a noise variance rewards (``workflow/config/tuning.yaml``, sparse_gp)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 4))
    p, r = a @ a.T, rng.standard_normal(4)
    prec, shift = jnp.eye(4), jnp.zeros(4)
    for t in range(1, 65):
        prec, shift = prox_update(prec, shift, eta / t, (jnp.asarray(p), jnp.asarray(r), 0.0))
    lam = 1.0 - np.prod(1.0 - eta / np.arange(1, 65))
    np.testing.assert_allclose(np.asarray(prec), np.eye(4) + lam * p, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.asarray(shift), lam * r, rtol=1e-10, atol=1e-12)
    assert lam == 1.0 if eta == 1.0 else 0.0 < lam < 0.9
    assert eta != 1 / 1024 or 0.004 < lam < 0.006
