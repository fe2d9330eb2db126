"""Weighted Gaussian kernel density estimates (eq. 6 of Dai et al. 2016).

``q̃(θ) = Σ_i α_i K_H(θ - θ_i)`` with a Gaussian kernel of covariance ``H = L Lᵀ``; the paper's
isotropic kernel ``K_h`` is ``L = h I``. All functions are jit/vmap friendly and cost one
``(n×d)·(d×m)`` matrix product plus a logsumexp.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import logsumexp

from .weights import categorical_draw, stratified_draw

Array = jax.Array


def whiten(x: Array, chol: Array) -> Array:
    """``L⁻¹ x`` for every row of ``x`` (``(n, d) -> (n, d)``)."""
    return solve_triangular(chol, x.T, lower=True).T


def pairwise_sq_distances(a: Array, b: Array) -> Array:
    """``‖a_i - b_j‖²`` for every pair, by ``‖a‖² + ‖b‖² - 2 a·b`` (one matrix product)."""
    sq = jnp.sum(a**2, axis=1)[:, None] + jnp.sum(b**2, axis=1)[None, :] - 2.0 * a @ b.T
    return jnp.maximum(sq, 0.0)


def gaussian_kernel_log_matrix(points: Array, centers: Array, chol: Array) -> Array:
    """``log N(points_j; centers_i, L Lᵀ)`` for every pair: ``(n, d), (m, d) -> (n, m)``."""
    d = points.shape[1]
    sq = pairwise_sq_distances(whiten(points, chol), whiten(centers, chol))
    log_det = jnp.sum(jnp.log(jnp.abs(jnp.diagonal(chol))))
    return -0.5 * sq - log_det - 0.5 * d * math.log(2.0 * math.pi)


def kde_log_density(points: Array, centers: Array, log_weights: Array, chol: Array) -> Array:
    """``log q̃(θ)`` of a weighted Gaussian KDE at each row of ``points`` (eq. 6).

    ``log_weights`` need not be normalised; ``-inf`` entries are components that do not exist.
    """
    log_w = log_weights - logsumexp(log_weights)
    return logsumexp(gaussian_kernel_log_matrix(points, centers, chol) + log_w[None, :], axis=1)


def kde_sample(key: Array, centers: Array, log_weights: Array, chol: Array, n: int,
               stratified: bool = False) -> Array:
    """Draw ``n`` points from the weighted KDE: a component by weight, plus ``L ε`` noise.

    ``stratified`` picks the components by :func:`pmd.weights.stratified_draw` (each point is still
    marginally a draw from the KDE) instead of independently.
    """
    k_idx, k_eps = jax.random.split(key)
    idx = (stratified_draw if stratified else categorical_draw)(k_idx, log_weights, n)
    eps = jax.random.normal(k_eps, (n, centers.shape[1]), dtype=centers.dtype)
    return centers[idx] + eps @ chol.T
