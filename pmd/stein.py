"""The kernel Stein discrepancy: how far weighted points are from a target known only up to its
normalising constant, read from the target's score ``∇ log p`` and never from its draws.

For points ``θ_i`` with weights ``w_i`` (summing to 1) and scores ``s_i = ∇ log p(θ_i)``, the
squared discrepancy is the weighted V-statistic (Liu, Lee & Jordan 2016, eq. 11; Gorham & Mackey
2017, Proposition 2)

    KSD² = Σ_ij w_i w_j k₀(θ_i, θ_j),
    k₀(x, y) = s_xᵀ s_y k(x, y) + s_xᵀ ∇_y k(x, y) + s_yᵀ ∇_x k(x, y) + tr ∇_x ∇_y k(x, y),

with the inverse multiquadric kernel ``k(x, y) = (c² + ‖x − y‖²)^β``, ``c = 1``, ``β = −1/2``:
Gorham & Mackey (2017, Theorem 8) show that with it the KSD → 0 only if the points converge
weakly to ``p`` (a Gaussian kernel's KSD can vanish on samples that do not), for distantly
dissipative targets. With ``r = x − y`` and ``u = c² + ‖r‖²``: ``∇_x k = 2β u^{β−1} r = −∇_y k``
and ``tr ∇_x ∇_y k = −2βd u^{β−1} − 4β(β−1) u^{β−2} ‖r‖²``.

Its population value is zero only at the target; it needs no reference draws and no held-out data, so
the tuning protocol scores a run by it where a posterior has no rows to hold out
(:func:`workflow.tuning.stein_criterion`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .weights import normalize

Array = jax.Array

IMQ_SCALE, IMQ_POWER = 1.0, -0.5  # c and β of the kernel (Gorham & Mackey 2017, section 4)


def stein_kernel(x: Array, sx: Array, y: Array, sy: Array, scale: float = IMQ_SCALE,
                 power: float = IMQ_POWER) -> Array:
    """``k₀(x_i, y_j)`` of the module docstring for every pair: (n, d) points and scores against
    (m, d) points and scores, an (n, m) matrix."""
    d = x.shape[1]
    r = x[:, None, :] - y[None, :, :]
    sq = jnp.sum(r * r, axis=-1)
    u = scale**2 + sq
    k = u**power
    grad_x_coef = 2.0 * power * u ** (power - 1.0)  # ∇_x k = coef · r, ∇_y k = −coef · r
    scores = (sx @ sy.T) * k
    cross = grad_x_coef * (jnp.einsum("nd,nmd->nm", sx, -r) + jnp.einsum("md,nmd->nm", sy, r))
    trace = -2.0 * power * d * u ** (power - 1.0) - 4.0 * power * (power - 1.0) * u ** (power - 2.0) * sq
    return scores + cross + trace


def kernel_stein_discrepancy(points: Array, log_weights: Array, scores: Array) -> Array:
    """``KSD`` (the square root of the weighted V-statistic) of weighted ``points`` (n, d) with
    their target scores ``scores`` (n, d); ``log_weights`` need not be normalised, and ``-inf``
    weights are absent points."""
    w = jnp.exp(normalize(log_weights))
    w = jnp.where(jnp.isfinite(log_weights), w, 0.0)
    safe = jnp.where(w[:, None] > 0, scores, 0.0)  # an absent point's score may be anything
    k0 = stein_kernel(points, safe, points, safe)
    return jnp.sqrt(jnp.maximum(w @ k0 @ w, 0.0))
