"""Distances between any method's posterior and reference posterior draws (e.g. from NUTS).

Where no grid posterior exists (Dai et al. 2016, section 6: logistic regression in 51 dimensions)
a method is scored against draws of a trusted sampler. Everything is computed in coordinates
standardised by the reference, ``z_k = (θ_k - μ_k) / σ_k`` with ``μ, σ`` the reference draws' mean
and standard deviation, so the numbers do not depend on the features' scales:

* ``mean_error``: ``‖z̄_q‖ / √d``, the RMS over coordinates of the posterior-mean error in units of
  reference standard deviations; ``mean_error_raw`` is ``‖μ_q - μ‖`` in the original units;
* ``log_std_ratio``: ``1/d Σ_k log(σ_{q,k} / σ_k)`` (negative: ``q`` is too narrow, as the
  Jaakkola-Jordan bound makes it);
* ``mean_error_max`` and ``log_std_ratio_max``: the worst coordinate, ``max_k |z̄_{q,k}|`` and
  ``max_k |log(σ_{q,k} / σ_k)|`` (an average over many coordinates can hide one that is far off);
* ``energy``: the energy distance ``2 E‖X-Y‖ - E‖X-X'‖ - E‖Y-Y'‖`` (Székely & Rizzo 2013, eq. 2;
  zero iff the distributions agree) between ``q``'s weighted samples and the reference draws, as
  the weighted V-statistic;
* ``sliced_w2``: the sliced 2-Wasserstein distance (Bonneel et al. 2015)
  ``(E_u W2²(uᵀX, uᵀY))^{1/2}`` over ``num_projections`` uniform directions ``u``, each 1-D ``W2``
  exact between the two weighted empirical distributions (quantile functions matched on the merged
  breakpoints). The directions are drawn once per reference (key 0 unless given), so every method,
  every evaluation and the floor are projected on the same ones (common random numbers: a
  difference between two scores is the samples', not the directions'), and the reference's sorted
  projections are computed once: a score sorts only the sample's own projections.

Finite samples keep the sample-based distances above zero even for exact draws: score held-out
reference draws (:meth:`SampleReference.score` on draws not in the reference) for that floor.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .kde import pairwise_sq_distances
from .posterior import Posterior, own_draws
from .weights import normalize

Array = jax.Array


def _cross_mean_distance(x: Array, wx: Array, y: Array, wy: Array) -> Array:
    """``Σ_ij wx_i wy_j ‖x_i - y_j‖`` (weights normalised)."""
    return wx @ jnp.sqrt(pairwise_sq_distances(x, y)) @ wy


def energy_distance(x: Array, log_wx: Array, y: Array, log_wy: Array) -> Array:
    """The energy distance between two weighted samples (V-statistic; module docstring)."""
    wx, wy = jnp.exp(normalize(log_wx)), jnp.exp(normalize(log_wy))
    return (2.0 * _cross_mean_distance(x, wx, y, wy) - _cross_mean_distance(x, wx, x, wx)
            - _cross_mean_distance(y, wy, y, wy))


def _sorted_cdf(a: Array, wa: Array) -> tuple[Array, Array]:
    """A weighted 1-D sample sorted, with its cumulative weights normalised to end at 1."""
    order = jnp.argsort(a)
    cumulative = jnp.cumsum(wa[order])
    return a[order], cumulative / cumulative[-1]


def _quantile_w2(a: Array, ca: Array, b: Array, cb: Array) -> Array:
    """``W2²`` between two sorted 1-D samples given their normalised cumulative weights ``ca``, ``cb``:
    both quantile functions are step functions, constant between the merged cumulative weights, so
    ``∫_0^1 (F_a⁻¹(u) - F_b⁻¹(u))² du`` is an exact finite sum over those intervals.

    The breakpoints are merged by rank instead of sorted (``ca[i]`` lands at ``i + #{cb < ca[i]}``,
    ``cb[j]`` at ``j + #{ca ≤ cb[j]}``: distinct places), and on the interval below merged
    breakpoint ``k`` the quantile of ``a`` is ``a[#{a's breakpoints before k}]`` (of ``b`` alike)."""
    na, nb = ca.shape[0], cb.shape[0]
    at_a = jnp.arange(na) + jnp.searchsorted(cb, ca, side="left")
    at_b = jnp.arange(nb) + jnp.searchsorted(ca, cb, side="right")
    upper = jnp.zeros(na + nb, ca.dtype).at[at_a].set(ca).at[at_b].set(cb)
    lower = jnp.concatenate([jnp.zeros((1,), upper.dtype), upper[:-1]])
    from_a = jnp.zeros(na + nb, jnp.int32).at[at_a].set(1)
    before_a = jnp.cumsum(from_a) - from_a  # a's breakpoints strictly before each merged one
    qa = a[jnp.minimum(before_a, na - 1)]
    qb = b[jnp.minimum(jnp.arange(na + nb) - before_a, nb - 1)]
    return jnp.sum((upper - lower) * (qa - qb) ** 2)


def wasserstein2_1d(a: Array, wa: Array, b: Array, wb: Array) -> Array:
    """``W2²`` between two weighted 1-D empirical distributions (normalised weights ``wa``, ``wb``)."""
    return _quantile_w2(*_sorted_cdf(a, wa), *_sorted_cdf(b, wb))


def directions(key: Array, num_projections: int, dim: int) -> Array:
    """``num_projections`` directions drawn uniformly on the unit sphere of ``R^dim``, ``(num, dim)``."""
    u = jax.random.normal(key, (num_projections, dim))
    return u / jnp.linalg.norm(u, axis=1, keepdims=True)


class SampleReference:
    """Reference posterior draws ``(n, d)``, equally weighted, to score posteriors against.

    The standardisation and the reference's own ``E‖Y-Y'‖`` are computed once, and finished before
    the constructor returns (``self_term``: ``O(n²)`` distances, 2.3 s at ``n = 20,000`` on a 2-core
    CPU; left to JAX's asynchronous dispatch, that work was charged to whatever blocked next, the
    first method a benchmark timed); :meth:`score` is one jitted call.
    """

    def __init__(self, draws: np.ndarray, num_projections: int = 128, key: Array | None = None):
        draws = np.asarray(draws, np.float64)
        if draws.ndim != 2 or draws.shape[0] < 2:
            raise ValueError(f"reference draws must be an (n ≥ 2, d) array, got shape {draws.shape}")
        if not np.all(np.isfinite(draws)):
            raise ValueError("reference draws contain non-finite values")
        self.draws = draws.astype(np.float32)
        self.mean = draws.mean(axis=0).astype(np.float32)
        self.std = draws.std(axis=0).astype(np.float32)
        if not np.all(self.std > 0):
            raise ValueError("reference draws have a coordinate of zero spread")
        loc, scale = jnp.asarray(self.mean), jnp.asarray(self.std)
        ref = (jnp.asarray(self.draws) - loc) / scale
        w_ref = jnp.full((ref.shape[0],), 1.0 / ref.shape[0], ref.dtype)
        self_term = self.self_term = jax.block_until_ready(_cross_mean_distance(ref, w_ref, ref, w_ref))
        # the sliced distance's directions, drawn once: every sample scored against this reference is
        # projected on the same ones, and the reference's sorted projections are computed here once
        u = self.directions = directions(jax.random.key(0) if key is None else key, num_projections, ref.shape[1])
        ref_sorted = jax.block_until_ready(jnp.sort(u.astype(ref.dtype) @ ref.T, axis=1))
        ref_cdf = jnp.arange(1, ref.shape[0] + 1, dtype=ref.dtype) / ref.shape[0]

        def score(samples: Array, log_weights: Array) -> dict:
            z = (samples - loc) / scale
            w = jnp.exp(normalize(log_weights))
            mean_z = w @ z
            var_z = w @ (z - mean_z) ** 2
            cross = _cross_mean_distance(z, w, ref, w_ref)
            log_std_ratio = 0.5 * jnp.log(var_z)
            return {
                "mean_error": jnp.linalg.norm(mean_z) / jnp.sqrt(z.shape[1]),
                "mean_error_max": jnp.max(jnp.abs(mean_z)),
                "mean_error_raw": jnp.linalg.norm(mean_z * scale),
                "log_std_ratio": jnp.mean(log_std_ratio),
                "log_std_ratio_max": jnp.max(jnp.abs(log_std_ratio)),
                "energy": 2.0 * cross - _cross_mean_distance(z, w, z, w) - self_term,
                "sliced_w2": jnp.sqrt(jnp.mean(jax.vmap(
                    lambda v, b: _quantile_w2(*_sorted_cdf(z @ v, w), b, ref_cdf))(u.astype(z.dtype), ref_sorted))),
            }

        self._score = jax.jit(score)

    def score(self, samples: Array, log_weights: Array) -> dict[str, float]:
        """The distances of the weighted sample ``(samples (n, d), log_weights (n,))`` to the reference."""
        samples = jnp.asarray(samples, jnp.float32)
        if samples.ndim != 2 or samples.shape[1] != self.draws.shape[1]:
            raise ValueError(f"samples must be (n, {self.draws.shape[1]}), got shape {samples.shape}")
        out = self._score(samples, jnp.asarray(log_weights, jnp.float32))
        return {name: float(v) for name, v in out.items()}

    def score_posterior(self, posterior: Posterior, key: Array, num_samples: int = 1000) -> dict[str, float]:
        """:meth:`score` of ``num_samples`` points of the posterior's own distribution
        (:func:`pmd.posterior.own_draws`: the yardstick every method and every floor share)."""
        samples, log_w = own_draws(posterior, key, num_samples)
        return self.score(samples, log_w)


def reference_floor(chains: np.ndarray, num_samples: int) -> dict[str, float]:
    """The floor of every distance at ``num_samples`` draws: that many draws of the last reference
    chain, thinned evenly along it, scored against the other chains pooled (what independent exact
    draws score, up to the chains' autocorrelation). The sample-based distances shrink with the
    sample size (exact draws in d = 51: energy 0.0146 at 1,000, 0.0353 at 300, 0.172 at 64), so a
    floor means something only at the ``num_samples`` every method is scored from
    (:func:`pmd.posterior.own_draws`); the sliced distance's directions are those every sample
    scored against a reference of that dimension is projected on (:class:`SampleReference`).

    ``chains`` is ``(num_chains ≥ 2, draws, d)``; the held-out chain must hold ``num_samples`` draws.
    """
    chains = np.asarray(chains)
    if chains.ndim != 3 or chains.shape[0] < 2:
        raise ValueError(f"reference chains must be (num_chains >= 2, draws, d), got shape {chains.shape}")
    per_chain = chains.shape[1]
    if not 1 <= num_samples <= per_chain:
        raise ValueError(f"a floor at {num_samples} draws needs a held-out chain of at least that many; "
                         f"the reference chains hold {per_chain} draws each")
    picked = chains[-1][np.round(np.linspace(0, per_chain - 1, num_samples)).astype(int)]
    return SampleReference(chains[:-1].reshape(-1, chains.shape[-1])).score(picked, np.zeros(num_samples, np.float32))
