"""Latent Dirichlet allocation (Appendix F.2, eq. 17) and its held-out perplexity (H.4, eq. 19).

LDA with ``K`` topics ``Φ_k ~ Dir(β)`` over ``W`` words, proportions ``θ_d ~ Dir(α)``, and each
token drawing ``z_dn ~ θ_d``, ``x_dn ~ Φ_{z_dn}`` (H.4: ``K = 100``, ``α = 0.1``, ``β = 0.01``).

Documents travel as padded token arrays, the leading axis indexing documents (what
:func:`pmd.run` batches): ``{"words": (D, L) int32, "mask": (D, L) bool, "doc": (D,) int32}``
(:func:`tokens`), ``doc`` being the row's index (SMC revisits past documents by it).

The pieces every LDA method shares live here, so that their differences are only their updates:

* :func:`gibbs_assignments`: Gibbs sweeps over the topic assignments of documents with the topics
  ``Φ`` fixed and ``θ_d`` integrated out — the local step of structured PMD and SGRLD and the
  ``θ_d`` estimate of H.4 for every sampling method;
* :func:`variational_estep`: Hoffman et al.'s (2010) per-document coordinate ascent, the local
  step of online VB and its ``θ_d`` estimate;
* two posteriors: :class:`TopicSamples` (weighted topic matrices: PMD, SMC, SGRLD, Gibbs) and
  :class:`VariationalTopics` (``q(Φ) = Π_k Dir(λ_k)``: online VB and its peers);
* :func:`heldout_log_perplexity` (eq. 19) and :func:`topic_recovery` (distance of matched topics).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax.scipy.special import digamma, logsumexp

from ..interface import ConfigError, require_positive_int

Array = jax.Array


@dataclass(frozen=True)
class LDA:
    """The model: ``num_topics`` (K), ``vocabulary`` (W) and the symmetric priors ``alpha``, ``beta``."""

    num_topics: int
    vocabulary: int
    alpha: float = 0.1
    beta: float = 0.01

    def __post_init__(self):
        require_positive_int("num_topics", self.num_topics)
        require_positive_int("vocabulary", self.vocabulary)
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigError(f"the Dirichlet prior {name} must be a positive number, got {value!r}")

    def check_batch(self, batch: Any) -> int:
        """Check a batch of padded documents (:func:`tokens`); returns its number of documents."""
        if not isinstance(batch, Mapping) or not {"words", "mask"} <= set(batch):
            raise ConfigError("an LDA batch is a mapping with 'words' and 'mask' (see pmd.models.lda.tokens)")
        words, mask = batch["words"], batch["mask"]
        if words.ndim != 2 or words.shape != mask.shape:
            raise ConfigError(f"LDA batch: words {words.shape} and mask {mask.shape} must be equal (docs, length)")
        if not jnp.issubdtype(words.dtype, jnp.integer):
            raise ConfigError(f"LDA batch: words must be integer word ids, got {words.dtype}")
        return int(words.shape[0])


def require_lda(model: Any, data_size: Any, num_particles: Any) -> tuple[LDA, int, int]:
    """The arguments every LDA method shares, checked: an :class:`LDA`, ``N`` documents, ``m`` particles."""
    if not isinstance(model, LDA):
        raise ConfigError(f"model must be a pmd.models.lda.LDA, got {type(model).__name__}")
    return model, require_positive_int("data_size", data_size), require_positive_int("num_particles", num_particles)


def require_sweeps(sweeps: Any, burn_in: Any) -> tuple[int, int]:
    """Gibbs sweeps per visited document and how many of them are burn-in: ``0 ≤ burn_in < sweeps``."""
    sweeps = require_positive_int("sweeps", sweeps)
    if isinstance(burn_in, bool) or not isinstance(burn_in, int) or not 0 <= burn_in < sweeps:
        raise ConfigError(f"burn_in must be an integer in [0, sweeps={sweeps}), got {burn_in!r}")
    return sweeps, burn_in


def tokens(counts: sp.spmatrix, length: int | None = None) -> dict[str, np.ndarray]:
    """A documents × vocabulary count matrix as padded token arrays ``{"words", "mask", "doc"}``.

    Each document's tokens are its word ids repeated by their counts, in column order, padded
    with word 0 and ``mask = False`` to ``length`` (default: the longest document).
    """
    counts = sp.csr_matrix(counts)
    if counts.nnz and counts.data.min() < 0:
        raise ConfigError("word counts must be non-negative")
    lengths = np.asarray(counts.sum(axis=1)).ravel().astype(np.int64)
    longest = int(lengths.max(initial=0))
    length = max(longest, 1) if length is None else length
    if length < longest:
        raise ConfigError(f"length={length} is shorter than the longest document ({longest} tokens)")
    words = np.zeros((counts.shape[0], length), np.int32)
    for row in range(counts.shape[0]):
        start, stop = counts.indptr[row], counts.indptr[row + 1]
        ids = np.repeat(counts.indices[start:stop], counts.data[start:stop])
        words[row, : len(ids)] = ids
    mask = np.arange(length)[None, :] < lengths[:, None]
    return {"words": words, "mask": mask, "doc": np.arange(counts.shape[0], dtype=np.int32)}


# -- step sizes ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class InverseOffsetPower:
    """``ρ_t = η / (n₀ + t^κ)`` for ``t = 1, 2, ...``: H.4's step size for PMD, SVI and SGRLD."""

    eta: float
    n0: float
    kappa: float

    def __call__(self, t):
        return self.eta / (self.n0 + jnp.asarray(t, jnp.float32) ** self.kappa)


@dataclass(frozen=True)
class OffsetPower:
    """``ρ_t = (τ₀ + t)^(-κ)``: Hoffman, Blei & Bach (2010)'s rate, scikit-learn's
    ``learning_offset``/``learning_decay`` (used to compare online VB with its peers)."""

    tau0: float
    kappa: float

    def __call__(self, t):
        return (self.tau0 + jnp.asarray(t, jnp.float32)) ** (-self.kappa)


def learning_rate(spec: Any):
    """``{"eta", "n0", "kappa"}`` → :class:`InverseOffsetPower`; ``{"tau0", "kappa"}`` → :class:`OffsetPower`.

    ``κ ∈ [0, 1]``; ``η > 0``; ``n₀, τ₀ ≥ 0`` (``τ₀ + 1 > 0`` keeps the first rate finite).
    """
    if not isinstance(spec, Mapping):
        raise ConfigError(f"step_size must be a mapping {{eta, n0, kappa}} or {{tau0, kappa}}, got {spec!r}")
    keys = set(spec)
    for name, value in spec.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"step_size.{name} must be a number, got {value!r}")
    if keys not in ({"eta", "n0", "kappa"}, {"tau0", "kappa"}):
        raise ConfigError(f"step_size needs keys {{eta, n0, kappa}} or {{tau0, kappa}}, got {sorted(keys)}")
    if not 0 <= spec["kappa"] <= 1:
        raise ConfigError(f"step_size.kappa must lie in [0, 1], got {spec['kappa']!r}")
    if "eta" in spec:
        if not spec["eta"] > 0 or not spec["n0"] >= 0:
            raise ConfigError(f"step_size needs eta > 0 and n0 >= 0, got {dict(spec)}")
        return InverseOffsetPower(float(spec["eta"]), float(spec["n0"]), float(spec["kappa"]))
    if not spec["tau0"] >= 0:
        raise ConfigError(f"step_size.tau0 must be non-negative, got {spec['tau0']!r}")
    return OffsetPower(float(spec["tau0"]), float(spec["kappa"]))


# -- local steps -----------------------------------------------------------------------------------
def gibbs_assignments(key: Array, words: Array, mask: Array, topics: Array, alpha: float, sweeps: int,
                      burn_in: int) -> tuple[Array, Array]:
    """Gibbs sweeps over the assignments ``z_d`` of documents, ``Φ`` fixed, ``θ_d`` collapsed.

    ``p(z_dn = k | z_d^{-n}, Φ) ∝ (n_dk^{-n} + α) Φ_{k, x_dn}`` (the collapsed conditional of
    Griffiths & Steyvers 2004 with the topics given). ``z`` starts from ``p(z = k) ∝ Φ_{k,x_dn}``.
    Returns ``(z, soft)``: the last sweep's assignments ``(B, L)`` and the one-hot assignments
    averaged over the ``sweeps - burn_in`` sweeps after burn-in, ``(B, L, K)``, zero at padding.
    ``topics``: ``(K, W)`` rows summing to one.
    """
    require_sweeps(sweeps, burn_in)
    num_topics = topics.shape[0]
    phi_w = jnp.moveaxis(jnp.take(topics, words, axis=1), 0, -1)  # (B, L, K)
    k_init, k_sweeps = jax.random.split(key)
    flat = phi_w.reshape(-1, num_topics)
    z = categorical_rows(jax.random.uniform(k_init, flat.shape[:1], topics.dtype), flat).reshape(words.shape)
    counts = (jax.nn.one_hot(z, num_topics, dtype=topics.dtype) * mask[..., None]).sum(axis=1)  # (B, K)
    uniforms = jax.random.uniform(k_sweeps, (sweeps, words.shape[1], words.shape[0]), dtype=topics.dtype)
    phi_by_position, mask_by_position = jnp.swapaxes(phi_w, 0, 1), mask.T

    def position(counts, inputs):
        pw, m, zl, u = inputs  # (B, K), (B,), (B,), (B,)
        rest = counts - jax.nn.one_hot(zl, num_topics, dtype=counts.dtype) * m[:, None]
        new_z = categorical_rows(u, (rest + alpha) * pw)
        return rest + jax.nn.one_hot(new_z, num_topics, dtype=counts.dtype) * m[:, None], new_z

    def sweep(carry, u):
        z, counts = carry
        counts, z_new = jax.lax.scan(position, counts, (phi_by_position, mask_by_position, z.T, u))
        return (z_new.T, counts), z_new.T

    (z, _), zs = jax.lax.scan(sweep, (z, counts), uniforms)
    kept = zs[burn_in:]  # (S, B, L)
    soft = jax.nn.one_hot(kept, num_topics, dtype=topics.dtype).mean(axis=0) * mask[..., None]
    return z, soft


def categorical_rows(u: Array, probs: Array) -> Array:
    """One draw per row of unnormalised ``probs`` (B, K) by inverting the CDF at ``u`` (B,) uniforms.

    The CDF is a product with an upper-triangular matrix of ones: on XLA's CPU backend ``cumsum``
    lowers to a windowed reduction measured 3x slower at K = 100."""
    k = probs.shape[-1]
    cdf = probs @ jnp.triu(jnp.ones((k, k), probs.dtype))
    return jnp.minimum(jnp.sum(cdf < (u * cdf[:, -1])[:, None], axis=-1), k - 1)


def doc_topic_estimate(soft: Array, alpha: float) -> Array:
    """H.4's ``θ_dk = (Σ_n δ(z_dn = k) + α) / (N_d + Kα)`` from (averaged) one-hot assignments ``(B, L, K)``."""
    counts = soft.sum(axis=1)
    return (counts + alpha) / (counts.sum(axis=1, keepdims=True) + soft.shape[-1] * alpha)


def topic_word_counts(words: Array, soft: Array, vocabulary: int) -> Array:
    """``n_kw = Σ_{d, n} soft_dnk δ(x_dn = w)``: ``(K, W)`` from assignments ``(B, L, K)`` (zero at padding)."""
    num_topics = soft.shape[-1]
    flat = jnp.zeros((vocabulary, num_topics), soft.dtype).at[words.reshape(-1)].add(soft.reshape(-1, num_topics))
    return flat.T


def dirichlet_expectation(param: Array) -> Array:
    """``E[log X]`` for ``X ~ Dir(param)`` along the last axis: ``ψ(param) - ψ(Σ param)``."""
    return digamma(param) - digamma(param.sum(axis=-1, keepdims=True))


def variational_estep(key: Array, words: Array, mask: Array, lam: Array, alpha: float, max_iter: int = 100,
                      tol: float = 1e-3) -> tuple[Array, Array]:
    """Hoffman, Blei & Bach (2010), Algorithm 2's E-step, as scikit-learn runs it.

    ``γ_d`` starts at ``Gamma(100, 1/100)`` draws; repeat ``φ_dnk ∝ exp(E[log θ_dk] + E[log β_k,x_dn])``,
    ``γ_d = α + Σ_n φ_dn`` until the mean absolute change of ``γ_d`` is below ``tol`` (each document
    stops on its own) or ``max_iter`` rounds. Returns ``(γ (B, K), sstats (K, W), rounds)`` with
    ``sstats_kw = Σ_{d,n: x_dn = w} φ_dnk`` computed from the final ``γ_d`` and ``rounds`` the
    rounds run (each updates all ``B`` documents; a converged one's update is discarded).
    """
    exp_elog_beta = jnp.exp(dirichlet_expectation(lam))  # (K, W)
    eb = jnp.moveaxis(jnp.take(exp_elog_beta, words, axis=1), 0, -1) * mask[..., None]  # (B, L, K)
    gamma0 = jax.random.gamma(key, 100.0, (words.shape[0], lam.shape[0]), dtype=lam.dtype) / 100.0
    m = mask.astype(lam.dtype)

    def update(gamma):
        et = jnp.exp(dirichlet_expectation(gamma))  # (B, K)
        norm = jnp.einsum("bk,blk->bl", et, eb) + 1e-30
        return alpha + et * jnp.einsum("bl,blk->bk", m / norm, eb)

    def cond(carry):
        it, _, active = carry
        return (it < max_iter) & jnp.any(active)

    def body(carry):
        it, gamma, active = carry
        new = update(gamma)
        change = jnp.mean(jnp.abs(new - gamma), axis=1)
        gamma = jnp.where(active[:, None], new, gamma)
        return it + 1, gamma, active & (change >= tol)

    rounds, gamma, _ = jax.lax.while_loop(cond, body, (0, gamma0, jnp.ones(words.shape[0], bool)))
    et = jnp.exp(dirichlet_expectation(gamma))
    norm = jnp.einsum("bk,blk->bl", et, eb) + 1e-30
    phi = et[:, None, :] * eb / norm[..., None]  # (B, L, K), zero at padding
    return gamma, topic_word_counts(words, phi, lam.shape[1]), rounds


# -- posteriors ------------------------------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class TopicSamples:
    """``q(Φ) ≈ Σ_s w_s δ(Φ_s)``: topic matrices ``(S, K, W)`` (rows sum to one) with normalised
    log-weights ``(S,)``. ``θ_d`` of a held-out document comes from Gibbs sweeps with each ``Φ_s``
    fixed (H.4: "for PMD, SMC and stochastic Langevin dynamics")."""

    topics: Array
    log_weights: Array

    def expected_topics(self) -> Array:
        """``E_q[Φ]`` (K, W)."""
        return jnp.einsum("s,skw->kw", jnp.exp(self.log_weights), self.topics)

    def heldout_token_log_probs(self, key: Array, estimation: Mapping, evaluation: Mapping, alpha: float,
                                sweeps: int, burn_in: int) -> Array:
        """``log p(x_dn | X)`` of eq. 19 for every evaluation token ``(D, L)``: for each ``Φ_s``,
        ``θ_d`` is averaged over the kept Gibbs sweeps on the estimation half, then
        ``p = Σ_s w_s θ_d^T Φ_s[:, x_dn]``."""

        def one(k, phi):
            _, soft = gibbs_assignments(k, estimation["words"], estimation["mask"], phi, alpha, sweeps, burn_in)
            theta = doc_topic_estimate(soft, alpha)  # (D, K)
            phi_w = jnp.take(phi, evaluation["words"], axis=1)  # (K, D, L)
            return jnp.log(jnp.einsum("dk,kdl->dl", theta, phi_w) + 1e-30)

        keys = jax.random.split(key, self.topics.shape[0])
        per_sample = jax.lax.map(lambda a: one(*a), (keys, self.topics))  # (S, D, L)
        return logsumexp(per_sample + self.log_weights[:, None, None], axis=0)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class VariationalTopics:
    """``q(Φ) = Π_k Dir(λ_k)`` (``λ``: (K, W)). ``θ_d`` of a held-out document is ``E_q[θ_d]`` from
    :func:`variational_estep` (H.4: "for stochastic variational inference, q(θ_d) is updated as in
    the learning procedure"), and ``p(x_dn) = E_q[θ_d]^T E_q[Φ_{:, x_dn}]``."""

    lam: Array

    def expected_topics(self) -> Array:
        """``E_q[Φ] = λ_k / Σ_w λ_kw``."""
        return self.lam / self.lam.sum(axis=1, keepdims=True)

    def heldout_token_log_probs(self, key: Array, estimation: Mapping, evaluation: Mapping, alpha: float,
                                sweeps: int, burn_in: int) -> Array:
        """``log p(x_dn | X)`` of eq. 19 for every evaluation token ``(D, L)`` (``sweeps`` unused)."""
        del sweeps, burn_in
        gamma, _, _ = variational_estep(key, estimation["words"], estimation["mask"], self.lam, alpha)
        theta = gamma / gamma.sum(axis=1, keepdims=True)
        phi_w = jnp.take(self.expected_topics(), evaluation["words"], axis=1)
        return jnp.log(jnp.einsum("dk,kdl->dl", theta, phi_w) + 1e-30)


def equally_weighted(topics: Array) -> TopicSamples:
    """Topic matrices ``(S, K, W)`` with equal weights."""
    s = topics.shape[0]
    return TopicSamples(topics, jnp.full((s,), -jnp.log(s), topics.dtype))


# -- evaluation ------------------------------------------------------------------------------------
def heldout_log_perplexity(posterior, key: Array, estimation: Mapping, evaluation: Mapping, alpha: float,
                           sweeps: int = 20, burn_in: int = 10, chunk: int = 250) -> float:
    """H.4's held-out log-perplexity: ``-Σ_{d,n} log p(x_dn^evaluation | X) / Σ_d N_d^evaluation``.

    ``p`` is eq. 19 with ``θ_d`` estimated on each document's estimation half by the posterior's
    own strategy (``heldout_token_log_probs``). H.4 writes the perplexity of one document; like
    Patterson & Teh (2013), whose evaluation it follows, the documents' tokens are pooled (a
    token-weighted mean, so long documents weigh more). Documents go ``chunk`` at a time.
    """
    total, count = 0.0, 0
    num_docs = estimation["words"].shape[0]
    for i, start in enumerate(range(0, num_docs, chunk)):
        part = slice(start, start + chunk)
        est = {k: jnp.asarray(estimation[k][part]) for k in ("words", "mask")}
        ev = {k: jnp.asarray(evaluation[k][part]) for k in ("words", "mask")}
        logp = _token_log_probs(posterior, jax.random.fold_in(key, i), est, ev, alpha, sweeps, burn_in)
        total += float(jnp.sum(jnp.where(ev["mask"], logp, 0.0)))
        count += int(ev["mask"].sum())
    if count == 0:
        raise ConfigError("the evaluation halves hold no tokens")
    return -total / count


def common_log_perplexity(posterior, key: Array, estimation: Mapping, evaluation: Mapping, alpha: float,
                          sweeps: int, burn_in: int) -> float:
    """The held-out log-perplexity by ONE estimator for every method, whatever its family.

    Every posterior, variational or sampled, gives its mean topics ``Φ̂ = E_q[Φ]``
    (``expected_topics``); ``θ_d`` of each held-out document is then folded in by the same Gibbs
    sweeps on its estimation half with ``Φ̂`` fixed (:func:`gibbs_assignments`, the assignments
    averaged over the ``sweeps - burn_in`` kept sweeps; Wallach et al. 2009's "estimated θ"
    document completion), and eq. 19 is evaluated with ``Φ̂``. H.4's estimator instead takes
    ``θ_d`` from Gibbs sweeps for sampling methods and from the converged E-step for variational
    ones (``heldout_token_log_probs``): on the Wikipedia corpus (K = 100) the same topics score
    7.265 nats by the E-step and 7.412 by 10 Gibbs sweeps, so two families compared by H.4's
    rule differ by the estimators as much as by the topics. The plug-in ``Φ̂`` is what every
    family has; the mixture over particles that H.4 averages is kept in H.4's column.
    ``sweeps`` must be large enough that the estimate has converged: :func:`fold_in_ladder`.
    """
    point = equally_weighted(jnp.asarray(posterior.expected_topics())[None])
    return heldout_log_perplexity(point, key, estimation, evaluation, alpha, sweeps, burn_in)


def fold_in_ladder(posterior, key: Array, estimation: Mapping, evaluation: Mapping, alpha: float,
                   sweeps: list[int]) -> list[float]:
    """:func:`common_log_perplexity` at each of ``sweeps`` (burn-in half of each), one key for all:
    the estimate against fold-in work, whose last steps show whether it has converged."""
    return [common_log_perplexity(posterior, key, estimation, evaluation, alpha, s, s // 2) for s in sweeps]


@partial(jax.jit, static_argnames=("sweeps", "burn_in"))
def _token_log_probs(posterior, key, est, ev, alpha, sweeps, burn_in):
    return posterior.heldout_token_log_probs(key, est, ev, alpha, sweeps, burn_in)


def topic_recovery(estimated: np.ndarray, truth: np.ndarray) -> dict[str, float]:
    """Match estimated topics ``(K', W)`` to true ones ``(K, W)`` (Hungarian assignment on the
    Hellinger distance) and report the matched pairs' mean and worst Hellinger distance (0: the
    same distributions, 1: disjoint supports). Each true topic is matched once; ``K' ≥ K`` needed."""
    from scipy.optimize import linear_sum_assignment

    estimated, truth = np.asarray(estimated, np.float64), np.asarray(truth, np.float64)
    if estimated.shape[1] != truth.shape[1] or estimated.shape[0] < truth.shape[0]:
        raise ConfigError(f"topic_recovery: estimated topics {estimated.shape} cannot cover the true {truth.shape}")
    est = estimated / estimated.sum(axis=1, keepdims=True)
    sq = np.sqrt(truth)[:, None, :] - np.sqrt(est)[None, :, :]
    hellinger = np.sqrt(0.5 * np.sum(sq**2, axis=-1))  # (K, K')
    rows, cols = linear_sum_assignment(hellinger)
    matched = hellinger[rows, cols]
    return {"topic_hellinger": float(matched.mean()), "topic_hellinger_max": float(matched.max())}


def random_topics(key: Array, num_topics: int, vocabulary: int, dtype=jnp.float32) -> Array:
    """``(K, W)`` positive draws ``Gamma(100, 1/100)``: Hoffman et al.'s initial ``λ`` (scikit-learn's too)."""
    return jax.random.gamma(key, 100.0, (num_topics, vocabulary), dtype=dtype) / 100.0


__all__ = ["LDA", "require_lda", "require_sweeps", "tokens", "learning_rate", "gibbs_assignments", "categorical_rows", "doc_topic_estimate", "topic_word_counts",
           "variational_estep", "TopicSamples", "VariationalTopics", "equally_weighted",
           "heldout_log_perplexity", "common_log_perplexity", "fold_in_ladder", "topic_recovery", "random_topics"]
