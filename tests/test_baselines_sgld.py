"""SGLD and parallel SGLD (Welling & Teh 2011, eq. 4) against the conjugate Gaussian and BlackJAX.

On the conjugate model the mini-batch gradient is linear, ``∇ log p̂(θ) = -P (θ - μ*) + u_t`` with
``u_t`` the mini-batch noise, so each coordinate of an SGLD chain with a constant step ``ε`` is an
AR(1) process ``θ_{t+1} - μ* = φ (θ_t - μ*) + ε/2 u_t + sqrt(ε) ξ_t``, ``φ = 1 - εP/2``:

* its stationary mean is exactly ``μ*``;
* with the full-data gradient its stationary variance is ``v_lo = ε / (1 - φ²) = 1 / (P (1 - εP/4))``
  (the discretisation bias, which vanishes as ``ε → 0``);
* mini-batch noise adds at most ``ε V_g / (4 P (1 - εP/4))`` (``V_g`` its variance; at most,
  because batches drawn without replacement within a pass are negatively correlated), so the
  variance lies in ``[v_lo, v_hi]``;
* states ``k`` steps apart have correlation ``φ^k``, so ``n`` thinned samples estimate the mean
  with variance ``v/n · (1+ρ)/(1-ρ)`` and the variance with variance ``2v²/n · (1+ρ²)/(1-ρ²)``,
  ``ρ = φ^thin`` (the AR(1) effective sample size).

Every tolerance below is 4 such standard errors (plus the bias interval): a wrong drift factor
(``ε`` instead of ``ε/2``) halves the variance and fails.
"""

from __future__ import annotations

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd_bench.baselines import SGLD, ParallelSGLD
from pmd_bench.baselines.sgmcmc.sgld import CURVATURE_STEP
from baselines_helpers import Conjugate, LinearRegression, energy_test
from pmd.runner import batch_indices


def _moments(samples):
    samples = np.asarray(samples, np.float64)
    return samples.mean(axis=0), np.cov(samples.T)


def test_sgld_chain_recovers_conjugate_posterior():
    conj = Conjugate.make(num_data=100)
    P, batch, thin, kept, burn_in = conj.precision, 10, 200, 500, 1000
    eps = 0.02 / P  # εP = 0.02: a 0.5% discretisation bias, φ = 0.99
    num_steps = burn_in + kept * thin
    algo = SGLD(conj.model, data_size=100, num_particles=kept, a=eps, gamma=0.0, burn_in=burn_in, thin=thin,
                num_steps=num_steps)
    res = pmd.run(algo, conj.data, jax.random.key(0), batch_size=batch, num_passes=num_steps * batch / 100)
    assert int(res.state.buffer.count) == kept
    mean, cov = _moments(res.posterior.samples)

    v_lo = 1.0 / (P * (1 - eps * P / 4))
    v_hi = v_lo + eps * conj.minibatch_gradient_variance(batch) / (4 * P * (1 - eps * P / 4))
    rho = (1 - eps * P / 2) ** thin
    se_mean = np.sqrt(v_hi / kept * (1 + rho) / (1 - rho))
    se_var = v_hi * np.sqrt(2 / kept * (1 + rho**2) / (1 - rho**2))
    np.testing.assert_array_less(np.abs(mean - conj.mean), 4 * se_mean)
    np.testing.assert_array_less(v_lo - 4 * se_var, np.diag(cov))
    np.testing.assert_array_less(np.diag(cov), v_hi + 4 * se_var)
    assert abs(cov[0, 1]) < 4 * np.max(se_var) / np.sqrt(2)  # independent coordinates


def test_parallel_sgld_recovers_conjugate_posterior():
    # Full-batch gradient: the chains are independent, ESS = m exactly, and the stationary
    # variance is v_lo = 1 / (P (1 - εP/4)); 600 steps shrink the prior start by φ^600 < 1e-13.
    conj = Conjugate.make(num_data=100)
    P, m = conj.precision, 1000
    eps = 0.1 / P
    algo = ParallelSGLD(conj.model, data_size=100, num_particles=m, a=eps, gamma=0.0)
    res = pmd.run(algo, conj.data, jax.random.key(1), batch_size=100, num_passes=600)
    mean, cov = _moments(res.posterior.samples)
    v_lo = 1.0 / (P * (1 - eps * P / 4))
    np.testing.assert_array_less(np.abs(mean - conj.mean), 4 * np.sqrt(v_lo / m))
    np.testing.assert_array_less(np.abs(np.diag(cov) - v_lo), 4 * v_lo * np.sqrt(2 / m))
    assert abs(cov[0, 1]) < 4 * v_lo / np.sqrt(m)


def _scan_chains(step, start, key, rows, data):
    """Run ``step(key, state, batch)`` over the batches ``data[rows[t]]``; return the final state."""
    def body(state, inputs):
        k, r = inputs
        return step(k, state, data[r]), None

    return jax.lax.scan(body, start, (jax.random.split(key, rows.shape[0]), rows))[0]


@pytest.mark.slow
def test_parallel_sgld_matches_blackjax_sgld():
    """Same model, step, batches and chain count: the two final clouds are indistinguishable.

    Both start from the same prior draws and are fed the same mini-batch sequence, so the noise
    shared across chains (the mini-batch noise) is the same realisation; only the Langevin noise
    differs.
    BlackJAX's ``θ + h ∇ + sqrt(2h) ξ`` is eq. (4) with ``h = ε/2``. The energy-distance
    permutation test (999 permutations, fixed seeds) must not reject at the 1% level, and must
    reject BlackJAX at temperature 1/2 (noise ``sqrt(h) ξ``: the posterior squared, half our
    variance), which shows the test has the power to see such an error at this sample size.
    """
    conj = Conjugate.make(num_data=100)
    m, batch, num_steps = 500, 10, 600
    eps = 0.1 / conj.precision
    k_start, k_ours, k_theirs, k_test = jax.random.split(jax.random.key(2), 4)
    data = jnp.asarray(conj.data)
    rows = jnp.asarray(batch_indices(0, 100, batch, num_steps))

    algo = ParallelSGLD(conj.model, data_size=100, num_particles=m, a=eps, gamma=0.0)
    start = algo.init(k_start)  # both start from the same m prior draws
    ours = _scan_chains(lambda k, s, b: algo.step(k, s, b)[0], start, k_ours, rows, data).positions

    model = conj.model
    sgld = blackjax.sgld(blackjax.sgmcmc.gradients.grad_estimator(model.log_prior, model.log_likelihood, 100))

    def blackjax_chains(temperature):
        step = jax.vmap(sgld.step, in_axes=(0, 0, None, None, None))
        return _scan_chains(lambda k, p, b: step(jax.random.split(k, m), p, b, eps / 2, temperature),
                            start.positions, k_theirs, rows, data)

    assert energy_test(np.asarray(ours), np.asarray(blackjax_chains(1.0)), k_test) > 0.01
    assert energy_test(np.asarray(ours), np.asarray(blackjax_chains(0.5)), k_test) < 0.01


def test_step_size_schedule_burn_in_and_thinning():
    """``ε_t = a (b + t)^-γ`` (W&T sec. 3); after ``burn_in`` steps every ``thin``-th state is kept,
    and the buffer keeps the last ``m`` of them in a ring."""
    conj = Conjugate.make(num_data=20)
    a, b, gamma, burn_in, thin, m = 0.01, 10.0, 0.55, 7, 3, 4
    algo = SGLD(conj.model, data_size=20, num_particles=m, a=a, b=b, gamma=gamma, burn_in=burn_in, thin=thin)
    state = algo.init(jax.random.key(0))
    prior_draws = np.asarray(state.buffer.samples)
    np.testing.assert_allclose(algo.posterior(state).samples, prior_draws)  # the prior until burn-in ends
    positions, kept_flags = [], []
    for t in range(1, 31):
        state, info = algo.step(jax.random.key(t), state, jnp.asarray(conj.data[:5]))
        np.testing.assert_allclose(info["step_size"], a * (b + t) ** -gamma, rtol=1e-6)
        positions.append(np.asarray(state.position))
        kept_flags.append(bool(info["retained"]))
    expected = [t > burn_in and (t - burn_in) % thin == 0 for t in range(1, 31)]
    assert kept_flags == expected
    kept = np.array(positions)[np.array(expected)]  # 7 retained: steps 10, 13, ..., 28
    assert int(state.buffer.count) == len(kept) == 7
    post = algo.posterior(state)
    retained = np.asarray(post.samples)[np.isfinite(np.asarray(post.log_weights))]
    assert sorted(map(tuple, retained)) == sorted(map(tuple, kept[-m:]))


def test_buffer_posterior_uses_only_retained_samples_while_filling():
    conj = Conjugate.make(num_data=20)
    algo = SGLD(conj.model, data_size=20, num_particles=10, a=1e-3, burn_in=2)
    state = algo.init(jax.random.key(0))
    for t in range(4):  # steps 3 and 4 are retained
        state, _ = algo.step(jax.random.key(t), state, jnp.asarray(conj.data[:5]))
    weights = np.exp(np.asarray(algo.posterior(state).log_weights))
    np.testing.assert_allclose(weights, [0.5, 0.5] + [0.0] * 8)


@pytest.mark.parametrize("cls", [SGLD, ParallelSGLD])
def test_step_is_pure(cls):
    conj = Conjugate.make(num_data=20)
    algo = cls(conj.model, data_size=20, num_particles=3, burn_in=0, data=conj.data) if cls is SGLD else \
        cls(conj.model, data_size=20, num_particles=3, data=conj.data)
    state = algo.init(jax.random.key(0))
    batch = jnp.asarray(conj.data[:5])
    one, _ = algo.step(jax.random.key(1), state, batch)
    two, _ = algo.step(jax.random.key(1), state, batch)
    jax.tree_util.tree_map(np.testing.assert_array_equal, one, two)


def test_burn_in_as_long_as_the_run_is_refused():
    """H.1's burn_in=1000 on a 200-step run would keep only the initial prior draws: refused."""
    conj = Conjugate.make(num_data=100)
    with pytest.raises(pmd.ConfigError, match=r"burn_in=1000 .* 200 steps"):
        SGLD(conj.model, data_size=100, num_particles=10, burn_in=1000, num_steps=200)
    algo = SGLD(conj.model, data_size=100, num_particles=10, burn_in=1000, data=conj.data)
    with pytest.raises(pmd.ConfigError, match=r"burn_in=1000 .* 200 steps"):  # pmd.run knows the length
        pmd.run(algo, conj.data, jax.random.key(0), batch_size=10, num_passes=20)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(pmd.ConfigError, match="burn_in"):
            SGLD(conj.model, data_size=100, num_particles=10, burn_in=bad)


def test_fractional_burn_in_drops_the_first_part_of_the_retained_states():
    """``burn_in=f`` keeps the retained samples ``k ≥ floor(f · count)`` still in the ring."""
    conj = Conjugate.make(num_data=20)
    algo = SGLD(conj.model, data_size=20, num_particles=8, a=1e-3, burn_in=0.3, thin=2)
    state = algo.init(jax.random.key(0))
    positions = []
    for t in range(1, 23):
        state, info = algo.step(jax.random.key(t), state, jnp.asarray(conj.data[:5]))
        assert bool(info["retained"]) == (t % 2 == 0)
        positions.append(np.asarray(state.position))
    retained = np.array(positions)[1::2]  # steps 2, 4, ..., 22: 11 samples
    post = algo.posterior(state)
    kept = np.asarray(post.samples)[np.isfinite(np.asarray(post.log_weights))]
    # floor(0.3 · 11) = 3 dropped; the ring of 8 holds samples 3..10: all 8 kept
    assert sorted(map(tuple, kept)) == sorted(map(tuple, retained[3:]))
    assert SGLD(conj.model, data_size=20, num_particles=3, a=1e-3).burn_in == 0.5  # the default: half the run


@pytest.mark.parametrize("cls", [SGLD, ParallelSGLD])
def test_a_diverged_run_is_an_error_naming_step_and_step_size(cls):
    """A step size far above 2/P (here 100/P) makes the chain explode to inf, then NaN: the
    posterior refuses, naming the first non-finite step and its step size."""
    conj = Conjugate.make(num_data=100)
    a = 100.0 / conj.precision
    algo = cls(conj.model, data_size=100, num_particles=4, a=a, gamma=0.0, **({"burn_in": 0} if cls is SGLD else {}))
    res_state = algo.init(jax.random.key(0))
    first = None
    for t in range(1, 200):
        res_state, _ = algo.step(jax.random.key(t), res_state, jnp.asarray(conj.data[:10]))
        position = res_state.position if cls is SGLD else res_state.positions
        if first is None and not np.all(np.isfinite(np.asarray(position))):
            first = t
    assert first is not None
    with pytest.raises(FloatingPointError, match=rf"step {first}, with step size {a:.4g}"):
        algo.posterior(res_state)


@pytest.mark.slow
def test_sgld_defaults_on_the_readme_regression():
    """README.md's regression (2,000 rows, σ = 0.5, β ~ N(0, I); Λ's eigenvalues 7,600 to
    8,400) with SGLD at its defaults (300 kept, batches of 20, 2 passes: 200 steps, the last 100
    states kept), at 8 seeds, the README's key 1 among them: no divergence, and means and sds
    within what the Monte Carlo error of 100 autocorrelated states allows.

    In the kept window ``ε_t λ`` falls from 0.116 to 0.079 (``ε_1 λ_max = 1``): each coordinate is
    an AR(1) with ``φ = 1 - ε_t λ/2 ≈ 0.95``, an integrated autocorrelation time ``(1+φ)/(1-φ)`` of
    33 to 50 steps, 2 to 3 effective states a run. With independent batches the time average's
    variance is ``(N/n + 4/(ελ))/T`` exact variances (``T = 100``; the batch noise ``N/n = 100``
    dominates): a standard error of 1.2 exact sd; batches without replacement cancel part of it
    (0.78 measured over 24 seeds). So the RMS of the 24 standardised errors is at most 1.2 and each
    lies within 3 sd (2.5 of that se, 3.8 of the measured). The sds: the batch noise inflates the
    variance by up to ``1 + ελN/(4n) ≈ 3.9`` (sd 2.0x), and 2 to 3 effective states scatter a run's
    sd by ~40%: the geometric mean of the 24 sd ratios lies in [0.75, 2] (3 of its standard errors
    below 1; measured 1.42), each ratio in [0.5, 3] (measured over 24 seeds: 0.87 to 2.72). A chain
    frozen at the mode (``c ≤ 0.25``: ratios 0.36 to 0.57) fails, as does a constant ``a = 0.01``
    (diverges at step 43).
    """
    reg = LinearRegression.readme()
    algo = SGLD(reg.model, data_size=2000, num_particles=300, data=reg.data)
    keys = [jax.random.key(seed) for seed in range(1, 9)]
    results = pmd.run_batched(algo, reg.data, keys, batch_size=20, num_passes=2)  # no FloatingPointError
    sd = np.sqrt(np.diag(reg.cov))
    moments = [_moments(result.posterior.samples) for result in results]
    errors = np.array([(mean - reg.mean) / sd for mean, _ in moments])
    ratios = np.array([np.sqrt(np.diag(cov)) / sd for _, cov in moments])
    assert np.all(np.isfinite(errors)) and np.all(np.isfinite(ratios))
    assert np.sqrt(np.mean(errors**2)) <= 1.2 and np.all(np.abs(errors) <= 3.0), errors
    assert 0.75 <= np.exp(np.mean(np.log(ratios))) <= 2.0 and np.all((ratios >= 0.5) & (ratios <= 3.0)), ratios


@pytest.mark.parametrize("cls", [SGLD, ParallelSGLD])
def test_the_default_step_size_needs_the_data(cls):
    conj = Conjugate.make(num_data=20)
    with pytest.raises(ValueError, match=r"a=None is set from the posterior's curvature .* data= .* or a step size a="):
        cls(conj.model, data_size=20, num_particles=3)


@pytest.mark.parametrize("cls", [SGLD, ParallelSGLD])
def test_the_default_step_size_is_set_from_the_curvature_at_the_mode(cls):
    """``ε_1 = a (b + 1)^(-γ) = c/λ_max`` on the correlated regression, whose precision
    ``Λ = I/s0² + XᵀX/σ²`` is known in closed form (its ``λ_max`` is off the axes); the Laplace
    start is exact here: SGLD at the mode (the exact mean), its buffer, or the parallel chains, at
    ``m`` draws of ``N(mean, Λ⁻¹)`` (each mean within 4 standard errors ``sd/√m``, each sd within 4
    of ``sd/√(2m)``). An explicit ``a`` wins and reads no data."""
    reg = LinearRegression.make()
    b, gamma, m = 10.0, 0.55, 4000
    algo = cls(reg.model, data_size=2000, num_particles=m, b=b, gamma=gamma, data=reg.data)
    lambda_max = np.linalg.eigvalsh(reg.precision)[-1]
    np.testing.assert_allclose(algo.step_size.a, CURVATURE_STEP * (b + 1) ** gamma / lambda_max, rtol=1e-4)
    np.testing.assert_allclose(float(algo.step_size(1)), CURVATURE_STEP / lambda_max, rtol=1e-4)
    state = algo.init(jax.random.key(0))
    sd = np.sqrt(np.diag(reg.cov))
    if cls is SGLD:
        np.testing.assert_array_less(np.abs(np.asarray(state.position, np.float64) - reg.mean) / sd, 0.01)
    mean, cov = _moments(state.buffer.samples if cls is SGLD else state.positions)
    np.testing.assert_array_less(np.abs(mean - reg.mean) / sd, 4 / np.sqrt(m))
    np.testing.assert_array_less(np.abs(np.sqrt(np.diag(cov)) / sd - 1), 4 / np.sqrt(2 * m))
    explicit = cls(reg.model, data_size=2000, num_particles=3, a=1e-4, data=reg.data)
    assert explicit.step_size.a == 1e-4 and explicit.start_work == (0.0, 0.0)
