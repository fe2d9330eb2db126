"""``pmd.from_pymc``: a PyMC model's densities, data, prior draws and constrained map (pmd/pymc.py)."""

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd

pm = pytest.importorskip("pymc")

N, K = 500, 3


def regression(x_data=None, y_data=None):
    """Bayesian linear regression: ``y ~ N(x β, σ²)``, ``β ~ N(0, I)``, ``σ ~ HalfNormal(1)`` (log transform)."""
    rng = np.random.default_rng(0)
    x_data = rng.normal(size=(N, K)) if x_data is None else x_data
    y_data = x_data @ np.array([1.0, -0.5, 0.3]) + 0.7 * rng.normal(size=N) if y_data is None else y_data
    with pm.Model() as model:
        x = pm.Data("x", x_data)
        beta = pm.Normal("beta", 0.0, 1.0, shape=K)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", x @ beta, sigma, observed=y_data)
    return model


@pytest.fixture(scope="module")
def converted():
    pm_model = regression()
    model, data = pmd.from_pymc(pm_model)
    return pm_model, model, data


def total_log_density(model, data, theta):
    return model.log_prior(theta) + jnp.sum(jax.vmap(model.log_likelihood, (None, 0))(theta, data))


def points(model, pm_model):
    thetas = np.asarray(model.sample_prior(jax.random.key(3), 4))
    return thetas, [{name: theta[s].reshape(shape) for name, s, shape in model.layout} for theta in thetas]


def test_import_pmd_does_not_import_pymc():
    import subprocess

    code = "import pmd, sys; assert 'pymc' not in sys.modules and 'pytensor' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_layout_data_and_log_density_match_pymc(converted):
    pm_model, model, data = converted
    assert model.dim == K + 1
    assert [name for name, _, _ in model.layout] == ["beta", "sigma_log__"]
    assert set(data) == {"x", "y"} and data["x"].shape == (N, K) and data["y"].shape == (N,)
    assert model.check_batch(data) == N
    logp = pm_model.compile_logp()  # jacobian=True: the same unconstrained-scale density
    thetas, pm_points = points(model, pm_model)
    for theta, point in zip(thetas, pm_points):
        ours = float(total_log_density(model, data, jnp.asarray(theta)))
        np.testing.assert_allclose(ours, logp(point), rtol=1e-5)


def test_constrain_and_prior_draws(converted):
    _, model, _ = converted
    theta = jnp.array([0.5, -0.2, 0.1, np.log(0.8)], jnp.float32)
    values = model.constrain(theta)
    np.testing.assert_allclose(values["beta"], [0.5, -0.2, 0.1])
    np.testing.assert_allclose(values["sigma"], 0.8, rtol=1e-6)
    draws = model.sample_prior(jax.random.key(1), 4000)
    assert draws.shape == (4000, K + 1) and draws.dtype == jnp.float32
    np.testing.assert_array_equal(draws[:5], model.sample_prior(jax.random.key(1), 5))  # keyed
    assert not np.array_equal(draws[:5], model.sample_prior(jax.random.key(2), 5))
    np.testing.assert_array_equal(draws[:5], jax.jit(lambda k: model.sample_prior(k, 5))(jax.random.key(1)))
    # β ~ N(0, 1); log σ for σ ~ HalfNormal(1): E[log|Z|] = -(γ + log 2)/2 ≈ -0.635; 4000 draws: se ≈ 0.02
    np.testing.assert_allclose(np.mean(draws[:, :K], 0), 0.0, atol=0.08)
    np.testing.assert_allclose(np.std(draws[:, :K], 0), 1.0, atol=0.08)
    np.testing.assert_allclose(np.mean(draws[:, K]), -(np.euler_gamma + np.log(2)) / 2, atol=0.1)


def test_float64_flag_unchanged():
    before = jax.config.jax_enable_x64
    pmd.from_pymc(regression())
    assert jax.config.jax_enable_x64 == before
    assert jnp.zeros(1).dtype == (jnp.float64 if before else jnp.float32)


def test_whole_data_set_as_one_datum(converted):
    pm_model, model, data = converted
    whole, whole_data = pmd.from_pymc(pm_model, datum_axis=None)
    assert whole.check_batch(whole_data) == 1
    assert whole_data["x"].shape == (1, N, K)
    thetas, _ = points(model, pm_model)
    for theta in thetas:
        np.testing.assert_allclose(total_log_density(whole, whole_data, jnp.asarray(theta)),
                                   total_log_density(model, data, jnp.asarray(theta)), rtol=1e-5)


def test_datum_axis_mapping_holds_unnamed_data_fixed(converted):
    pm_model, model, data = converted
    named, named_data = pmd.from_pymc(pm_model, datum_axis={"y": 0, "x": 0})
    assert set(named_data) == {"x", "y"}
    theta = jnp.asarray(points(model, pm_model)[0][0])
    np.testing.assert_allclose(total_log_density(named, named_data, theta), total_log_density(model, data, theta),
                               rtol=1e-5)


def test_errors():
    with pm.Model() as no_observed:
        pm.Normal("mu")
    with pytest.raises(ValueError, match="no observed variable"):
        pmd.from_pymc(no_observed)
    with pm.Model() as discrete:
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", k, 1.0, observed=np.zeros(4))
    with pytest.raises(ValueError, match="'k' is discrete"):
        pmd.from_pymc(discrete)
    with pm.Model() as two_lengths:
        mu = pm.Normal("mu")
        pm.Normal("a", mu, 1.0, observed=np.zeros(4))
        pm.Normal("b", mu, 1.0, observed=np.zeros(5))
    with pytest.raises(ValueError, match="'b' has 5 data along its datum axis, 'a' has 4"):
        pmd.from_pymc(two_lengths)
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        pmd.from_pymc(two_lengths, datum_axis={"a": 0})
    with pytest.raises(ValueError, match="out of range for 'a'"):
        pmd.from_pymc(two_lengths, datum_axis=1)


@pytest.mark.slow
def test_pmd_matches_nuts(converted):
    pm_model, model, data = converted
    with pm_model:
        idata = pm.sample(draws=1000, tune=1000, chains=2, cores=1, random_seed=0, progressbar=False,
                          compute_convergence_checks=False)
    post = idata.posterior
    nuts = np.column_stack([post["beta"].values.reshape(-1, K), np.log(post["sigma"].values.reshape(-1))])
    method = pmd.PMD(model, data_size=N, num_particles=300, data=data)
    result = pmd.run(method, data, jax.random.key(0), batch_size=25, num_passes=2)
    errors = np.abs(np.asarray(result.posterior.mean()) - nuts.mean(0)) / nuts.std(0)
    print("PMD vs NUTS posterior mean error in posterior sd (beta, log sigma):", np.round(errors, 3))
    # On θ's unconstrained scale (log σ), where PMD works. The Monte Carlo error of a mean in posterior
    # sd is 1/√ESS: NUTS's 2000 draws (ESS ~ 1000-2000) contribute ~0.03, PMD's 300 weighted particles
    # (ESS ≥ 100 after resampling) ~0.1; 0.2 sd is twice the larger with room for PMD's KDE smoothing.
    assert np.all(errors < 0.2), errors


@pytest.mark.slow
def test_columns_round_trip_with_dependent_bounds():
    """``to_columns``/``from_columns`` are inverse maps, bounds that depend on another free variable
    included (``beta1 ~ U(0, 1 - alpha1)``, garch's constraint), and the columns are named in C order."""
    rng = np.random.default_rng(0)
    with pm.Model() as pm_model:
        alpha1 = pm.Uniform("alpha1", 0, 1)
        beta1 = pm.Uniform("beta1", 0, 1 - alpha1)
        beta = pm.Normal("beta", 0, 1, shape=(2, 2))
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", beta[0, 0] + alpha1 + beta1, sigma, observed=rng.normal(size=20))
    model, _ = pmd.from_pymc(pm_model)
    assert model.columns == ("alpha1", "beta1", "beta[0,0]", "beta[0,1]", "beta[1,0]", "beta[1,1]", "sigma")
    for theta in model.sample_prior(jax.random.key(0), 5):
        values = model.to_columns(theta)
        constrained = model.constrain(theta)
        assert 0 < values[1] < 1 - values[0]
        np.testing.assert_allclose(values[2:6], np.ravel(constrained["beta"]))
        np.testing.assert_allclose(values[6], constrained["sigma"])
        np.testing.assert_allclose(model.from_columns(values), theta, atol=1e-5)


@pytest.mark.slow
def test_potentials_split_into_prior_and_per_datum_terms():
    """A potential that reads no data joins the prior; one elementwise in the rows joins each datum's
    likelihood: the total still equals PyMC's own log density, and the prior alone is the free
    variables' densities plus the data-free potential."""
    rng = np.random.default_rng(1)
    x_data, y_data = rng.normal(size=(60, 2)), rng.normal(size=60)
    with pm.Model() as pm_model:
        x, y = pm.Data("x", x_data), pm.Data("y", y_data)
        beta = pm.Normal("beta", 0.0, 1.0, shape=2)
        pm.Potential("shrink", -0.5 * pm.math.sum(beta) ** 2)
        pm.Normal("obs", x @ beta, 1.0, observed=y)
        pm.Potential("extra", -pm.math.abs(y - x @ beta))  # a Laplace term per row
    model, data = pmd.from_pymc(pm_model)
    logp = pm_model.compile_logp()
    for theta in np.asarray(model.sample_prior(jax.random.key(0), 3)):
        point = {"beta": theta}
        np.testing.assert_allclose(float(total_log_density(model, data, jnp.asarray(theta))), logp(point), rtol=1e-5)
        prior = -0.5 * np.sum(theta**2) - np.log(2 * np.pi) - 0.5 * np.sum(theta) ** 2
        np.testing.assert_allclose(float(model.log_prior(jnp.asarray(theta))), prior, rtol=1e-5)


def test_a_potential_mixing_the_rows_is_refused_by_name():
    rng = np.random.default_rng(1)
    with pm.Model() as pm_model:
        y = pm.Data("y", rng.normal(size=60))
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("obs", mu, 1.0, observed=y)
        pm.Potential("total", -pm.math.sum(y - mu) ** 2)
    with pytest.raises(ValueError, match=r"potential 'total' reads the data \('y'\) but its value, of shape \(\), "
                                         r"has no datum axis 0 of length 60"):
        pmd.from_pymc(pm_model)
