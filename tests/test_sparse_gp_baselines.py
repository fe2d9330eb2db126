"""The sparse-GP competitors (baselines/gp): SoD against the exact GP on its subset, SVI-GP against
Titsias' q(u), one-pass SMC-GP started at the SoD posterior."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmd_bench.baselines.gp import SVIGP, OnePassSMCGP, SubsetOfData
from pmd_bench.baselines.gp.smc_gp import whitened_regression
from pmd import ConfigError, run
from pmd.models.sparse_gp import exact_gp_predict, features, titsias_elbo, titsias_predict

from sparse_gp_helpers import TEST_X, predict, problem, x64  # noqa: F401  (x64: autouse fixture)


def _rows_of(data, inputs):
    """The targets of the training rows whose inputs are ``inputs`` (inputs are distinct draws)."""
    idx = [int(np.flatnonzero(data["x"][:, 0] == v)[0]) for v in np.asarray(inputs)[:, 0]]
    return np.asarray(data["y"])[idx]


def test_sod_is_the_exact_gp_on_its_subset():
    """SoD is the model's exact posterior with Z = X_s given (X_s, y_s), i.e. Titsias' predictive
    there (float64 round-off: 1e-7), and so the exact GP on the subset up to the jitter ε = 1e-6
    on u's prior (tolerance 1e-3 on function values of size ~1)."""
    model, data = problem()
    method = SubsetOfData(model, 256, data=data, subset_size=24)
    result = run(method, data, jax.random.key(0), batch_size=32, num_passes=1, eval_every=64)
    assert list(result.visited) == [0, 24, 24, 24, 24]  # solved at the first step, then nothing visited
    z = np.asarray(result.posterior.inducing[0])
    assert len(np.unique(z)) == 24
    y = _rows_of(data, z)
    mean, var = titsias_predict(model, z, z, y, TEST_X)
    got_mean, got_var = predict(result.posterior)
    np.testing.assert_allclose(np.asarray(got_mean), mean, atol=1e-7)
    np.testing.assert_allclose(np.asarray(got_var), var, atol=1e-7)
    exact_mean, exact_var = exact_gp_predict(model, z, y, TEST_X)
    np.testing.assert_allclose(np.asarray(got_mean), exact_mean, atol=1e-3)
    np.testing.assert_allclose(np.asarray(got_var), exact_var, atol=1e-3)


def test_svi_gp_harmonic_pass_is_titsias():
    """ρ_t = 1/t over one pass: Hensman's natural-gradient iterate is exactly Titsias' q(u) for its
    Z (float64 round-off: 1e-7); its Z are M distinct training inputs; Hensman's bound on the full
    data has risen from the prior's."""
    model, data = problem()
    method = SVIGP(model, 256, data=data, step_size={"kind": "harmonic"})
    result = run(method, data, jax.random.key(1), batch_size=32, num_passes=1)
    post = result.posterior
    z = np.asarray(post.inducing[0])
    assert len(np.unique(z)) == model.num_inducing and np.all(np.isin(z, data["x"]))
    mean, var = titsias_predict(model, z, data["x"], data["y"], TEST_X)
    got_mean, got_var = predict(post)
    np.testing.assert_allclose(np.asarray(got_mean), mean, atol=1e-7)
    np.testing.assert_allclose(np.asarray(got_var), var, atol=1e-7)
    full = {k: jnp.asarray(v) for k, v in data.items()}
    assert float(method.elbo(result.state, full)) > float(method.elbo(method.init(jax.random.key(1)), full))


def test_smc_gp_starts_at_the_sod_posterior_and_reads_one_pass():
    """2,000 particles drawn from the SoD posterior: their mean predictive at the test inputs is the
    SoD mean within 5 Monte Carlo standard errors (sd of the particles' predictions / sqrt(4000))."""
    model, data = problem()
    method = OnePassSMCGP(model, 256, num_particles=2000, data=data)
    state = jax.jit(method.init)(jax.random.key(3))
    z = np.asarray(state.inducing)
    sod_mean, _ = titsias_predict(model, z, z, _rows_of(data, z), TEST_X)
    a = np.asarray(features(model, state.inducing, state.chol_k, jnp.asarray(TEST_X)))
    preds = np.asarray(state.smc.positions) @ a.T
    se = preds.std(0) / np.sqrt(2000)
    assert np.all(np.abs(preds.mean(0) - sod_mean) < 5 * se + 1e-9)
    result = run(OnePassSMCGP(model, 256, num_particles=16, data=data), data, jax.random.key(4), batch_size=32,
                 num_passes=2, eval_every=128)
    assert result.visited[-1] == 256  # one pass: the second reads nothing
    assert result.posterior.inducing.shape == (16, model.num_inducing, 1)
    assert np.all(np.isfinite(predict(result.posterior)[0]))


def test_whitened_regression_is_the_sparse_gp_likelihood():
    """The SMC's model for a fixed Z: Σ log N(y | aᵀv, β⁻¹) with a = L⁻¹K_mx, against the
    likelihood written with u = Lv in NumPy (K_xm K_mm⁻¹ u)."""
    model, data = problem(n=20)
    z = np.linspace(-0.4, 0.4, model.num_inducing)[:, None]
    from pmd.models.sparse_gp import whitening

    chol = np.asarray(whitening(model, jnp.asarray(z)))
    v = np.random.default_rng(0).normal(size=model.num_inducing)
    mean = model.kernel(data["x"], z, np) @ np.linalg.solve(model.kmm(z, np), chol @ v)
    direct = np.sum(-0.5 * (data["y"] - mean) ** 2 / model.noise_variance - 0.5 * np.log(2 * np.pi * model.noise_variance))
    a = features(model, jnp.asarray(z), jnp.asarray(chol), jnp.asarray(data["x"]))
    got = whitened_regression(model).batch_log_likelihood(jnp.asarray(v)[None], {"a": a, "y": jnp.asarray(data["y"])})
    assert float(jnp.sum(got)) == pytest.approx(direct, rel=1e-9)


def test_bad_configuration_names_the_field():
    model, data = problem()
    for cls in (SVIGP, SubsetOfData):
        with pytest.raises(ConfigError, match="num_particles"):
            cls(model, 256, num_particles=4, data=data)
        with pytest.raises(ConfigError, match="data="):
            cls(model, 256)
    with pytest.raises(ConfigError, match="subset_size"):
        SubsetOfData(model, 256, data=data, subset_size=1000)
    with pytest.raises(ConfigError, match="inducing"):
        SVIGP(model, 256, data=data, inducing="kmeans")
    with pytest.raises(ConfigError, match="rows"):
        OnePassSMCGP(model, 100, data=data)


def test_gpjax_svgp_is_our_svi_gp():
    """GPJax's whitened SVGP with natural gradients, same kernel, noise, Z draw (same key) and step
    sizes, lands on the same q(u) as our SVI-GP after one pass of H.3's steps: the two compute the
    same affine map in different coordinates, so they agree to float64 round-off (1e-8 on the
    predictive), and GPJax's ELBO on the last batch is Hensman's bound of that batch."""
    from pmd_bench.baselines.peers.gpjax_sgp import GPJaxSVGP

    model, data = problem()
    ours = run(SVIGP(model, 256, data=data), data, jax.random.key(7), batch_size=64, num_passes=1)
    theirs = run(GPJaxSVGP(model, 256, data=data), data, jax.random.key(7), batch_size=64, num_passes=1)
    np.testing.assert_array_equal(np.asarray(ours.posterior.inducing), np.asarray(theirs.posterior.inducing))
    for a, b in zip(predict(ours.posterior), predict(theirs.posterior)):
        np.testing.assert_allclose(a, b, atol=1e-8)
    assert np.all(np.isfinite(theirs.info["elbo"]))


def test_gpjax_collapsed_sparse_gp_is_our_titsias_posterior():
    """GPJax's CollapsedVariationalGaussian for the same Z: its collapsed bound is our Titsias bound
    and its predictive our Titsias predictive (float64 round-off, 1e-9), except that GPJax adds its
    jitter ε s² to the predictive variance (it predicts k** + ε s² - ...): checked exactly too."""
    from pmd_bench.baselines.peers.gpjax_sgp import gpjax_collapsed

    model, data = problem()
    z = np.linspace(-0.45, 0.45, model.num_inducing)[:, None]
    elbo, mean, var = gpjax_collapsed(model, jnp.asarray(z), {k: jnp.asarray(v) for k, v in data.items()},
                                      jnp.asarray(TEST_X))
    assert float(elbo) == pytest.approx(titsias_elbo(model, z, data["x"], data["y"]), abs=1e-9)
    ours_mean, ours_var = titsias_predict(model, z, data["x"], data["y"], TEST_X)
    np.testing.assert_allclose(np.asarray(mean).ravel(), ours_mean, atol=1e-9)
    np.testing.assert_allclose(np.asarray(var).ravel() - model.jitter * model.variance, ours_var, atol=1e-9)
