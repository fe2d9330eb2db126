"""Every LDA method against the truth of a corpus drawn from the model (tests/lda_helpers.py).

Criteria, on a 400-document, 4-topic corpus (``T``: the log-perplexity of the true topics under the
same eq.-19 estimator, about 2.17; a uniform guess scores log 60 = 4.09):

* a merged-topic local optimum, which every method reaches from some starts, costs about 0.2 nats
  of log-perplexity and leaves a true topic at Hellinger distance ≥ 0.9 from every estimate;
  good optima reached 0.004-0.02 nats above ``T`` and a matched mean Hellinger ≤ 0.12 in trial runs
  of PMD, SVI and SGRLD (three seeds each). So PMD and SGRLD must come within 0.05 nats of ``T``
  with a mean matched Hellinger below 0.2, the best of three restarts picked by held-out
  perplexity (not by the truth). Online VB is checked step for step against scikit-learn instead
  (tests/test_lda_model.py);
* SMC reads each document once. With 2 particles, batches of 30 and 100 documents rejuvenated
  per step a trial run scored 2.33 (without rejuvenation 2.72); the best one-topic model (the
  corpus's word frequencies) scores 3.00. SMC must beat that unigram model by 0.3 nats and
  improve on SMC without rejuvenation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from lda_helpers import best_restart, fit_restarts, small_corpus
from scipy import integrate, stats

import pmd
from pmd_bench.baselines.lda import LDASMC, SGRLD, OnlineVB
from pmd import ConfigError
from pmd.structured import StructuredPMDLDA
from pmd.models.lda import LDA
from pmd.structured.lda import StructuredLDAState, log_dirichlet_ratio

GAP, HELLINGER = 0.05, 0.2


@pytest.mark.slow
@pytest.mark.parametrize("name", ["pmd", "pmd_m3", "sgrld"])
def test_stochastic_methods_recover_the_topics(name):
    c = small_corpus()
    d = c.counts.shape[0]
    method = {
        "pmd": lambda: StructuredPMDLDA(c.model, d, 1, step_size={"eta": 1.0, "n0": 1.0, "kappa": 0.7}),
        "pmd_m3": lambda: StructuredPMDLDA(c.model, d, 3, step_size={"eta": 1.0, "n0": 1.0, "kappa": 0.7}),
        "sgrld": lambda: SGRLD(c.model, d, 3, step_size={"eta": 1.0, "n0": 10.0, "kappa": 0.55}),
    }[name]()
    states = fit_restarts(method, c.train, seeds=3, batch_size=20, passes=5)
    log_perp, recovery = best_restart(c, method, states)
    assert log_perp < c.truth_log_perplexity() + GAP
    assert recovery["topic_hellinger"] < HELLINGER
    np.testing.assert_allclose(np.asarray(method.posterior(states[0]).expected_topics()).sum(axis=-1), 1.0,
                               rtol=1e-4)


@pytest.mark.slow
def test_pmd_averaged_counts_keep_the_update_mean_and_cut_its_variance():
    """PMD's topics update from the post-burn-in sweeps' average (``counts="average"``, Mimno et
    al. 2012) against the last sweep (``"sample"``), on 20 documents with ``Φ`` at the true topics
    and ``ρ_1 = 1`` (so ``β_new - β₀`` is the scaled counts), over 400 keys each.

    Same expectation: every (topic, word) entry's mean differs by less than 4.5 standard errors
    of the difference (240 entries; a trial's largest was 2.5). Less variance: 5 independent
    sweeps would give 1/5 of the last sweep's total variance (a trial: 0.22, the sweeps mix fast
    at the true topics); the test asks below 0.3."""
    c = small_corpus()
    d, b = c.counts.shape[0], 20
    batch = {k: jnp.asarray(v[:b]) for k, v in c.train.items()}
    state = StructuredLDAState(jnp.asarray(c.model.beta + 2000.0 * c.topics, jnp.float32)[None], jnp.zeros(1),
                               jnp.asarray(0, jnp.int32))
    keys = jax.random.split(jax.random.key(0), 400)
    draws = {}
    for counts in ("sample", "average"):
        method = StructuredPMDLDA(c.model, d, 1, step_size={"eta": 1.0, "n0": 0.0, "kappa": 1.0}, counts=counts)
        new_beta = jax.jit(jax.vmap(lambda k, m=method: m.step(k, state, batch)[0].beta[0]))(keys)
        draws[counts] = (np.asarray(new_beta, np.float64) - c.model.beta) * b / d
    tokens = float(np.asarray(batch["mask"]).sum())
    for counts in draws.values():
        np.testing.assert_allclose(counts.sum(axis=(1, 2)), tokens, rtol=1e-5)
    var = {k: v.var(axis=0, ddof=1) for k, v in draws.items()}
    se = np.sqrt((var["sample"] + var["average"]) / len(keys))
    gap = np.abs(draws["sample"].mean(axis=0) - draws["average"].mean(axis=0))
    assert np.all(gap <= 4.5 * se + 1e-6)
    assert var["average"].sum() / var["sample"].sum() < 0.3


def test_pmd_dirichlet_ratio_weights_are_f2s_integral():
    """F.2's closed-form weights (``weights="dirichlet_ratio"``) against the integral that defines
    them, ``p̃ = ∫ q_t(Φ | Z^i)^{1-ρ} p(Φ)^ρ p(x_b | Φ, z_b)^{(D/B)ρ} dΦ``, by quadrature on a
    2-word vocabulary (each topic's ``Φ_k`` a Beta, the integral a product of K one-dimensional
    ones), for two particles with different ``β_t^i`` and unequal weights, one step at ``ρ = 0.4``:
    ``log_dirichlet_ratio`` must equal ``log p̃`` itself and the step's weights
    ``normalize((1-ρ) log w + log p̃)``. A wrong power (e.g. ``(D/B)ρ`` on ``log p̃`` as the
    predictive's), a missing ``(1-ρ)`` or a dropped normaliser moves them by far more than 1e-4."""
    model = LDA(2, 2, alpha=0.5, beta=0.7)
    d, rho = 6, 0.4
    batch = {"words": jnp.asarray([[0, 1, 1, 0], [1, 1, 1, 0]], jnp.int32),
             "mask": jnp.asarray([[True, True, True, True], [True, True, True, False]])}
    beta_t = np.array([[[3.0, 1.5], [2.2, 4.0]], [[1.6, 2.5], [5.0, 1.2]]], np.float32)
    log_w_t = np.log(np.array([0.3, 0.7], np.float32))
    state = StructuredLDAState(jnp.asarray(beta_t), jnp.asarray(log_w_t), jnp.asarray(0, jnp.int32))
    method = StructuredPMDLDA(model, d, 2, step_size={"eta": rho, "n0": 0.0, "kappa": 1.0}, threshold=0.0,
                              weights="dirichlet_ratio")
    new, _ = method.step(jax.random.key(3), state, batch)
    beta_next = np.asarray(new.beta, np.float64)
    counts = beta_next - (1 - rho) * beta_t - rho * model.beta  # (D/B)ρ n_kw, the likelihood's power
    np.testing.assert_allclose(counts.sum(axis=(1, 2)), rho * d / 2 * 7, rtol=1e-5)  # 7 tokens in the batch

    def log_integral(i):
        total = 0.0
        for k in range(2):
            def integrand(phi, b=beta_t[i, k], c=counts[i, k]):
                return np.exp((1 - rho) * stats.beta.logpdf(phi, *b) + rho * stats.beta.logpdf(phi, model.beta, model.beta)
                              + c[0] * np.log(phi) + c[1] * np.log1p(-phi))
            value, err = integrate.quad(integrand, 0.0, 1.0, epsabs=0.0, epsrel=1e-11)
            assert err < 1e-9 * value
            total += np.log(value)
        return total

    log_p = np.array([log_integral(i) for i in range(2)])
    assert abs(log_p[0] - log_p[1]) > 0.1  # the particles' weights do change
    np.testing.assert_allclose(np.asarray(log_dirichlet_ratio(jnp.asarray(beta_t), new.beta, model.beta,
                                                              jnp.float32(rho))), log_p, atol=1e-4)
    expected = (1 - rho) * log_w_t + log_p
    expected -= np.logaddexp.reduce(expected)
    np.testing.assert_allclose(np.asarray(new.log_weights), expected, atol=1e-4)


@pytest.mark.slow
def test_smc_reads_each_document_once_and_rejuvenation_helps():
    c = small_corpus()
    d = c.counts.shape[0]
    scores = {}
    for rejuvenate in (0, 100):
        result = pmd.run(LDASMC(c.model, d, 2, data=c.train, rejuvenate=rejuvenate), c.train, jax.random.key(0),
                         batch_size=30, num_passes=1.5)
        assert int(np.sum(result.info["visited"])) == d  # 1.5 passes asked, one read
        scores[rejuvenate] = c.log_perplexity(result.posterior)
    assert scores[100] < c.unigram_log_perplexity() - 0.3
    assert scores[100] < scores[0]


def test_lda_methods_refuse_bad_arguments():
    c = small_corpus()
    with pytest.raises(ConfigError, match="data="):
        LDASMC(c.model, 400, 1)
    with pytest.raises(ConfigError, match="rejuvenate"):
        LDASMC(c.model, 400, 1, data=c.train, rejuvenate=401)
    with pytest.raises(ConfigError, match="burn_in"):
        StructuredPMDLDA(c.model, 400, 1, sweeps=2, burn_in=2)
    with pytest.raises(ConfigError, match="counts must be one of average, sample, got 'mean'"):
        StructuredPMDLDA(c.model, 400, 1, counts="mean")
    with pytest.raises(ConfigError, match="weights must be one of predictive, dirichlet_ratio"):
        StructuredPMDLDA(c.model, 400, 1, weights="closed_form")
    with pytest.raises(ConfigError, match="model must be"):
        SGRLD(object(), 400, 1)
    with pytest.raises(ConfigError, match="data_size"):
        OnlineVB(c.model, 0)
