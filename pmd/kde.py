"""Weighted Gaussian kernel density estimates (eq. 6 of Dai et al. 2016).

``q̃(θ) = Σ_i α_i K_{H_i}(θ - c_i)`` with Gaussian kernels. The paper's isotropic kernel ``K_h`` is
one covariance ``H = L Lᵀ = h² I`` shared by every centre, the centres being the particles; a
:class:`Kernel` also allows one covariance per cluster of particles and centres moved off the
particles (the shrinkage of :mod:`pmd.local_kernel`). All functions are jit/vmap friendly and cost
one ``(n×d)·(d×m)`` matrix product (per cluster) plus a logsumexp.

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


def gaussian_kernel_log_matrix(points: Array, centers: Array, chol: Array) -> Array:
    """``log N(points_j; centers_i, L Lᵀ)`` for every pair: ``(n, d), (m, d) -> (n, m)``."""
    d = points.shape[1]
    origin = jnp.mean(centers, axis=0)
    sq = pairwise_sq_distances(whiten(points - origin, chol), whiten(centers - origin, chol))
    log_det = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(chol))))
    return -0.5 * sq - log_det - 0.5 * d * math.log(2.0 * math.pi)


def kernel_log_density(points: Array, kernel: Kernel, log_weights: Array) -> Array:
    """``log q̃(θ)`` of the weighted mixture ``Σ_i α_i N(θ; c_i, H_{cluster_i})`` at each row of
    ``points``. ``log_weights`` need not be normalised; ``-inf`` entries are absent components."""
    log_w = log_weights - logsumexp(log_weights)

    def cluster(k, chol):
        mine = jnp.where(kernel.cluster == k, log_w, -jnp.inf)
        return logsumexp(gaussian_kernel_log_matrix(points, kernel.centres, chol) + mine[None, :], axis=1)

    # a loop, not vmap (a (K, n, m) block hung XLA's CPU runtime), and not unrolled (K copies in the
    # compiled program)
    per_cluster = jax.lax.map(lambda args: cluster(*args), (jnp.arange(kernel.chols.shape[0]), kernel.chols))
    return logsumexp(per_cluster, axis=0)


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
