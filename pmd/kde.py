"""Weighted Gaussian kernel density estimates (eq. 6 of Dai et al. 2016).

``q̃(θ) = Σ_i α_i K_{H_i}(θ - c_i)`` with Gaussian kernels. The paper's isotropic kernel ``K_h`` is
one covariance ``H = L Lᵀ = h² I`` shared by every centre, the centres being the particles; a
:class:`Kernel` also allows one covariance per cluster of particles and centres moved off the
particles (the shrinkage of :mod:`pmd.local_kernel`). All functions are jit/vmap friendly and cost
one ``(n×d)·(d×m)`` matrix product plus a logsumexp (with one kernel per cluster, ``K`` triangular
solves of the points besides: :func:`kernel_log_density`).

Distances are computed as ``‖a‖² + ‖b‖² - 2 a·b`` after subtracting a common point from both sets:
the expansion cancels catastrophically in float32 when the points lie far from the origin relative
to their spread (a narrow posterior at ``|mean|/sd = 1000`` lost 1.4 nats of ``log q̃``), and
distances do not change under a translation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import logsumexp

from .weights import categorical_draw, stratified_draw

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Kernel:
    """Kernel centres ``(M, d)``, each centre's cluster ``(M,)`` and one Cholesky factor per
    cluster ``(K, d, d)``: component ``i`` is ``N(centres_i, chols[cluster_i] chols[cluster_i]ᵀ)``."""

    centres: Array
    cluster: Array
    chols: Array

    @classmethod
    def shared(cls, centres: Array, chol: Array) -> "Kernel":
        """One covariance ``chol cholᵀ`` for every centre (eq. 6)."""
        return cls(centres, jnp.zeros(centres.shape[:1], jnp.int32), chol[None])

    def component_chols(self) -> Array:
        """``(M, d, d)``: the Cholesky factor of each component."""
        return self.chols[self.cluster]


def whiten(x: Array, chol: Array) -> Array:
    """``L⁻¹ x`` for every row of ``x`` (``(n, d) -> (n, d)``)."""
    return solve_triangular(chol, x.T, lower=True).T


def pairwise_sq_distances(a: Array, b: Array) -> Array:
    """``‖a_i - b_j‖²`` for every pair, by one matrix product after centring both sets on ``b``'s mean."""
    origin = jnp.mean(b, axis=0)
    a, b = a - origin, b - origin
    sq = jnp.sum(a**2, axis=1)[:, None] + jnp.sum(b**2, axis=1)[None, :] - 2.0 * a @ b.T
    return jnp.maximum(sq, 0.0)


def kernel_log_density(points: Array, kernel: Kernel, log_weights: Array) -> Array:
    """``log q̃(θ)`` of the weighted mixture ``Σ_i α_i N(θ; c_i, H_{cluster_i})`` at each row of
    ``points``. ``log_weights`` need not be normalised; ``-inf`` entries are absent components.

    Each pair's Mahalanobis distance is ``xᵀH_k⁻¹x - 2 xᵀ(H_k⁻¹c_i) + c_iᵀH_k⁻¹c_i``, ``k`` the
    cluster of centre ``i``: the first term for every point and cluster (``K`` triangular solves of
    the points), the last two once per centre under its own cluster, so that every pair costs one
    ``(n×d)·(d×m)`` product for all clusters together, not one per cluster. Everything is computed
    after shifting by the centres' mean (module docstring) and whitening by the clusters' average
    covariance ``G Gᵀ``: ``H_k⁻¹`` is applied as ``(G⁻¹L_k)``'s solves, whose condition is the
    clusters' shapes relative to one another, not the posterior's (float32 lost 0.004 nats of
    ``log q̃`` at a kernel condition number of 10³ without it)."""
    log_w = log_weights - logsumexp(log_weights)
    d = points.shape[1]
    origin = jnp.mean(kernel.centres, axis=0)
    if kernel.chols.shape[0] == 1:  # one shared kernel (eq. 6): whitened by it, the distances need no solve of H⁻¹c
        chol = kernel.chols[0]
        sq = pairwise_sq_distances(whiten(points - origin, chol), whiten(kernel.centres - origin, chol))
        log_det = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(chol))))
        return logsumexp(-0.5 * sq + log_w[None, :], axis=1) - log_det - 0.5 * d * math.log(2.0 * math.pi)
    average = jnp.linalg.cholesky(jnp.mean(kernel.chols @ jnp.swapaxes(kernel.chols, 1, 2), axis=0))
    x, c = whiten(points - origin, average), whiten(kernel.centres - origin, average)

    def per_cluster(chol):  # ‖L⁻¹x‖² of every point, H⁻¹c and ‖L⁻¹c‖² of every centre (whitened by G)
        chol = solve_triangular(average, chol, lower=True)
        white_c = whiten(c, chol)
        return jnp.sum(whiten(x, chol) ** 2, axis=1), solve_triangular(chol.T, white_c.T, lower=False).T, \
            jnp.sum(white_c**2, axis=1)

    # a loop over the K clusters (each O((n + m) d²)), not vmap: (K, n) and (K, m, d) stay small
    sq_x, h_inv_c, sq_c = jax.lax.map(per_cluster, kernel.chols)
    own = jnp.arange(c.shape[0])
    h_inv_c, sq_c = h_inv_c[kernel.cluster, own], sq_c[kernel.cluster, own]
    log_det = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(kernel.chols, axis1=1, axis2=2))), axis=1)[kernel.cluster]
    sq = jnp.maximum(sq_x.T[:, kernel.cluster] - 2.0 * x @ h_inv_c.T + sq_c[None, :], 0.0)
    log_k = -0.5 * sq - log_det[None, :] - 0.5 * d * math.log(2.0 * math.pi)
    return logsumexp(log_k + log_w[None, :], axis=1)


def density_pairs(points: int, centres: int, clusters: int, dim: int) -> int:
    """The work of one :func:`kernel_log_density` in kernel pairs (:data:`pmd.work.WORK`'s
    ``kde_pairs``): every point under every centre, plus each cluster's triangular solves of the
    points and (twice) of the centres at ``dim`` pairs each, what one ``dim``-vector's solve costs
    against one pair on a CPU (measured at m = 1,000, d = 5 to 51, K = 1 to 48: the cost grows
    with ``K·d`` as this count does, within a fifth). One shared kernel (``clusters = 1``) solves
    the centres once, not twice: the count keeps the general form, ``M·d`` pairs over, as the unit
    table was measured with it (``benchmarks/bench_work_units.py``)."""
    return points * centres + clusters * (points + 2 * centres) * dim


def kernel_sample(key: Array, kernel: Kernel, log_weights: Array, n: int, stratified: bool = False) -> Array:
    """Draw ``n`` points from the weighted mixture: a component by weight, plus ``L ε`` noise.

    ``stratified`` picks the components by :func:`pmd.weights.stratified_draw` (each point is still
    marginally a draw from the mixture) instead of independently.
    """
    k_idx, k_eps = jax.random.split(key)
    idx = (stratified_draw if stratified else categorical_draw)(k_idx, log_weights, n)
    eps = jax.random.normal(k_eps, (n, kernel.centres.shape[1]), dtype=kernel.centres.dtype)
    cluster = kernel.cluster[idx]

    def add_cluster(k, noise):  # one (n×d)·(d×d) product per cluster, not an (n, d, d) gather of factors
        return noise + jnp.where((cluster == k)[:, None], eps @ kernel.chols[k].T, 0.0)

    return kernel.centres[idx] + jax.lax.fori_loop(0, kernel.chols.shape[0], add_cluster, jnp.zeros_like(eps))


def kde_log_density(points: Array, centers: Array, log_weights: Array, chol: Array) -> Array:
    """``log q̃(θ)`` of a weighted Gaussian KDE with one kernel covariance ``chol cholᵀ`` (eq. 6)."""
    return kernel_log_density(points, Kernel.shared(centers, chol), log_weights)


def kde_sample(key: Array, centers: Array, log_weights: Array, chol: Array, n: int,
               stratified: bool = False) -> Array:
    """Draw ``n`` points from the weighted KDE with one kernel covariance (see :func:`kernel_sample`)."""
    return kernel_sample(key, Kernel.shared(centers, chol), log_weights, n, stratified)
