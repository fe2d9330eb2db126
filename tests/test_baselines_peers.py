"""The BlackJAX and NumPyro peers (baselines.peers) against the conjugate Gaussian's closed form.

Every case is ``θ ~ N(0, I_d)``, ``x_n ~ N(θ, I_d)``, ``N = 100``, so the posterior is
``N(μ_N, v I)`` with ``v = 1/101``, for ``d = 2`` and ``d = 5``, driven by :func:`pmd.run`.

SMC (``m = 2000`` particles, final ESS ``n``). The weighted mean of ``n`` effective draws has
standard error ``sqrt(v/n)`` per coordinate; a weighted variance has relative standard error
``sqrt(2/n)`` (Gaussian kurtosis) and an off-diagonal covariance ``v/sqrt(n)``. Tolerances are 4 of
those. The ESS-based errors ignore what resampling and imperfect MCMC moves add, so they were
checked against the spread between runs: over 80 replicates with other seeds (d = 5) the
errors of the mean were 0.93 (tempered) and 0.96 (data-tempered) of those standard errors, the
errors of the variances 0.83 and 1.07.

NumPyro SVI (8 ELBO draws, default Adam step 1e-2, 2000 mini-batches of 10). With a constant
step the final iterate fluctuates around the optimum, which is the exact posterior (a full-rank
Gaussian family contains it). Over 20 seeds per dimension that fluctuation had root mean square
at most 0.077 posterior standard deviations for the mean, 0.105 relative for the variances and
0.077 ``v`` for the off-diagonal covariances (d = 5; d = 2 was smaller); tolerances are 4 of
those. A mis-scaled likelihood factor (``Σ_b`` without ``N/B``) would be off by a factor 10.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd_bench.baselines.peers import DataTemperedSMC, NumPyroSVI, TemperedSMC
from baselines_helpers import Conjugate
from pmd.models.conjugate import ConjugateGaussian

N, M = 100, 2000
SVI_RMS_MEAN, SVI_RMS_VAR, SVI_RMS_COV = 0.077, 0.105, 0.077
CONJ = Conjugate.make(num_data=N)


def _conjugate(dim: int, prior_std: float = 1.0, seed: int = 0, theta=None) -> Conjugate:
    """The conjugate problem in ``dim`` dimensions with ``N`` rows simulated from ``seed`` (at ``θ*``
    = ``theta`` if given, else a prior draw); the module's ``CONJ`` for its own settings."""
    if theta is None and (dim, prior_std, seed) == (2, 1.0, 0):
        return CONJ
    problem = ConjugateGaussian(dim=dim, prior_std=prior_std)
    _, x = problem.simulate(seed, N, theta=theta)
    return Conjugate(problem, x.astype(np.float32), *problem.posterior(x))


def _check_particles(post, conj: Conjugate) -> None:
    """Mean, variances and covariances within 4 ESS-based standard errors (module docstring)."""
    ess = float(post.effective_sample_size())
    v, d = conj.cov[0, 0], conj.mean.shape[0]
    np.testing.assert_array_less(np.abs(np.asarray(post.mean()) - conj.mean), 4 * np.sqrt(v / ess))
    cov = np.asarray(post.cov())
    np.testing.assert_array_less(np.abs(np.diag(cov) / v - 1.0), 4 * np.sqrt(2 / ess))
    np.testing.assert_array_less(np.abs(cov[~np.eye(d, dtype=bool)]), 4 * v / np.sqrt(ess))


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 5])
def test_tempered_smc_recovers_conjugate_posterior(dim):
    """One step per tempering stage, each reading all N points, until λ = 1; then no-ops. A stage's
    rows read are its likelihood terms over the particles (two weighings of all N rows and every
    particle's leapfrog gradients), far more than N: they were recorded as N."""
    conj = _conjugate(dim)
    algo = TemperedSMC(conj.model, data_size=N, num_particles=M, data=conj.data)
    res = pmd.run(algo, conj.data, jax.random.key(dim), batch_size=N, num_passes=15)
    stages = int(np.sum(res.info["visited"] > 0))
    assert 1 < stages < 15
    np.testing.assert_array_equal(res.info["visited"][stages:], 0)
    np.testing.assert_allclose(res.info["visited"], res.info["evals"] / M, atol=1)  # rounded in float32
    assert np.all(res.info["visited"][:stages] > 3 * N)
    assert np.all(np.diff(res.info["temperature"]) >= 0)
    np.testing.assert_array_equal(res.info["temperature"][stages - 1:], 1.0)
    assert res.visited[-1] == np.sum(res.info["visited"])
    _check_particles(res.posterior, conj)


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 5])
def test_data_tempered_smc_recovers_conjugate_posterior(dim):
    """Batches of 10 over 1.2 passes: ten steps of 10 new points, then two no-ops."""
    conj = _conjugate(dim)
    algo = DataTemperedSMC(conj.model, data_size=N, num_particles=M, data=conj.data)
    res = pmd.run(algo, conj.data, jax.random.key(dim), batch_size=10, num_passes=1.2)
    np.testing.assert_array_equal(res.info["visited"][10:], 0)
    np.testing.assert_allclose(res.info["visited"], res.info["evals"] / M, atol=1)  # rounded in float32
    assert np.all(res.info["visited"][:10] >= 10)  # the batch's rows, and the moves' reads of the rows seen
    assert 1 <= int(np.sum(res.info["resampled"])) < 10
    assert int(res.state.seen) == N
    np.testing.assert_array_equal(algo.data_mask(res.state.order, res.state.seen), 1.0)
    _check_particles(res.posterior, conj)


@pytest.mark.slow
def test_data_tempered_smc_brings_in_a_batch_the_prior_explains_badly_in_stages():
    """Prior sd 10 in d = 5, batches of 50: each coordinate's first-batch likelihood is about 70
    times narrower than the prior, so the whole batch at once would leave an ESS of about
    ``2000 / 70⁵ ≪ 1`` (the collapse of posteriordb's diamonds). Tempered in stages, each stage
    keeping half the particles, the batch comes in with several moves and the pass ends at the
    posterior, within the ESS-based tolerances of ``_check_particles``."""
    conj = _conjugate(5, prior_std=10.0, seed=1)
    algo = DataTemperedSMC(conj.model, data_size=N, num_particles=M, data=conj.data)
    res = pmd.run(algo, conj.data, jax.random.key(0), batch_size=50, num_passes=1)
    assert res.info["ess"][0] < 2  # what the batch's whole likelihood would leave
    assert res.info["moves"][0] > 3
    _check_particles(res.posterior, conj)


@pytest.mark.slow
def test_data_tempered_smc_drops_particles_outside_the_batch_support():
    """``x_n ~ N(θ, I)`` but ``p(x|θ) = 0`` where ``θ_0 < 0.25`` (its log written ``-∞`` or, for half
    of them, NaN): about 60 % of the prior draws lie outside the likelihood's support, and one batch
    brings in all ``N`` rows. The data sit at
    ``θ_0 = 1.5``, 12 posterior sds inside the support, so the posterior is the conjugate one to
    within ``e^-70``; tolerances those of ``_check_particles``. Before, no positive exponent kept
    the conditional ESS with 60 % of the increments at ``-∞``, the batch came in whole and left one
    particle (posteriordb's arma)."""
    conj = _conjugate(2, theta=np.array([1.5, 0.0]))
    base = conj.model
    outside = lambda th: jnp.where(th[1] > 0, -jnp.inf, jnp.nan)  # noqa: E731 (NaN counts as outside too)
    model = pmd.Model(base.dim, base.log_prior,
                      lambda th, xn: jnp.where(th[0] >= 0.25, base.log_likelihood(th, xn), outside(th)),
                      base.sample_prior, name="truncated-conjugate")
    algo = DataTemperedSMC(model, data_size=N, num_particles=M, data=conj.data)
    res = pmd.run(algo, conj.data, jax.random.key(0), batch_size=N, num_passes=1)
    assert res.info["moves"][0] > 1
    _check_particles(res.posterior, conj)


def test_hmc_mass_matrix_keeps_a_narrow_coordinate_beside_a_wide_one():
    """The move's inverse mass matrix is the cloud's covariance with a jitter relative to each
    coordinate's own variance: a slope 10⁴ times narrower than an intercept and correlated −0.999
    with it (posteriordb's kilpisjarvi) keeps its variance to 1e-5. A jitter of 1e-6 times the
    mean variance, as before, made it 50 times too wide."""
    key = jax.random.key(0)
    z = jax.random.normal(key, (4000, 2))
    slope = 1e-2 * z[:, 0]
    intercept = 1e2 * (-0.999 * z[:, 0] + np.sqrt(1 - 0.999**2) * z[:, 1])
    cloud = jnp.stack([intercept, slope], axis=1)
    algo = DataTemperedSMC(CONJ.model, data_size=N, num_particles=4000, data=CONJ.data)
    params = algo._move_parameters(key, cloud, jnp.zeros(4000), jnp.asarray(1.0))
    inverse_mass = np.asarray(params["inverse_mass_matrix"][0], np.float64)
    cov = np.cov(np.asarray(cloud, np.float64), rowvar=False, bias=True)
    np.testing.assert_allclose(np.diag(inverse_mass), np.diag(cov), rtol=1e-5)


@pytest.mark.slow
def test_data_tempering_adds_each_row_once():
    """Without resampling (threshold 0) the weights are the prior draws' likelihood of the rows
    added so far — the first 30 of the order drawn at init — normalised: importance sampling."""
    conj = _conjugate(2)
    algo = DataTemperedSMC(conj.model, data_size=N, num_particles=50, data=conj.data, threshold=0.0)
    state = algo.init(jax.random.key(0))
    start = state.particles
    for i in range(3):
        state, info = algo.step(jax.random.key(i), state, conj.data[:10])
        assert not bool(info["resampled"]) and int(info["visited"]) == 10
    mask = np.asarray(algo.data_mask(state.order, state.seen))
    assert mask.sum() == 30 and np.all(mask[np.asarray(state.order[:30])] == 1)
    loglik = np.asarray(conj.model.batch_log_likelihood(start, conj.data[mask > 0])).sum(axis=1)
    np.testing.assert_allclose(state.log_weights, loglik - np.logaddexp.reduce(loglik), rtol=1e-4, atol=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 5])
def test_numpyro_svi_recovers_conjugate_posterior(dim):
    conj = _conjugate(dim)
    algo = NumPyroSVI(conj.model, data_size=N, num_particles=8)
    res = pmd.run(algo, conj.data, jax.random.key(dim), batch_size=10, num_passes=200)
    post = res.posterior
    assert post.mean().dtype == np.float32  # nothing switched JAX to float64
    v = conj.cov[0, 0]
    np.testing.assert_array_less(np.abs(np.asarray(post.mean()) - conj.mean), 4 * SVI_RMS_MEAN * np.sqrt(v))
    cov = np.asarray(post.cov())
    np.testing.assert_array_less(np.abs(np.diag(cov) / v - 1.0), 4 * SVI_RMS_VAR)
    np.testing.assert_array_less(np.abs(cov[~np.eye(dim, dtype=bool)]) / v, 4 * SVI_RMS_COV)


BAD = [
    (TemperedSMC, {}, "data"),
    (TemperedSMC, {"data": CONJ.data[:50]}, "data_size"),
    (TemperedSMC, {"data": CONJ.data, "target_ess": 1.0}, "target_ess"),
    (TemperedSMC, {"data": CONJ.data, "target_ess": 0}, "target_ess"),
    (TemperedSMC, {"data": CONJ.data, "num_mcmc_steps": 0}, "num_mcmc_steps"),
    (TemperedSMC, {"data": CONJ.data, "trajectory_length": -1.0}, "trajectory_length"),
    (TemperedSMC, {"data": CONJ.data, "num_particles": 0}, "num_particles"),
    (DataTemperedSMC, {}, "data"),
    (DataTemperedSMC, {"data": CONJ.data, "threshold": 1.5}, "threshold"),
    (DataTemperedSMC, {"data": CONJ.data, "num_mcmc_steps": 2.5}, "num_mcmc_steps"),
    (NumPyroSVI, {"learning_rate": 0.0}, "learning_rate"),
    (NumPyroSVI, {"init_scale": -0.1}, "init_scale"),
    (NumPyroSVI, {"num_particles": 0}, "num_particles"),
    (NumPyroSVI, {"data_size": 0}, "data_size"),
]


@pytest.mark.parametrize("cls, kwargs, name", BAD, ids=[f"{c.__name__}-{n}-{i}" for i, (c, _, n) in enumerate(BAD)])
def test_bad_hyperparameters_fail_at_construction(cls, kwargs, name):
    args = {"data_size": N, "num_particles": 5, **kwargs}
    with pytest.raises(pmd.ConfigError, match=rf"\b{name}\b"):
        cls(CONJ.model, **args)


def _half_line(num_data: int = 50, seed: int = 0):
    """``θ ~ N(0, 1)``, ``x_n ~ N(θ, 1)`` observed only where ``θ > 0`` is possible: the likelihood is
    ``-∞`` for ``θ ≤ 0``, so half the prior's draws lie outside its support. The posterior is
    ``N(μ_N, v)`` truncated to ``θ > 0`` (``v = 1/(N+1)``, ``μ_N = Σx/(N+1)``), whose mean is
    ``μ_N + sqrt(v) φ(a)/(1 - Φ(a))`` with ``a = -μ_N/sqrt(v)``. The data are drawn at ``θ = 0.05``,
    so the truncation moves the mean by most of a posterior sd."""
    from scipy.stats import norm
    x = (0.05 + np.random.default_rng(seed).standard_normal(num_data)).astype(np.float32)[:, None]

    def loglik(theta, xi):
        return jnp.where(theta[0] > 0, -0.5 * jnp.sum((xi - theta) ** 2), -jnp.inf)

    model = pmd.Model(dim=1, log_prior=lambda t: -0.5 * jnp.sum(t ** 2), log_likelihood=loglik,
                      sample_prior=lambda k, n: jax.random.normal(k, (n, 1)), name="half-line")
    v = 1.0 / (num_data + 1)
    mu = float(x.sum()) * v
    a = -mu / np.sqrt(v)
    mean = mu + np.sqrt(v) * norm.pdf(a) / norm.sf(a)
    var = v * (1 + a * norm.pdf(a) / norm.sf(a) - (norm.pdf(a) / norm.sf(a)) ** 2)
    return model, jnp.asarray(x), mean, var


@pytest.mark.slow
def test_tempered_smc_starts_inside_the_likelihoods_support():
    """Half the prior's draws have log-likelihood -∞: BlackJAX started at the prior weights them
    by ``0 · ∞`` (NaN) at its first stage. Started at the prior restricted to the support (the path's
    ``λ → 0⁺`` limit) it reaches the truncated posterior: mean within 4 ESS-based standard errors,
    the start's redraws counted in the first stage's work."""
    model, x, mean, var = _half_line()
    n = x.shape[0]
    algo = TemperedSMC(model, data_size=n, num_particles=M, data=x)
    state = algo.init(jax.random.key(1))
    assert np.all(np.asarray(state.sampler.particles) > 0)
    rounds = float(state.start_evals) / (M * n)
    assert rounds >= 2 and rounds == int(rounds)  # about half of each round's draws are outside
    res = pmd.run(algo, x, jax.random.key(2), batch_size=n, num_passes=30)
    post = res.posterior
    ess = float(post.effective_sample_size())
    assert abs(float(post.mean()[0]) - mean) < 4 * np.sqrt(var / ess)
    assert float(res.info["evals"][0]) >= float(state.start_evals)


@pytest.mark.slow
def test_tempered_smc_with_no_start_inside_the_support_is_an_error_naming_the_stage():
    """Where no prior draw has a finite likelihood in ``MAX_START_ROUNDS`` rounds, the weights go
    non-finite and ``posterior`` says so instead of returning NaN weights."""
    model, x, _, _ = _half_line()
    shifted = pmd.Model(dim=1, log_prior=model.log_prior,
                        log_likelihood=lambda t, xi: model.log_likelihood(t - 8.0, xi),
                        sample_prior=model.sample_prior, name="far")
    algo = TemperedSMC(shifted, data_size=x.shape[0], num_particles=50, data=x)
    state = algo.init(jax.random.key(0))
    state, _ = algo.step(jax.random.key(1), state, x)
    with pytest.raises(FloatingPointError, match=r"tempered SMC diverged: its weights went non-finite at stage 1"):
        algo.posterior(state)


def test_numpyro_svi_starts_as_numpyro_does_inside_the_support():
    """NumPyro's ``svi.init`` on the data redraws its ``init_to_uniform`` start until the log joint is
    finite there: every one of 16 seeds starts inside ``θ > 0`` (one prior draw, the old start, lands
    outside half the time: all 16 inside by chance has probability 2^-16)."""
    model, x, _, _ = _half_line()
    algo = NumPyroSVI(model, data_size=x.shape[0], data=x)
    assert algo.start_work == (x.shape[0], x.shape[0])
    for seed in range(16):
        assert float(algo.posterior(algo.init(jax.random.key(seed))).mean()[0]) > 0


def test_numpyro_svi_divergence_is_an_error_naming_step_and_learning_rate():
    """A learning rate of 3 throws the guide's draws outside the support: the ELBO's gradient is
    NaN and so are the parameters from then on; ``posterior`` names the step and the rate."""
    model, x, _, _ = _half_line()
    algo = NumPyroSVI(model, data_size=x.shape[0], data=x, learning_rate=3.0)
    state = algo.init(jax.random.key(0))
    first = None
    for t in range(1, 60):
        state, info = algo.step(jax.random.key(t), state, x[:10])
        if first is None and not np.isfinite(float(info["elbo"])):
            first = t
    assert first is not None
    with pytest.raises(FloatingPointError, match=r"NumPyro SVI diverged: its state went non-finite at step \d+, "
                                                 r"with step size 3;"):
        algo.posterior(state)
