"""The sparse-GP competitors (baselines/gp): SoD against the exact GP on its subset, SVI-GP against
Titsias' q(u), one-pass SMC-GP started at the SoD posterior; GPJax's SVGP against SVI-GP, and with
Z and the hyperparameters learned, against the fixed row from a poor start on simulated GP data."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmd_bench.baselines.gp import SVIGP, OnePassSMCGP, SubsetOfData
from pmd_bench.baselines.gp.smc_gp import whitened_regression
from pmd import ConfigError, run
from pmd.models.sparse_gp import SparseGP, exact_gp_predict, features, rbf, svgp_elbo, titsias_elbo, titsias_predict

from sparse_gp_helpers import TEST_X, predict, problem, x64  # noqa: F401  (x64: autouse fixture)


def _rows_of(data, inputs):
    """The targets of the training rows whose inputs are ``inputs`` (inputs are distinct draws)."""
    idx = [int(np.flatnonzero(data["x"][:, 0] == v)[0]) for v in np.asarray(inputs)[:, 0]]
    return np.asarray(data["y"])[idx]


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
    from pmd_bench.baselines.peers.gpjax_sgp import GPJaxSVGPLearned

    with pytest.raises(ConfigError, match="learning_rate"):
        GPJaxSVGPLearned(model, 256, data=data, learning_rate=0.0)


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_gpjax_svgp_learned_at_a_vanishing_learning_rate_is_the_fixed_row():
    """With Adam's learning rate at 1e-12 the learned row moves Z and the hyperparameters by about
    1e-12 (Adam's step is about its learning rate whatever the gradient), so with the same key it
    sees the same Z draw and mini-batches and takes the same natural-gradient steps as the fixed
    row: the same predictive to 1e-8 (the fixed-row test's tolerance), and its fitted model is
    the model to 1e-9 relative. Its state keeps its types, weak ones included, across steps: a
    state whose types change recompiles the runner's jitted scan at every evaluation."""
    from pmd_bench.baselines.peers.gpjax_sgp import GPJaxSVGP, GPJaxSVGPLearned

    model, data = problem()
    fixed = run(GPJaxSVGP(model, 256, data=data), data, jax.random.key(7), batch_size=64, num_passes=1)
    method = GPJaxSVGPLearned(model, 256, data=data, learning_rate=1e-12)
    learned = run(method, data, jax.random.key(7), batch_size=64, num_passes=1)
    for a, b in zip(predict(fixed.posterior), predict(learned.posterior)):
        np.testing.assert_allclose(a, b, atol=1e-8)
    fitted = method.fitted_model(learned.state)
    for name in ("lengthscale", "variance", "noise_variance"):
        assert getattr(fitted, name) == pytest.approx(getattr(model, name), rel=1e-9)
    kinds = lambda state: [(a.dtype, a.weak_type) for a in jax.tree_util.tree_leaves(state)]  # noqa: E731
    assert kinds(learned.state) == kinds(method.init(jax.random.key(7)))


# Simulated data with known hyperparameters: f from the GP (RBF, lengthscale 0.1, variance 1) at
# 512 training and 200 held-out inputs on [-0.5, 0.5], noise variance 0.01.
TRUTH = {"lengthscale": 0.1, "variance": 1.0, "noise_variance": 0.01}
POOR = {"lengthscale": 0.01, "variance": 1.0, "noise_variance": 0.001}  # lengthscale and noise 10x too small
CLUSTER = (-0.5, -0.4)  # the poor start's 16 inducing inputs, evenly in a tenth of the inputs' range


@pytest.fixture(scope="module")
def poor_start():
    """The fixed and the learned GPJax rows from the poor start (the model at ``POOR``, Z in
    ``CLUSTER``), 40 passes of batches of 64 (320 steps), both through :func:`pmd.run`, which
    compiles the steps into one jitted ``lax.scan``: ``{name: (method, result)}``, the data and
    the held-out ``(x, f)``. Module-scoped, so built before the per-test float64 fixture: its own
    ``enable_x64`` (the results keep their float64 arrays)."""
    from pmd_bench.baselines.peers.gpjax_sgp import GPJaxSVGP, GPJaxSVGPLearned

    with jax.enable_x64(True):
        rng = np.random.default_rng(0)
        x = rng.uniform(-0.5, 0.5, (712, 1))
        k = rbf(x, x, TRUTH["lengthscale"], TRUTH["variance"], np) + 1e-8 * np.eye(len(x))
        f = np.linalg.cholesky(k) @ rng.standard_normal(len(x))
        y = f + np.sqrt(TRUTH["noise_variance"]) * rng.standard_normal(len(x))
        data = {"x": x[:512], "y": y[:512]}
        model = SparseGP(**POOR, num_inducing=16, lower=(-0.5,), upper=(0.5,), jitter=1e-6)
        z = jnp.linspace(*CLUSTER, 16)[:, None]
        runs = {}
        for name, cls in (("fixed", GPJaxSVGP), ("learned", GPJaxSVGPLearned)):
            method = cls(model, 512, data=data)
            method.init = lambda key, method=method: method.start(z)  # the poor start instead of a random Z
            runs[name] = method, run(method, data, jax.random.key(0), batch_size=64, num_passes=40)
    return runs, data, (x[512:], f[512:])


@pytest.mark.slow
def test_gpjax_svgp_learned_beats_the_fixed_row_from_a_poor_start(poor_start):
    """Both rows are scored by Hensman's full-data bound at the hyperparameters each ends with (a
    lower bound on log p(y | θ) at that θ) and by the RMSE of the predictive mean to the held-out
    f. The learned row's bound is at least the fixed row's and its RMSE at most the fixed row's,
    tolerance 0: one-sided comparisons of deterministic float64 runs (measured: bound -1.8e4
    against -4.1e5, RMSE 0.65 against 0.79, margins far above round-off). Its ELBO estimates on the
    batches (the ``elbo`` info) are finite."""
    runs, data, (test_x, test_f) = poor_start
    full = {k: jnp.asarray(v) for k, v in data.items()}
    bound, rmse = {}, {}
    for name, (method, result) in runs.items():
        post = result.posterior
        bound[name] = float(svgp_elbo(method.fitted_model(result.state), post.inducing[0], post.chol_k[0],
                                      post.loc[0], post.scale[0], full, 512))
        rmse[name] = float(np.sqrt(np.mean((predict(post, test_x)[0] - test_f) ** 2)))
    assert bound["learned"] >= bound["fixed"]
    assert rmse["learned"] <= rmse["fixed"]
    assert np.all(np.isfinite(runs["learned"][1].info["elbo"]))


def test_gpjax_svgp_learned_moves_the_hyperparameters_toward_the_truth(poor_start):
    """From 10x too small, the lengthscale and the noise variance end at most half as far from the
    truth as they started, in log scale (measured: 0.40 and 0.04 of the start's distance; 320
    Adam steps of 1e-2 move a log-scale parameter at most about 3.2). The inducing inputs leave
    their cluster: the largest ends at least 0.2 past its edge (measured: 0.37). The signal
    variance, started at the truth, is not checked: it falls (to 0.44 here) while Z covers the
    inputs poorly at a short lengthscale, the trace term -s²/(2σ²) Σ(1 - ‖a_i‖²/s²) of the bound
    pulling it down; the fixed row keeps everything where it started."""
    runs, _, _ = poor_start
    (fixed, fixed_result), (learned, learned_result) = runs["fixed"], runs["learned"]
    fitted = learned.fitted_model(learned_result.state)
    for name in ("lengthscale", "noise_variance"):
        start = abs(np.log(POOR[name] / TRUTH[name]))
        assert abs(np.log(getattr(fitted, name) / TRUTH[name])) <= 0.5 * start, (name, getattr(fitted, name))
    assert float(learned_result.posterior.inducing.max()) >= CLUSTER[1] + 0.2
    np.testing.assert_allclose(np.asarray(fixed_result.posterior.inducing[0]), np.linspace(*CLUSTER, 16)[:, None])
    assert fixed.fitted_model(fixed_result.state).lengthscale == pytest.approx(POOR["lengthscale"], rel=1e-9)


@pytest.mark.slow
def test_gpjax_svgp_learned_posterior_is_gpjaxs_predictive(poor_start):
    """The posterior read back from the learned state (its Z, kernel and whitening factor) predicts
    what GPJax's own ``family.predict`` does at the held-out inputs: to 1e-9 on values of order 1, as
    the collapsed test above (float64; the two compute K_zz and its factor along different paths,
    measured within 1e-12), GPJax's variance less the jitter it adds."""
    import equinox as eqx

    runs, _, (test_x, _) = poor_start
    _, result = runs["learned"]
    family = eqx.combine(result.state.variational, result.state.hyper)
    theirs = family.predict(jnp.asarray(test_x))
    mean, var = predict(result.posterior, test_x)
    np.testing.assert_allclose(mean, np.asarray(theirs.mean), atol=1e-9)
    np.testing.assert_allclose(var, np.asarray(theirs.variance) - family.model.prior.jitter, atol=1e-9)
