"""``pmd.from_numpyro``: a NumPyro model's densities, prior draws and column maps (pmd/numpyro.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd

numpyro = pytest.importorskip("numpyro")
dist = pytest.importorskip("numpyro.distributions")

N, K = 300, 2


def regression(x, y=None):
    """``y ~ N(x β, σ²)``, ``β ~ N(0, I)``, ``σ ~ HalfNormal(1)``: a plate sized by the data."""
    beta = numpyro.sample("beta", dist.Normal(0.0, 1.0).expand([x.shape[1]]).to_event(1))
    sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
    with numpyro.plate("rows", x.shape[0]):
        numpyro.sample("y", dist.Normal(x @ beta, sigma), obs=y)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, K)).astype(np.float32)
    y = (x @ np.array([0.7, -0.3]) + 0.5 * rng.normal(size=N)).astype(np.float32)
    model, data = pmd.from_numpyro(regression, x=x, y=y)
    return model, data


def total(model, data, theta):
    return model.log_prior(theta) + jnp.sum(jax.vmap(model.log_likelihood, (None, 0))(theta, data))


@pytest.mark.slow
def test_log_density_is_numpyros_on_the_unconstrained_scale(problem):
    """``log_prior + Σ log_likelihood`` equals minus NumPyro's own potential energy (the unconstrained
    log joint, Jacobians included) at prior draws, to float32 rounding."""
    from numpyro.infer.util import potential_energy

    model, data = problem
    assert model.dim == K + 1 and model.columns == ("beta[0]", "beta[1]", "sigma")
    for theta in model.sample_prior(jax.random.key(2), 4):
        params = {name: jnp.reshape(theta[s], shape) for name, s, shape in model.layout}
        expected = -potential_energy(regression, (), data, params)
        np.testing.assert_allclose(float(total(model, data, theta)), float(expected), rtol=1e-5)


def test_prior_draws_columns_and_jit(problem):
    model, _ = problem
    draws = model.sample_prior(jax.random.key(1), 4000)
    assert draws.shape == (4000, K + 1)
    # β ~ N(0, 1); log σ for σ ~ HalfNormal(1): E[log|Z|] = -(γ + log 2)/2 ≈ -0.635; 4000 draws: se ≈ 0.02
    np.testing.assert_allclose(np.mean(draws[:, :K], 0), 0.0, atol=0.08)
    np.testing.assert_allclose(np.mean(draws[:, K]), -(np.euler_gamma + np.log(2)) / 2, atol=0.1)
    theta = draws[0]
    np.testing.assert_allclose(model.to_columns(theta)[K], np.exp(theta[K]), rtol=1e-6)
    np.testing.assert_allclose(model.from_columns(model.to_columns(theta)), theta, atol=1e-5)
    np.testing.assert_allclose(jax.jit(model.log_prior)(theta), model.log_prior(theta), rtol=1e-6)


@pytest.mark.slow
def test_pmd_on_the_converted_model_reaches_nuts(problem):
    """The default PMD (300 particles, batch 15, 2 passes) ends within 0.2 posterior sd of NumPyro's own
    NUTS means (2 chains × 1000 draws): the bound set for the PyMC conversion, kept here."""
    from numpyro.infer import MCMC, NUTS

    model, data = problem
    mcmc = MCMC(NUTS(regression), num_warmup=500, num_samples=1000, num_chains=1, progress_bar=False)
    mcmc.run(jax.random.key(0), **data)
    samples = mcmc.get_samples()
    nuts = np.column_stack([samples["beta"], np.log(samples["sigma"])])
    method = pmd.PMD(model, data_size=N, num_particles=300, data=data)
    result = pmd.run(method, data, jax.random.key(0), batch_size=15, num_passes=2)
    error = np.abs(np.asarray(result.posterior.mean()) - nuts.mean(0)) / nuts.std(0)
    assert np.all(error <= 0.2), error


def test_bad_data_are_refused():
    with pytest.raises(ValueError, match="needs the model's data"):
        pmd.from_numpyro(regression)
    with pytest.raises(ValueError, match="first axes must all be the number of data points"):
        pmd.from_numpyro(regression, x=np.zeros((5, 2)), y=np.zeros(4))
