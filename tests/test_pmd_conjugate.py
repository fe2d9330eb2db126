"""PMD against the closed-form posterior of the conjugate Gaussian model, for every strategy.

For a Gaussian model every iterate of mirror descent (eq. 2) is Gaussian, so the exact iterate the
algorithm approximates can be computed step by step from the step sizes it used (``info["gamma"]``)
and the kernel it added (``info["bandwidth"]``, eq. 6):

    precision⁺ = (1-γ)/v_t + γ (1/s0² + N/σ²),   mean⁺ = ((1-γ) μ_t/v_t + γ N x̄_t/σ²) / precision⁺
    v_{t+1} = 1/precision⁺ + h_t²  (h_t = 0 unless the next step draws from the KDE)

With ``γ_t = 1/t`` from ``t = 1`` this is the exact posterior after one pass (Theorem 5's
setting). The test also checks that after enough data the iterate is the posterior itself.

Tolerances (4 standard errors, fixed seeds): a weighted-particle estimate of a mean has standard
error ``sqrt(v / ESS)``; of a variance, relative error ``sqrt(2 / ESS)``. Errors of earlier steps
propagate to step T damped by ``Π_{s>t}(1-γ_s)``, so the KDE strategies' standard error is the
single-step one (at the smallest ESS of the run) times ``sqrt(Σ_t Π_{s>t}(1-γ_s)²)``, computed
from the run.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmd import PMD
from pmd.models.conjugate import ConjugateGaussian


def run_steps(algo, x, batch_size, seed):
    key = jax.random.key(seed)
    state = algo.init(key)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    infos, means = [], []
    for t, start in enumerate(range(0, len(x), batch_size)):
        batch = x[order[start:start + batch_size]]
        state, info = algo.step(jax.random.fold_in(key, t), state, jnp.asarray(batch))
        infos.append(jax.tree_util.tree_map(np.asarray, info))
        means.append(batch.mean(axis=0))
    trace = {k: np.array([i[k] for i in infos]) for k in infos[0]}
    return state, trace, np.array(means)


def exact_iterate(prob, n_data, trace, batch_means, final_kernel):
    """The Gaussian mirror-descent iterate (mean vector, variance) given the run's γ_t and h_t."""
    prior_prec = prob.prior_std**-2
    lik_prec = n_data / prob.noise_std**2
    mean, var = np.zeros(prob.dim), prob.prior_std**2
    gammas, bws, redraw = trace["gamma"], trace["bandwidth"], trace["redraw"]
    for t, (g, xbar) in enumerate(zip(gammas, batch_means)):
        prec = (1 - g) / var + g * (prior_prec + lik_prec)
        mean = ((1 - g) * mean / var + g * lik_prec * xbar) / prec
        var = 1.0 / prec
        smoothed_next = redraw[t + 1] if t + 1 < len(redraw) else final_kernel
        if smoothed_next:
            var = var + bws[t] ** 2
    return mean, var


def propagation_factor(trace):
    """sqrt(Σ_t Π_{s>t}(1-γ_s)²): how single-step Monte Carlo errors add up by step T."""
    g = trace["gamma"]
    tail = np.concatenate([np.cumprod((1 - g)[::-1])[::-1][1:], [1.0]])
    return float(np.sqrt(np.sum(tail**2)))


CASES = {
    # strategy: (N, noise std, particles, batch, extra kwargs). Weighted particles need a prior that
    # covers the posterior (section 3.1): small N and wide noise. The KDE strategies do not.
    "particles": (10, 5.0, 4000, 2, {}),
    "kde": (500, 1.0, 2000, 25, {}),
    "hybrid": (500, 1.0, 2000, 25, {}),
}


@pytest.mark.parametrize("dim", [2, 10])
@pytest.mark.parametrize("strategy", list(CASES))
def test_matches_exact_mirror_descent_iterate(strategy, dim):
    n, sigma, m, batch, extra = CASES[strategy]
    prob = ConjugateGaussian(dim=dim, noise_std=sigma)
    _, x = prob.simulate(seed=dim, n=n)
    algo = PMD(prob.model(), data_size=n, num_particles=m, strategy=strategy, **extra)
    state, trace, batch_means = run_steps(algo, x, batch, seed=1)
    post = algo.posterior(state)
    has_kernel = post.has_density()
    mean, var = exact_iterate(prob, n, trace, batch_means, has_kernel)

    # Each redraw adds the error of the weighted set it was drawn from: the smallest ESS of the run
    # bounds the single-step error (for fixed particles only the final weights matter).
    ess = float(post.effective_sample_size()) if strategy == "particles" else float(trace["ess"].min())
    inflate = 1.0 if strategy == "particles" else propagation_factor(trace)
    mean_tol = 4 * np.sqrt(var / ess) * inflate
    var_tol = 4 * np.sqrt(2 / ess) * inflate
    assert ess > 50, f"ESS {ess:.0f} too small for a meaningful test"
    np.testing.assert_array_less(np.abs(np.asarray(post.mean()) - mean), mean_tol)
    cov = np.asarray(post.cov())
    np.testing.assert_array_less(np.abs(np.diag(cov) / var - 1), var_tol)
    off = cov[~np.eye(dim, dtype=bool)]
    assert np.max(np.abs(off)) < var_tol * var


@pytest.mark.parametrize("strategy", ["particles", "hybrid"])
def test_reaches_closed_form_posterior(strategy):
    """With γ_t = 1/t the iterate after the data is the posterior itself (up to the tempering
    left by capped steps, which info['exponent'] reports): compare with the closed form."""
    n, sigma, m, batch, extra = CASES[strategy]
    prob = ConjugateGaussian(dim=2, noise_std=sigma)
    _, x = prob.simulate(seed=3, n=n)
    algo = PMD(prob.model(), data_size=n, num_particles=m, strategy=strategy, **extra)
    state, trace, _ = run_steps(algo, np.concatenate([x, x]), batch, seed=2) if strategy == "hybrid" else run_steps(algo, x, batch, seed=2)
    post = algo.posterior(state)
    mean, cov = prob.posterior(x)
    ess = float(post.effective_sample_size()) if strategy == "particles" else float(trace["ess"].min())
    # Tempering left: the iterate's likelihood weight is λ = info["exponent"] (1 when γ_1 = 1).
    lam = float(trace["exponent"][-1])
    var = 1.0 / (prob.prior_std**-2 + lam * n / sigma**2)
    assert var / cov[0, 0] - 1 < 0.05, f"exponent {lam:.3f} leaves the likelihood >5% tempered"
    tol = 4 * np.sqrt(var / ess) * (1.0 if strategy == "particles" else propagation_factor(trace))
    np.testing.assert_array_less(np.abs(np.asarray(post.mean()) - mean), tol + abs(1 - lam) * np.abs(mean))
