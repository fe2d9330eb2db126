"""One-pass sequential Monte Carlo (Balakrishnan & Madigan, Bayesian Analysis 2006).

Static-parameter SMC in the style of Chopin (2002) that reads each datum exactly once:

1. start from ``m`` prior draws with equal weights;
2. for each mini-batch ``x_b``: ``log w_i ← log w_i + Σ_b log p(x_b|θ_i)`` (Bayes' rule for the new
   data: the likelihood to the power one, since each datum is used once; contrast PMD's ``Nγ_t``);
3. when the effective sample size falls below ``threshold · m``, resample and rejuvenate by kernel
   smoothing instead of an MCMC move (which would need all data seen so far): draw
   ``θ_new ~ Σ_i w_i N(a θ_i + (1-a) θ̄, h² V)`` with ``θ̄, V`` the weighted mean and covariance and
   ``a = sqrt(1 - h²)`` — the shrinkage of Liu & West (2001, sec. 3), which keeps the mean and
   covariance of the cloud instead of inflating it by ``h² V``.

The bandwidth is the normal-reference one, ``h² = (4 / ((d + 2) n))^{2/(d+4)}`` with ``n`` the
effective sample size (West 1993; the rule Balakrishnan & Madigan suggest, used by Dai et al. H.1),
unless ``bandwidth`` fixes ``h``.

The posterior is that same kernel-smoothed density, a :class:`pmd.posterior.KDEPosterior` with
centres ``a θ_i + (1-a) θ̄`` and covariance ``h² V`` (H.1 evaluates every method with a normalised
Gaussian kernel); its mean and covariance are those of the weighted particles.

One pass: once ``data_size`` points have been read the method has its final answer and further
steps change nothing and report ``info["visited"] = 0`` (the runner's curves then stop at ``N``
data visited, which is how Dai et al. Figure 1 shows it: "it stopped with high error"). When
``N`` is not a multiple of the batch size, the runner's batch that straddles two passes is used
only for its first-pass rows.

Work (``info["evals"]``, :func:`pmd.interface.work`): a step that reads data evaluates the batch's
log-likelihood at every particle, ``B·m`` terms (all ``B`` rows, even those of a straddling batch
that the weights leave out); the Liu-West rejuvenation draws from a kernel density and evaluates
no likelihood, so nothing is added when it happens. A step after the pass is skipped
(``lax.cond``) and evaluates nothing. No gradients: ``grad_evals = 0``. (Under
:func:`pmd.runner.run_batched`'s ``vmap`` a ``cond`` runs both branches; the counts are those of
the algorithm, as :func:`pmd.runner.run` executes it.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from pmd.bandwidth import stable_cholesky, weighted_cov
from pmd.interface import ConfigError, require_fraction, work
from pmd.posterior import KDEPosterior
from pmd.weights import categorical_draw, effective_sample_size, normalize

from .._common import require_common

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SMCState:
    """Particles, their normalised log-weights, the data points read so far and the step count."""

    positions: Array  # (m, d)
    log_weights: Array  # (m,)
    seen: Array  # int32
    step: Array  # int32


class OnePassSMC:
    """One-pass SMC with kernel-smoothing rejuvenation (Balakrishnan & Madigan 2006).

    Args:
        model, data_size, num_particles: as for :class:`pmd.PMD` (``m`` particles).
        threshold: resample when the ESS falls below ``threshold · m`` (default 0.5).
        bandwidth: ``h ∈ (0, 1)``; None uses the normal-reference rule on the ESS.
        jitter: added to the diagonal of the weighted covariance, relative to its mean variance,
            before its Cholesky factor (:func:`pmd.bandwidth.stable_cholesky`).
    """

    method_family = "sequential Monte Carlo"
    reference = "Balakrishnan & Madigan, Bayesian Analysis 2006"

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int,
        threshold: float = 0.5,
        bandwidth: float | None = None,
        jitter: float = 1e-5,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.threshold = require_fraction("threshold", threshold)
        if bandwidth is not None and (isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float))
                                      or not 0 < bandwidth < 1):
            raise ConfigError(f"bandwidth h must lie in (0, 1) (the shrinkage is sqrt(1 - h²)), got {bandwidth!r}")
        self.bandwidth = bandwidth
        self.jitter = require_fraction("jitter", jitter, high=float("inf"))
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> SMCState:
        """``m`` prior draws with equal weights."""
        m = self.num_particles
        positions = self.model.sample_prior(key, m)
        zero = jnp.asarray(0, jnp.int32)
        return SMCState(positions, jnp.full((m,), -jnp.log(m), positions.dtype), zero, zero)

    def step(self, key: Array, state: SMCState, batch: Any) -> tuple[SMCState, dict]:
        """Reweight by the batch likelihood, then resample and rejuvenate if the ESS is low."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: SMCState) -> KDEPosterior:
        """The Liu-West kernel-smoothed density of the weighted particles."""
        centres, chol = self._smoothing_kernel(state.positions, state.log_weights)
        return KDEPosterior(centres, state.log_weights, chol)

    def _smoothing_kernel(self, positions: Array, log_weights: Array) -> tuple[Array, Array]:
        """Kernel centres ``a θ_i + (1-a) θ̄`` and the Cholesky factor of ``h² V``."""
        d = positions.shape[1]
        if self.bandwidth is None:
            n = effective_sample_size(log_weights)
            h = (4.0 / ((d + 2.0) * n)) ** (1.0 / (d + 4.0))
        else:
            h = jnp.asarray(self.bandwidth, positions.dtype)
        shrink = jnp.sqrt(1.0 - h**2)
        mean = jnp.exp(log_weights) @ positions
        chol = stable_cholesky(weighted_cov(positions, log_weights), self.jitter)
        return shrink * positions + (1.0 - shrink) * mean, h * chol

    def _rejuvenate(self, key: Array, positions: Array, log_weights: Array) -> tuple[Array, Array]:
        """Draw ``m`` points from the kernel-smoothed density; they carry equal weights."""
        m, d = positions.shape
        k_idx, k_eps = jax.random.split(key)
        centres, chol = self._smoothing_kernel(positions, log_weights)
        idx = categorical_draw(k_idx, log_weights, m)
        eps = jax.random.normal(k_eps, (m, d), dtype=positions.dtype)
        return centres[idx] + eps @ chol.T, jnp.full((m,), -jnp.log(m), positions.dtype)

    def _step_impl(self, key: Array, state: SMCState, batch: Any) -> tuple[SMCState, dict]:
        """Read the batch's first-pass rows; once the pass is over, skip the step (``lax.cond``)."""
        size = jax.tree_util.tree_leaves(batch)[0].shape[0]
        fresh = jnp.clip(self.data_size - state.seen, 0, size)  # first-pass rows in this batch
        return jax.lax.cond(fresh > 0, self._read, self._after_pass, key, state, batch, fresh)

    def _read(self, key: Array, state: SMCState, batch: Any, fresh: Array) -> tuple[SMCState, dict]:
        loglik = self.model.batch_log_likelihood(state.positions, batch)  # (m, B)
        increment = jnp.sum(jnp.where(jnp.arange(loglik.shape[1]) < fresh, loglik, 0.0), axis=1)
        log_w = normalize(state.log_weights + increment)
        ess = effective_sample_size(log_w)
        resample = ess < self.threshold * self.num_particles
        positions, log_w = jax.lax.cond(
            resample,
            lambda: self._rejuvenate(key, state.positions, log_w),
            lambda: (state.positions, log_w),
        )
        new = SMCState(positions, log_w, state.seen + fresh, state.step + 1)
        # ess: before any resampling; work: the batch at every particle (module docstring)
        return new, {"ess": ess, "resampled": resample, "visited": fresh, **work(loglik.size)}

    def _after_pass(self, key: Array, state: SMCState, batch: Any, fresh: Array) -> tuple[SMCState, dict]:
        new = SMCState(state.positions, state.log_weights, state.seen, state.step + 1)
        info = {"ess": effective_sample_size(state.log_weights), "resampled": jnp.asarray(False), "visited": fresh}
        return new, {**info, **work(0)}
