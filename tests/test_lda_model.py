"""The LDA model's shared pieces: token arrays, the Gibbs kernel, eq. 19's perplexity, topic matching,
and online VB step for step against scikit-learn (the same algorithm)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from lda_helpers import small_corpus

from pmd_bench.baselines.lda import OnlineVB
from pmd import ConfigError
from pmd.models import lda


def test_tokens_hold_every_count():
    counts = sp.csr_matrix(np.array([[0, 2, 1], [3, 0, 0], [0, 0, 1]]))
    t = lda.tokens(counts, length=4)
    assert t["words"].shape == (3, 4) and t["mask"].sum(axis=1).tolist() == [3, 3, 1]
    rebuilt = np.zeros((3, 3), int)
    for row in range(3):
        np.add.at(rebuilt[row], t["words"][row][t["mask"][row]], 1)
    np.testing.assert_array_equal(rebuilt, counts.toarray())
    np.testing.assert_array_equal(t["doc"], [0, 1, 2])
    with pytest.raises(ConfigError, match="length=2"):
        lda.tokens(counts, length=2)


def test_bad_inputs_name_the_field():
    with pytest.raises(ConfigError, match="alpha"):
        lda.LDA(3, 10, alpha=-1.0)
    with pytest.raises(ConfigError, match="num_topics"):
        lda.LDA(0, 10)
    with pytest.raises(ConfigError, match="kappa"):
        lda.learning_rate({"eta": 1.0, "n0": 1.0, "kappa": 2.0})
    with pytest.raises(ConfigError, match="step_size needs keys"):
        lda.learning_rate({"eta": 1.0})
    with pytest.raises(ConfigError, match="words"):
        lda.LDA(3, 10).check_batch({"words": jnp.zeros((2, 3)), "mask": jnp.ones((2, 4), bool)})
    with pytest.raises(ConfigError, match="num_particles must be 1"):
        OnlineVB(lda.LDA(3, 10), data_size=5, num_particles=2)


def test_step_sizes():
    np.testing.assert_allclose(lda.learning_rate({"eta": 2.0, "n0": 3.0, "kappa": 0.5})(4), 2.0 / 5.0, rtol=1e-6)
    np.testing.assert_allclose(lda.learning_rate({"tau0": 10.0, "kappa": 0.7})(2), 12.0**-0.7, rtol=1e-6)


def test_gibbs_conditional_is_exact():
    """One-token documents: the conditional is ``p(z = k) ∝ α Φ_kw``; 20,000 documents, each
    frequency within 5 binomial standard errors (a false alarm about 1 in 10^6 per topic)."""
    phi = jnp.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3]], jnp.float32)
    n = 20_000
    words = jnp.ones((n, 1), jnp.int32)  # every document is word 1
    mask = jnp.ones((n, 1), bool)
    z, soft = lda.gibbs_assignments(jax.random.key(0), words, mask, phi, 0.1, sweeps=3, burn_in=2)
    expected = np.asarray(phi[:, 1] / phi[:, 1].sum())
    freq = np.bincount(np.asarray(z[:, 0]), minlength=3) / n
    np.testing.assert_array_less(np.abs(freq - expected), 5 * np.sqrt(expected * (1 - expected) / n))
    np.testing.assert_allclose(np.asarray(soft.sum(axis=-1)), 1.0, rtol=1e-6)


@pytest.mark.slow
def test_gibbs_follows_disjoint_topics():
    """Topics with disjoint supports leave one possible assignment per word: z must be it."""
    phi = np.zeros((3, 6), np.float32)
    for k in range(3):
        phi[k, 2 * k: 2 * k + 2] = 0.5
    words = jax.random.randint(jax.random.key(1), (50, 8), 0, 6)
    mask = jnp.arange(8)[None, :] < jax.random.randint(jax.random.key(2), (50, 1), 1, 9)
    z, _ = lda.gibbs_assignments(jax.random.key(3), words, mask, jnp.asarray(phi), 0.1, sweeps=2, burn_in=1)
    np.testing.assert_array_equal(np.asarray(z)[np.asarray(mask)], (np.asarray(words) // 2)[np.asarray(mask)])


@pytest.mark.slow
def test_perplexity_of_one_topic_is_exact():
    """With ``K = 1``, ``θ_d = 1`` whatever the estimation half, so eq. 19 is ``p(x_dn) = Φ_{x_dn}``
    and the log-perplexity is ``-mean log Φ`` over the evaluation tokens — for both posteriors."""
    c = small_corpus()
    phi = np.random.default_rng(0).dirichlet(np.ones(c.model.vocabulary))
    words, mask = c.evaluation["words"], c.evaluation["mask"]
    exact = -np.log(phi)[words[mask]].mean()
    samples = lda.equally_weighted(jnp.asarray(phi[None, None], jnp.float32))
    assert c.log_perplexity(samples) == pytest.approx(exact, rel=1e-5)
    variational = lda.VariationalTopics(jnp.asarray(phi[None] * 1e3, jnp.float32))
    assert c.log_perplexity(variational) == pytest.approx(exact, rel=1e-5)


def test_true_topics_beat_a_uniform_guess():
    """The truth's perplexity is far below the vocabulary size (uniform topics score exactly log W)."""
    c = small_corpus()
    uniform = lda.equally_weighted(jnp.full((1, c.model.num_topics, c.model.vocabulary), 1 / c.model.vocabulary))
    assert c.log_perplexity(uniform) == pytest.approx(np.log(c.model.vocabulary), rel=1e-5)
    assert c.truth_log_perplexity() < np.log(c.model.vocabulary) - 1.0


def test_topic_recovery_matches_permuted_topics():
    truth = np.random.default_rng(1).dirichlet(np.full(20, 0.1), size=4)
    perm = truth[[2, 0, 3, 1]]
    assert lda.topic_recovery(perm, truth)["topic_hellinger"] == pytest.approx(0.0, abs=1e-6)
    disjoint = np.eye(4, 20)
    shifted = np.roll(disjoint, 4, axis=1)
    assert lda.topic_recovery(shifted, disjoint)["topic_hellinger_max"] == pytest.approx(1.0)
    with pytest.raises(ConfigError, match="cannot cover"):
        lda.topic_recovery(truth[:2], truth)


@pytest.mark.slow
def test_online_vb_is_scikit_learns_algorithm():
    """Two online-VB updates from the same ``λ`` on the same batches, ours and scikit-learn's
    ``partial_fit``, agree to 1e-3 relative. Both E-steps run to a 1e-6 mean change of ``γ_d``
    (each starts ``γ_d`` from its own random draws, so they meet only at the fixed point); the
    rest is float32 (ours) against float64, a relative error near 1e-6 per operation."""
    from sklearn.decomposition import LatentDirichletAllocation
    from sklearn.decomposition._lda import _dirichlet_expectation_2d

    c = small_corpus()
    d, batch = c.counts.shape[0], 50
    ours = OnlineVB(c.model, d, step_size={"tau0": 10.0, "kappa": 0.7}, max_iter=2000, tol=1e-6)
    state = ours.init(jax.random.key(0))
    sk = LatentDirichletAllocation(n_components=c.model.num_topics, doc_topic_prior=c.model.alpha,
                                   topic_word_prior=c.model.beta, learning_method="online", learning_offset=10.0,
                                   learning_decay=0.7, batch_size=batch, total_samples=d, max_doc_update_iter=2000,
                                   mean_change_tol=1e-6, random_state=0)
    sk._init_latent_vars(c.model.vocabulary)
    sk.components_ = np.asarray(state.lam, np.float64)
    sk.exp_dirichlet_component_ = np.exp(_dirichlet_expectation_2d(sk.components_))
    for i in range(2):
        rows = slice(i * batch, (i + 1) * batch)
        sk.partial_fit(c.counts[rows])
        state, _ = ours.step(jax.random.key(i), state, {k: jnp.asarray(v[rows]) for k, v in c.train.items()})
    np.testing.assert_allclose(np.asarray(state.lam), sk.components_, rtol=1e-3, atol=1e-4)
