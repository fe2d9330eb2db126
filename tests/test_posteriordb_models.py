"""The posteriordb models against posteriordb's reference posteriors (offline mirror named by
PMD_BENCH_DATA_MIRROR; skipped with the reason when it is unset or lacks the files).

Is our log density the posterior the reference draws came from? If ``q`` is the density of the
unconstrained parameter and ``g = ∇ log q``, integration by parts gives the Stein identities
``E_q[g] = 0`` and ``E_q[g (θ - μ)ᵀ] = -I``. A wrong prior scale, a missing log-Jacobian or a
wrong likelihood scale moves ``q`` and breaks them at the reference draws. Both are checked in
whitened coordinates ``z = L⁻¹(θ - μ)``, ``g_z = Lᵀ g`` (``LLᵀ`` the draws' covariance), where every
entry of ``E[g_z z_ᵀ] + I`` is unitless and has a spread of order 1 even for the strongly
correlated posteriors (kilpisjarvi, diamonds).

Monte Carlo error: the 10 chains x 1,000 (thinned) draws are cut into 50 consecutive batches of
200 draws, 5 per chain; posteriordb's draws have lag-1 autocorrelation below 0.05, so the batch
means are independent and their spread / √50 is the standard error of each mean. The check fails
when any entry's z statistic (mean / standard error) exceeds ``TOLERANCE`` = 5: with 49 degrees of
freedom a false alarm has probability 8e-6 per entry, 0.9% over the 1,158 entries (d + d²) of the
12 posteriors (702 of them diamonds'). Measured (largest |z| of each posterior): 1.2 (earnings) to 3.3
(diamonds, whose 702 entries make a largest |z| near 3.4 the expected value).

Power, shown by ``test_perturbed_models_fail``: the check catches what moves an identity by more
than 5 standard errors, e.g. (measured largest |z|) tau's log-Jacobian dropped in eight schools
82, sigma's in kilpisjarvi 9.7, the log(1 - alpha1) of beta1's parameter-dependent bound in garch
31, the b prior's sd halved in diamonds 970, the likelihood's noise scale x1.1 in kidiq 320. It
cannot see a change worth one datum in a large data set: sigma's log-Jacobian dropped in kidiq
(434 rows) moves E[∂ log q / ∂ log σ] by 1 against a standard error of 0.3 (|z| 3.3).

The flat priors that the models replace by proper ones (``FLAT_SCALE``) move these statistics by at
most 0.1 standard error (measured, kilpisjarvi's sigma), well inside the tolerance.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy import stats

from pmd_bench.datasets.errors import ChecksumError, DatasetError
from pmd_bench.datasets.settings import Settings
from pmd.models.posteriordb import POSTERIORS, load_problem, reference_draws

pytestmark = pytest.mark.needs_data

TOLERANCE = 5.0
BATCHES = 50
PRIOR_DRAWS = 20_000

# (posterior, dimension d, number of reference columns k, i.i.d. data points or None for one datum)
SHAPES = {
    "kidiq-kidscore_momiq": (3, 3, 434),
    "earnings-logearn_height": (3, 3, 1192),
    "mesquite-logmesquite": (8, 8, 46),
    "nes2000-nes": (10, 10, 476),
    "eight_schools-eight_schools_noncentered": (10, 10, 8),
    "arK-arK": (7, 7, None),
    "garch-garch11": (4, 4, None),
    "arma-arma11": (4, 4, None),
    "gp_pois_regr-gp_regr": (3, 3, None),
    "kilpisjarvi_mod-kilpisjarvi": (3, 3, 62),
    "diamonds-diamonds": (26, 26, 5000),
    "hmm_example-hmm_example": (4, 6, None),
}


@pytest.fixture(scope="module")
def posterior(posteriordb_settings):
    """``name -> (problem, reference draws (chains, draws, k), the same unconstrained (chains, draws, d))``."""
    cache = {}

    def get(name: str):
        if name not in cache:
            problem = load_problem(name, posteriordb_settings)
            draws = reference_draws(problem, posteriordb_settings)
            theta = problem.unconstrain(draws.reshape(-1, draws.shape[-1]))
            cache[name] = (problem, draws, np.asarray(theta).reshape(*draws.shape[:2], -1))
        return cache[name]

    return get


def stein_z(theta: np.ndarray, grad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """z statistics of ``E[g_z] = 0`` (``(d,)``) and ``E[g_z zᵀ] = -I`` (``(d, d)``) from draws
    ``theta`` and scores ``grad`` (``(n, d)``, in order), standard errors from ``BATCHES`` batch means."""
    theta, grad = np.asarray(theta, np.float64), np.asarray(grad, np.float64)
    chol = np.linalg.cholesky(np.cov(theta.T).reshape(theta.shape[1], -1))
    z = np.linalg.solve(chol, (theta - theta.mean(axis=0)).T).T
    g = grad @ chol

    def mean_and_error(values):
        batch_means = values.reshape(BATCHES, -1, *values.shape[1:]).mean(axis=1)
        return batch_means.mean(axis=0), batch_means.std(axis=0, ddof=1) / np.sqrt(BATCHES)

    first, first_error = mean_and_error(g)
    second, second_error = mean_and_error(g[:, :, None] * z[:, None, :])
    return first / first_error, (second + np.eye(len(first))) / second_error


def scores(log_density, theta: np.ndarray) -> np.ndarray:
    """``∇ log_density`` at every row of ``theta (..., d)`` (float32, jitted)."""
    flat = jnp.asarray(theta.reshape(-1, theta.shape[-1]))
    grads = np.asarray(jax.jit(jax.vmap(jax.grad(log_density)))(flat))
    assert np.isfinite(grads).all(), "non-finite scores"
    return grads


def largest_z(log_density, theta: np.ndarray) -> float:
    """The largest |z| of both Stein identities at the draws ``theta (..., d)`` (rows in sampling order)."""
    first, second = stein_z(theta.reshape(-1, theta.shape[-1]), scores(log_density, theta))
    return float(max(np.abs(first).max(), np.abs(second).max()))


@pytest.mark.parametrize("name", POSTERIORS)
def test_shapes_columns_and_data(name, posterior):
    problem, draws, theta = posterior(name)
    dim, width, rows = SHAPES[name]
    assert problem.model.dim == dim and len(problem.columns) == width and theta.shape[-1] == dim
    assert draws.shape == (10, 1000, width)
    assert problem.iid == (rows is not None)
    assert problem.model.check_batch(problem.data) == (rows or 1)


@pytest.mark.slow
@pytest.mark.parametrize("name", POSTERIORS)
def test_reference_draws_satisfy_the_stein_identities(name, posterior):
    """The model's posterior is the reference's: every Stein z statistic below TOLERANCE (module docstring)."""
    problem, _, theta = posterior(name)
    assert largest_z(problem.log_density, theta) < TOLERANCE


def _log_jacobian_dropped(index: int, log_jacobian):
    return lambda problem: lambda theta: problem.log_density(theta) - log_jacobian(theta[index])


def _likelihood_scale(factor: float):
    """The likelihood's noise sd (the last coordinate, log σ) multiplied by ``factor``."""

    def perturb(problem):
        model = problem.model

        def log_density(theta):
            shifted = theta.at[-1].add(jnp.log(factor))
            return model.log_prior(theta) + jnp.sum(jax.vmap(model.log_likelihood, (None, 0))(shifted, problem.data))

        return log_density

    return perturb


def _b_prior_sd_halved(problem):
    def log_density(theta):
        b = theta[:-2]  # diamonds' θ: b[1..24], Intercept, log sigma
        return problem.log_density(theta) + jnp.sum(stats.norm.logpdf(b, 0.0, 0.5) - stats.norm.logpdf(b, 0.0, 1.0))

    return log_density


PERTURBATIONS = {
    "eight-schools-tau-jacobian-dropped": (
        "eight_schools-eight_schools_noncentered",
        _log_jacobian_dropped(-1, lambda u: u),
    ),
    "kilpisjarvi-sigma-jacobian-dropped": ("kilpisjarvi_mod-kilpisjarvi", _log_jacobian_dropped(-1, lambda u: u)),
    # beta1 = (1 - alpha1) logit⁻¹(u): dropping log(1 - alpha1) = log logit⁻¹(-u_alpha1) of the bound.
    "garch-beta1-bound-jacobian-dropped": ("garch-garch11", _log_jacobian_dropped(2, lambda u: jax.nn.log_sigmoid(-u))),
    "diamonds-b-prior-sd-halved": ("diamonds-diamonds", _b_prior_sd_halved),
    "kidiq-noise-scale-x1.1": ("kidiq-kidscore_momiq", _likelihood_scale(1.1)),
}


@pytest.mark.parametrize("case", PERTURBATIONS)
def test_perturbed_models_fail(case, posterior):
    """The same check rejects a deliberately wrong model (power: module docstring)."""
    name, perturb = PERTURBATIONS[case]
    problem, _, theta = posterior(name)
    assert largest_z(perturb(problem), theta) > TOLERANCE


@pytest.mark.parametrize("name", POSTERIORS)
def test_constrain_inverts_unconstrain(name, posterior):
    """``constrain(unconstrain(x)) = x`` on the reference draws, to float32 rounding: within 1e-6
    (8 float32 epsilons) of each column's largest entry; measured at most 2.1e-7 (eight schools,
    where ``theta_trans = (theta - mu) / tau`` cancels)."""
    problem, draws, theta = posterior(name)
    x = draws.reshape(-1, draws.shape[-1])
    back = np.asarray(problem.constrain(theta.reshape(-1, theta.shape[-1])), np.float64)
    assert np.all(np.abs(back - x) <= 1e-6 * np.abs(x).max(axis=0))


@pytest.mark.slow
@pytest.mark.parametrize("name", POSTERIORS)
def test_sample_prior_draws_from_log_prior(name, posterior):
    """The Stein identities of the prior on ``PRIOR_DRAWS`` i.i.d. draws of ``sample_prior``: a
    sampler drawing another distribution than ``log_prior``'s breaks them (measured: kidiq's sigma
    drawn 1.5x too wide gives |z| 44, a log-Jacobian missing from its log_prior 207). Same statistic
    and tolerance as for the posterior; measured largest |z| 1.7-3.5."""
    model = posterior(name)[0].model
    # An RBG key: XLA compiles its generator in half the time of threefry's on CPU (about 10 s less
    # over the 12 samplers); the check concerns the distribution drawn, not the generator.
    draws = np.asarray(model.sample_prior(jax.random.key(0, impl="rbg"), PRIOR_DRAWS))
    assert largest_z(model.log_prior, draws) < TOLERANCE


def test_unknown_posterior_is_named(posteriordb_settings):
    with pytest.raises(DatasetError, match="no-such-posterior.*kidiq-kidscore_momiq"):
        load_problem("no-such-posterior", posteriordb_settings)


def test_tampered_mirror_copy_is_named(posteriordb_settings, tmp_path):
    """Data reach the models only through the verifying fetcher: a mirror copy with other bytes is refused."""
    description = "posteriordb/posterior_database/posteriors/eight_schools-eight_schools_noncentered.json"
    data = "posteriordb/posterior_database/data/data/eight_schools.json.zip"
    for name, tamper in ((description, False), (data, True)):
        content = (posteriordb_settings.mirror / name).read_bytes()
        (tmp_path / "mirror" / name).parent.mkdir(parents=True)
        (tmp_path / "mirror" / name).write_bytes(content[:-1] + bytes([content[-1] ^ 1]) if tamper else content)
    with pytest.raises(ChecksumError, match="eight_schools.json.zip"):
        load_problem("eight_schools-eight_schools_noncentered", Settings(tmp_path / "data", tmp_path / "mirror"))


@pytest.mark.slow
def test_the_laplace_start_finds_arma_mode_where_the_15_draw_median_start_does_not(posteriordb_settings):
    """SVI's and SGLD's start (``baselines._common.laplace_approximation``): from NumPyro's median
    of 15 prior draws, L-BFGS ends on ARMA(1,1)'s saddle (``|θ| > 1``: the error recursion explodes);
    the fallback start, the median of 1,000 prior draws, reaches the mode. At 200 rows the Laplace
    approximation is close to the posterior: the reference draws' mean within 0.2 of their sd and
    the Laplace sds within 10% of theirs (measured: 0.07 sd and 3%)."""
    from pmd_bench.baselines._common import _laplace, laplace_approximation, minibatch_log_joint

    problem = load_problem("arma-arma11", posteriordb_settings)
    draws = np.asarray(problem.unconstrain(jnp.asarray(reference_draws(problem, posteriordb_settings).reshape(-1, 4))))
    log_joint = minibatch_log_joint(problem.model, 1)
    _, precision, _, _ = _laplace(problem.model, log_joint, problem.data, 500, 15)
    assert not np.all(np.linalg.eigvalsh(np.asarray(precision)) > 0)  # the first start ends on no mode
    laplace = laplace_approximation(problem.model, problem.data)
    sd = draws.std(axis=0)
    assert np.max(np.abs(np.asarray(laplace.mode) - draws.mean(axis=0)) / sd) < 0.2
    laplace_sd = np.sqrt(np.diag(np.linalg.inv(np.asarray(laplace.precision, np.float64))))
    np.testing.assert_allclose(laplace_sd, sd, rtol=0.1)
