"""A kernel for PMD's redraws that neither inflates the iterate nor blurs its modes.

Eq. (6) places a kernel ``K_H`` on every particle. Drawn from at every redraw, a kernel of
covariance ``H`` adds ``H`` to the iterate's covariance each time: the KDE iterate is wider than
the iterate it approximates, the error compounds over redraws (measured: 22× too wide on logistic
regression at 1.6M rows), and a narrower ``H`` instead starves the cloud of the spread it needs
(the particles collapse). With several modes a kernel built from the *global* covariance is as
wide as the distance between them, and the prox step (eq. 2) takes mass from the mode the kernel
fits worse at every step (by Hölder, ``∫_A q̃^{1-γ} f^γ`` is largest when ``q̃ ∝ f`` on ``A``):
measured on the Welling-Teh mixture, one mode's mass drifted from 0.5 to 1.0 in 30 steps.

:class:`LocalShrinkage` therefore (1) clusters the weighted particles by weighted k-means
(``K`` clusters, Lloyd iterations from a weighted k-means++ start) and merges back the clusters
that are not separate modes (Ashman's D below ``separation``: k-means cuts a single mode too, and
measured on posteriordb's unimodal posteriors, kernels per piece of one mode were 2-6× further
from the reference mean than one kernel), and (2) in each cluster ``c``
applies the kernel shrinkage of Liu & West (2001, sec. 3.3; West 1993): centres
``a_c θ_i + (1 - a_c) μ_c`` and kernel covariance ``h_c² Σ_c`` with ``a_c = sqrt(1 - h_c²)``, so
that each cluster's KDE has exactly the weighted mean ``μ_c`` and covariance ``Σ_c`` of its
particles: the mixture of clusters keeps the mean and covariance of the whole cloud, and every mode
keeps its own shape. ``h_c²`` is the normal-reference (Silverman) factor
``scale² (4 / ((d + 2) n_c))^{2/(d+4)}`` on the cluster's effective sample size ``n_c``, capped at
``max_h2`` so that ``a_c`` stays away from zero. A cluster with few particles borrows strength from
the pooled within-cluster covariance ``Σ_pool = Σ_c W_c Σ_c``:
``Σ̂_c = (n_c Σ_c + ν Σ_pool) / (n_c + ν)`` with ``ν = d + 2`` (the posterior mean under an
inverse-Wishart prior centred on ``Σ_pool``), so its covariance is defined even when ``n_c ≤ d``.
With ``K = 1`` this is Liu and West's kernel, the one one-pass SMC uses (``baselines/smc/one_pass.py``).

**How wide.** The default ``h_c²`` is the normal-reference rule (0.1 in two dimensions, 0.6 at
``d = 30`` with a thousand particles). The option ``h2`` fixes it instead; near 1 (the configs'
``pmd_smooth``: ``h2 = 0.99``) each redraw is nearly a draw from the cluster's moment-matched
Gaussian, and the KDE ``q̃`` it came from is a smooth density. That matters for eq. (7), which
weights a fresh draw by ``(p · L^N / q̃)^γ``: with the normal-reference ``h²`` in ``d``
dimensions each draw sits under its own kernel far above its neighbours' (the others outweigh it
only when ``n h^d ≳ 1`` for ``n`` particles), ``q̃`` is rough, and those weights shrink the iterate
at every mirror-descent step. Measured on the conjugate Gaussian (``d = 30``, ``m = 2000``, one
seed): the mean log variance ratio fell from −0.31 at the end of the first pass to −0.57 over three
more passes with the default ``h²``, and stayed at −0.30 with ``h2 = 0.99``. It is not the default
because it loses within-cluster shape at every redraw: on the Welling-Teh mixture (``d = 2``) a
mode's mass missed by 0.11 where the default misses by at most 0.08 on the same seeds
(``docs/findings.md`` has every measurement of the option). The option ``neighbours`` is the rule
in between (the normal-reference ``h²`` raised to ``(k / n_c)^{2/d}``): it leaves low dimensions as
the default has them and, on posteriordb, solved no more posteriors than the default (measured
beside both in ``workflow/config/pmd_smooth.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from .bandwidth import stable_cholesky
from .kde import Kernel, pairwise_sq_distances
from .weights import effective_sample_size, normalize, stratified_draw

Array = jax.Array


def weighted_kmeans(key: Array, points: Array, log_weights: Array, k: int, iters: int = 10,
                    sample: int = 256) -> Array:
    """Cluster labels ``(m,)`` of weighted points by Lloyd's algorithm from a k-means++ start.

    The centres are fitted to ``sample`` points drawn by stratified resampling (so every point of
    the fit weighs the same, and the fit costs ``O(sample · k · d)`` whatever ``m``); every point
    then takes the label of its nearest centre. The start (Arthur & Vassilvitskii 2007) draws a
    first centre at random and each next one with probability ∝ squared distance to the nearest
    chosen centre; ``iters`` Lloyd iterations follow (an empty cluster keeps its centre).
    """
    k_draw, k_first, *keys = jax.random.split(key, k + 1)
    fit = points[stratified_draw(k_draw, log_weights, sample)]
    centres = jnp.broadcast_to(fit[jax.random.randint(k_first, (), 0, sample)], (k, points.shape[1]))
    for j in range(1, k):  # unchosen rows still hold the first centre: distances to the chosen ones
        nearest = jnp.min(pairwise_sq_distances(fit, centres), axis=1)
        centres = centres.at[j].set(fit[jax.random.categorical(keys[j - 1], jnp.log(jnp.maximum(nearest, 1e-30)))])
    def lloyd(_, centres):  # a loop, not unrolled: one copy in the compiled program
        one_hot = jax.nn.one_hot(jnp.argmin(pairwise_sq_distances(fit, centres), axis=1), k, dtype=points.dtype)
        count = jnp.sum(one_hot, axis=0)
        means = (one_hot.T @ fit) / jnp.maximum(count, 1.0)[:, None]
        return jnp.where(count[:, None] > 0, means, centres)

    centres = jax.lax.fori_loop(0, iters, lloyd, centres)
    return jnp.argmin(pairwise_sq_distances(points, centres), axis=1).astype(jnp.int32)


def cluster_moments(positions: Array, log_w: Array, labels: Array, k: int):
    """Per cluster: its mass ``W_c``, weighted mean ``μ_c``, covariance ``Σ_c`` and ESS ``n_c``."""
    member = jax.nn.one_hot(labels, k, dtype=positions.dtype)  # (m, K)
    log_member = jnp.where(member.T > 0, log_w[None, :], -jnp.inf)  # (K, m)
    mass = jnp.exp(jax.scipy.special.logsumexp(log_member, axis=1))
    w = jnp.exp(log_w)[None, :] * member.T / jnp.maximum(mass, 1e-30)[:, None]  # rows sum to 1
    means = w @ positions
    centred = positions[None, :, :] - means[:, None, :]
    covs = jnp.einsum("km,kmi,kmj->kij", w, centred, centred)
    ess = jnp.where(mass > 0, jax.vmap(effective_sample_size)(log_member), 1.0)
    return mass, means, covs, ess


def merge_unseparated(labels: Array, means: Array, covs: Array, mass: Array, separation: float) -> Array:
    """Merge clusters that are not separate modes: ``c`` and ``c'`` join when Ashman's D along the
    line through their means, ``D = √2 |μ_c - μ_c'| / sqrt(σ_c² + σ_c'²)`` (``σ²`` each cluster's
    variance along that line), is below ``separation``, and joining is transitive.

    K-means splits a single Gaussian too (into halves with ``D ≈ 2.7``); well separated modes have
    ``D`` far above (the Welling-Teh mixture's two modes: about 10). Each merged group takes the
    smallest label among its members; empty clusters join nothing.
    """
    k = means.shape[0]
    diff = means[:, None, :] - means[None, :, :]  # (K, K, d)
    sq = jnp.sum(diff**2, axis=-1)
    along = jnp.einsum("abi,aij,abj->ab", diff, covs, diff) / jnp.maximum(sq, 1e-30)  # σ_a² along a-b
    d_ashman = jnp.sqrt(2.0 * sq / jnp.maximum(along + along.T, 1e-30))
    present = mass > 0
    joined = (d_ashman < separation) & present[:, None] & present[None, :] | jnp.eye(k, dtype=bool)
    reach = jax.lax.fori_loop(0, k, lambda _, r: r | jnp.any(r[:, :, None] & r[None, :, :], axis=1),
                              joined)  # transitive closure
    root = jnp.argmax(reach, axis=1)  # the smallest label each cluster reaches
    return root[labels].astype(jnp.int32)


@dataclass(frozen=True)
class LocalShrinkage:
    """Per-cluster Liu-West kernel (module docstring): ``(key, θ, log α) -> Kernel``.

    Args:
        clusters: ``K``, the most clusters (1: Liu and West's single kernel).
        scale: multiplies the normal-reference bandwidth ``h_c``.
        max_h2: cap on ``h_c²`` (the shrinkage ``a_c = sqrt(1 - h_c²)`` stays ≥ ``sqrt(1 - max_h2)``).
        separation: Ashman's D below which two clusters are one mode (:func:`merge_unseparated`).
        jitter: relative diagonal jitter of each cluster covariance's Cholesky factor.
        h2: a fixed ``h_c²`` for every cluster in place of the normal-reference rule (``scale``
            and ``max_h2`` then play no part); near 1, each cluster's redraw is nearly its
            moment-matched Gaussian (module docstring: what that buys and costs).
        neighbours: ``k``: raise the normal-reference ``h_c²`` to at least ``(k / n_c)^{2/d}``, so
            that about ``k`` neighbouring kernels weigh as much as a draw's own (``n h^d ≈ k``) and
            ``q̃`` is smooth in high dimensions while low dimensions keep the normal-reference width.
    """

    clusters: int = 4
    scale: float = 1.0
    max_h2: float = 0.9
    separation: float = 4.0
    jitter: float = 1e-5
    h2: float | None = None
    neighbours: float | None = None

    def __call__(self, key: Array, positions: Array, log_weights: Array, cluster: bool = True) -> Kernel:
        """The kernel; without ``cluster``, every particle in cluster 0 (Liu and West's one kernel) in
        the same ``K``-slot structure, the other slots empty: what the robust variant's initial
        state holds, where the kernel is only reported until the first redraw fits its own
        (:meth:`pmd.PMD.init`), without compiling the k-means."""
        d, k = positions.shape[1], self.clusters
        log_w = normalize(log_weights)
        labels = jnp.zeros(positions.shape[:1], jnp.int32)
        if k > 1 and cluster:
            labels = weighted_kmeans(key, positions, log_w, k)
            mass, means, covs, _ = cluster_moments(positions, log_w, labels, k)
            labels = merge_unseparated(labels, means, covs, mass, self.separation)
        mass, means, covs, ess = cluster_moments(positions, log_w, labels, k)
        pooled = jnp.einsum("k,kij->ij", mass, covs)
        nu = d + 2.0
        covs = (ess[:, None, None] * covs + nu * pooled) / (ess + nu)[:, None, None]
        if self.h2 is None:
            h2 = self.scale**2 * (4.0 / ((d + 2.0) * ess)) ** (2.0 / (d + 4.0))
            if self.neighbours is not None:
                h2 = jnp.maximum(h2, (self.neighbours / ess) ** (2.0 / d))
            h2 = jnp.minimum(h2, self.max_h2)
        else:
            h2 = jnp.full_like(ess, self.h2)
        chols = jax.vmap(lambda c, h: stable_cholesky(h * c, self.jitter))(covs, h2)
        shrink = jnp.sqrt(1.0 - h2)[labels][:, None]
        centres = shrink * positions + (1.0 - shrink) * means[labels]
        return Kernel(centres, labels, chols)
