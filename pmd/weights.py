"""Log-space weight arithmetic shared by every particle method.

Weights never leave log space: normalisation by logsumexp, the effective sample size, and the
step-size cap that keeps a reweighting from collapsing onto one particle.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

Array = jax.Array


def normalize(log_weights: Array) -> Array:
    """Return log-weights that sum to one (eq. 5/7: ``α_i ← α_i / Σ_j α_j``), in log space.

    Entries equal to ``-inf`` are inactive particles and stay ``-inf``. The largest entry is
    subtracted first (exactly, for every entry within a factor two of it): with ``N = 10⁶`` the
    unnormalised log-weights reach thousands, where one float32 ulp is 5e-4, and subtracting the
    logsumexp in one go left weights summing to 1 + 1e-5.
    """
    top = jnp.max(log_weights)
    shifted = log_weights - jnp.where(jnp.isfinite(top), top, 0.0)
    return shifted - logsumexp(shifted)


def effective_sample_size(log_weights: Array) -> Array:
    """Kish's effective sample size ``(Σ w)² / Σ w²`` from unnormalised log-weights."""
    return jnp.exp(2.0 * logsumexp(log_weights) - logsumexp(2.0 * log_weights))


def conditional_ess(log_weights: Array, log_increment: Array) -> Array:
    """Conditional ESS of an incremental reweighting, as a fraction of the active particles.

    ``(Σ W_i v_i)² / Σ W_i v_i²`` with ``W`` the normalised current weights and ``v`` the
    increments (Zhou, Johansen & Aston 2016, sec. 3.3: their CESS divided by ``m``); with uniform
    current weights it is ``ESS / m``. Inactive particles (``-inf`` weight) do not count.
    """
    log_w = normalize(log_weights)
    safe = jnp.where(jnp.isfinite(log_w), log_increment, 0.0)
    return jnp.exp(2.0 * logsumexp(log_w + safe) - logsumexp(log_w + 2.0 * safe))


def cap_step_size(log_weights: Array, direction: Array, gamma: Array, ess_floor, iters: int = 40) -> Array:
    """Largest ``γ' ≤ γ`` whose reweighting ``log α + γ'·direction`` keeps CESS ≥ ``ess_floor``.

    Every PMD reweighting is linear in the step size: eq. (5) is
    ``log α ← log α + γ (N ℓ̄ - log α)`` and eq. (7) is ``γ (log p - log q̃_t + N ℓ̄)`` on uniform
    weights. Theorem 6 caps ``γ_t`` by ``Δ / M`` where ``M`` bounds ``‖g_t‖∞``; the practical form of
    that cap, as adaptive tempering chooses its next temperature (Jasra et al. 2011), is the largest
    step that keeps the conditional effective sample size above a fraction of the particles. The
    CESS decreases in ``γ'``, so bisection (``iters`` halvings, a relative error of ``2^-iters``)
    finds it. ``ess_floor = 0`` returns ``γ`` unchanged; the floor may be a traced value.
    """
    def fraction(g):
        return conditional_ess(log_weights, g * direction)

    def body(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        ok = fraction(mid) >= ess_floor
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid)

    lo, _ = jax.lax.fori_loop(0, iters, body, (jnp.zeros_like(gamma), gamma))
    return jnp.where(fraction(gamma) >= ess_floor, gamma, lo)


def categorical_draw(key: Array, log_weights: Array, n: int) -> Array:
    """``n`` i.i.d. indices drawn with probabilities ``∝ exp(log_weights)``, by inverting the CDF.

    ``O(m + n log m)``; ``jax.random.categorical`` with ``shape=(n,)`` draws ``n × m`` Gumbel
    variates instead, which dominates a KDE step at ``m = n = 1500``.
    """
    cdf = jnp.cumsum(jnp.exp(normalize(log_weights)))
    u = jax.random.uniform(key, (n,), dtype=cdf.dtype) * cdf[-1]
    return jnp.minimum(jnp.searchsorted(cdf, u, side="right"), log_weights.shape[0] - 1)


def stratified_draw(key: Array, log_weights: Array, n: int) -> Array:
    """``n`` indices by stratified resampling (Kitagawa 1996), in random order.

    One uniform per stratum ``[(i + U_i)/n]``, inverted through the CDF: every index is marginally
    distributed ``∝ exp(log_weights)`` (the order is shuffled, so any subset is too), and the count
    of draws in any region is within one of its expectation. Multinomial draws instead let the
    mass of a mode drift by ``sqrt(p(1-p)/n)`` at every redraw, which accumulates over a run.
    """
    k_u, k_perm = jax.random.split(key)
    cdf = jnp.cumsum(jnp.exp(normalize(log_weights)))
    u = (jnp.arange(n, dtype=cdf.dtype) + jax.random.uniform(k_u, (n,), dtype=cdf.dtype)) / n * cdf[-1]
    idx = jnp.minimum(jnp.searchsorted(cdf, u, side="right"), log_weights.shape[0] - 1)
    return jax.random.permutation(k_perm, idx)
