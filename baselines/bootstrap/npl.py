"""The posterior bootstrap of nonparametric learning (NPL; Fong, Lyddon & Holmes, ICML 2019).

NPL's posterior over ``θ`` is the law of ``θ(F) = argmin_θ ∫ ℓ(y, θ) dF(y)`` under the Dirichlet
process posterior ``F | y_{1:N} ~ DP(α + N, G_N)`` (their eq. 1-4). The posterior bootstrap
(their Algorithm 2) draws each sample independently: Dirichlet weights on the data (and on ``T``
pseudo-samples from the prior centring measure ``F_π``), then the weighted objective's minimiser;
Algorithm 3 starts each local minimisation from a random draw ``θ_init ~ π_0``, which is how the
method finds several modes. The ``m`` samples are ``m`` independent optimisations, run here as
one program: the replicates are ``vmap``-ed (``parallel=False`` runs the same per-replicate
update one replicate after another with ``lax.map``, for the speed-up measurement).

**Concentration and pseudo-samples: ``α = 0``, ``T = 0``; the prior enters through the loss.**
A :class:`pmd.Model` has no sampler of data, so ``F_π`` cannot be drawn; with ``N ≫ d`` the
paper also takes ``α = 0`` (its toy mixture: "we elicit a noninformative NPL prior with
``α = 0``") and brings the Bayesian prior in through the loss (its "Loss-NPL", eq. 11,
``ℓ = -log f + γ · (-log π)``). Here ``ℓ(x, θ) = -log p(x|θ) - (1/N) log p(θ)`` (``γ = 1/N``),
so with ``w ~ Dir(1, ..., 1)``

    θ_b = argmin_θ Σ_n w_n ℓ(x_n, θ) = argmax_θ [N Σ_n w_n log p(x_n|θ) + log p(θ)],

Newton & Raftery's (1994) weighted likelihood bootstrap with the prior as a penalty. Its mean is
the posterior mode's first-order expansion and, for a regular model, its spread matches the
Bayesian posterior's to first order (Lyddon et al. 2018; exactly the closed form of
``tests/test_baselines_npl.py`` for the conjugate Gaussian). ``w_n = g_n / Σ g`` with
``g_n ~ Exp(1)``: the common normaliser multiplies every ``ℓ`` term alike, so the minimiser of
``Σ_n g_n ℓ(x_n, θ)`` is the same and no pass over the data is needed to normalise.

**One step = one optimiser step of every replicate on the runner's mini-batch, not a full
optimisation.** The runner streams mini-batches like every other method's, so each replicate
descends the unbiased mini-batch estimate ``(N/B) Σ_{n∈batch} g_n ℓ(x_n, θ)`` with optax (Adam
by default; learning rate ``η (τ + t)^-κ``); the cost per data point visited is then comparable
with the other methods', and the samples are the optimisers' current iterates. With a decaying
rate the iterate converges to the weighted optimum as the passes go on (the residual noise of a
finite run is part of what the benchmark measures). A full optimisation per step would need the
whole data set in every step.

**Weights per datum without indices.** A replicate must see the same weight ``g_n`` every time
datum ``n`` comes round, in every pass, or the passes average the weights away. The runner's
batches carry the data, not their row numbers, so ``g_{b,n}`` is a pure function of the
replicate's key and the datum's bits: the datum's words (each leaf bit-cast to ``uint32``) are
folded into the run's weight key, and the ``m`` replicates' weights of that datum are ``m``
``Exp(1)`` draws from the result (``jax.random``'s threefry: independent across data and
replicates). Whichever order and batch the datum arrives in, its weight is the same. Two
bit-identical data get one weight between them (a weight of ``2 g`` rather than
``Gamma(2)``: probability zero for continuous data, and a slight over-dispersion otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from pmd.interface import ConfigError, work
from pmd.posterior import ParticlePosterior

from .._common import first_nonfinite, refuse_diverged, require_common, stochastic_optimizer

Array = jax.Array


def datum_keys(key: Array, batch: Any) -> Array:
    """One PRNG key per datum of ``batch``: ``key`` with every word of the datum's bits folded in.

    A pure function of ``(key, datum)``: the same datum gets the same key in any batch and pass."""
    words = [jax.lax.bitcast_convert_type(leaf.reshape(leaf.shape[0], -1).astype(_word_dtype(leaf)), jnp.uint32)
             .reshape(leaf.shape[0], -1) for leaf in jax.tree_util.tree_leaves(batch)]
    words = jnp.concatenate(words, axis=1)  # (B, W)
    fold_row = lambda row: jax.lax.fori_loop(0, row.shape[0], lambda i, k: jax.random.fold_in(k, row[i]), key)
    return jax.vmap(fold_row)(words)


def _word_dtype(leaf: Array):
    """Leaves are reinterpreted as 32-bit words (64-bit leaves become two words each)."""
    if jnp.dtype(leaf.dtype).itemsize == 8:
        return jnp.float64 if jnp.issubdtype(leaf.dtype, jnp.floating) else jnp.int64
    return jnp.float32 if jnp.issubdtype(leaf.dtype, jnp.floating) else jnp.int32


def bootstrap_weights(key: Array, num_replicates: int, batch: Any) -> Array:
    """``g_{b,n} ~ Exp(1)``, ``(num_replicates, B)``: the unnormalised Dirichlet weights of every
    replicate on every datum of the batch (Algorithm 2's ``w^{(b)}``, up to their common sum)."""
    draw = lambda k: jax.random.exponential(k, (num_replicates,))
    return jax.vmap(draw, out_axes=1)(datum_keys(key, batch))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class NPLState:
    """The replicates' current iterates ``(m, d)``, their optimizer states, the weights' key, steps."""

    params: Array
    opt_state: Any
    weight_key: Array
    step: Array  # int32
    diverged_at: Array  # int32: the first step whose iterates went non-finite, -1 while none has


class PosteriorBootstrap:
    """NPL's posterior bootstrap, ``m`` replicates optimised together on mini-batches.

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``m``, bootstrap replicates (independent posterior samples).
        optimizer: ``"adam"`` or ``"sgd"``; ``learning_rate``, ``tau``, ``kappa``: its rate
            ``η (τ + t)^-κ`` (Hoffman et al. 2013's form, as SVI's).
        parallel: ``vmap`` the replicates (default) or update them one after another.
    """

    method_family = "posterior bootstrap"
    reference = "Fong, Lyddon & Holmes, ICML 2019"

    def __init__(self, model, data_size: int, num_particles: int = 100, optimizer: str = "adam",
                 learning_rate: float = 0.05, tau: float = 1.0, kappa: float = 0.5, parallel: bool = True):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.optimizer, self.learning_rate = stochastic_optimizer(optimizer, learning_rate, tau, kappa)
        if not isinstance(parallel, bool):
            raise ConfigError(f"parallel must be true or false, got {parallel!r}")
        self.parallel = parallel
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> NPLState:
        """Each replicate starts at its own prior draw (Algorithm 3's ``θ_init ~ π_0``) and gets the
        key its Dirichlet weights are drawn from."""
        k_start, k_weights = jax.random.split(key)
        params = self.model.sample_prior(k_start, self.num_particles)
        opt_state = jax.vmap(self.optimizer.init)(params)
        return NPLState(params, opt_state, k_weights, jnp.asarray(0, jnp.int32), jnp.asarray(-1, jnp.int32))

    def step(self, key: Array, state: NPLState, batch: Any) -> tuple[NPLState, dict]:
        """One optimiser step of every replicate on its weighted mini-batch objective."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: NPLState) -> ParticlePosterior:
        """The replicates' iterates, equally weighted (each is one draw of the NPL posterior);
        ``FloatingPointError`` naming the step and learning rate if one went non-finite."""
        refuse_diverged("NPL", state.diverged_at, self.learning_rate)
        return ParticlePosterior.equally_weighted(state.params)

    def loss(self, theta: Array, weights: Array, batch: Any) -> Array:
        """``(N/B) Σ_{n∈batch} g_n ℓ(x_n, θ)`` with ``ℓ = -log p(x|θ) - log p(θ)/N`` (module docstring):
        unbiased for the replicate's whole objective ``Σ_n g_n ℓ(x_n, θ)`` given its weights."""
        loglik = jax.vmap(self.model.log_likelihood, in_axes=(None, 0))(theta, batch)
        size = weights.shape[0]
        return -(self.data_size / size) * jnp.sum(weights * loglik) \
            - jnp.sum(weights) / size * self.model.log_prior(theta)

    def _replicate_update(self, theta: Array, opt_state: Any, weights: Array, batch: Any):
        grad = jax.grad(self.loss)(theta, weights, batch)
        updates, opt_state = self.optimizer.update(grad, opt_state, theta)
        return optax.apply_updates(theta, updates), opt_state

    def _step_impl(self, key: Array, state: NPLState, batch: Any) -> tuple[NPLState, dict]:
        weights = bootstrap_weights(state.weight_key, self.num_particles, batch)  # (m, B)
        update = lambda args: self._replicate_update(*args, batch)
        inputs = (state.params, state.opt_state, weights)
        params, opt_state = jax.vmap(update)(inputs) if self.parallel else jax.lax.map(update, inputs)
        t = state.step + 1
        size = jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles  # the batch at every replicate
        return NPLState(params, opt_state, state.weight_key, t, first_nonfinite(state.diverged_at, t, params)), {"learning_rate": self.learning_rate(t),
                                                                  **work(size, size)}
