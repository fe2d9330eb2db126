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

**Defaults from the model: the Laplace start and the stochastic Newton gain.** With
``learning_rate=None`` (the default; ``init="laplace"``) the whole data set (``data=``) is read
once, at construction: :func:`baselines._common.laplace_approximation` gives the mode ``θ̂`` of
the full-data log joint and ``Λ = -∇² log p(θ̂|X) = (L Lᵀ)⁻¹`` there (Bishop 2006, sec. 4.4), its
reads the method's ``start_work``. Every replicate starts at ``θ̂`` (the optimum of the objective
with all weights equal; Algorithm 3's random ``θ_init ~ π_0`` looks for several modes, which one
Laplace start does not: ``init="prior"`` keeps it) and is optimised in the whitened coordinates
``θ = θ̂ + L z``, where each replicate's objective ``Σ_n g_n ℓ(x_n, θ)`` has Hessian ``≈ I``
(``E g_n = 1``). There plain SGD, ``z_t = z_{t-1} - γ_t ∇̂_z``, with ``γ_t = 1/(τ + t)``
(``optimizer="sgd"``, ``learning_rate=1``, ``kappa=1``) is the stochastic Newton method
``θ_t = θ_{t-1} - γ_t Λ⁻¹ ∇̂_θ``: Robbins & Monro's (1951) gain ``a/t`` with ``a`` the inverse
Hessian, the asymptotically efficient choice (Fabian 1968; Bottou & LeCun 2004's second-order
SGD). On a quadratic objective with Hessian ``I`` it is the running mean of the batches' Newton
targets ``ẑ_s`` and of the start: ``z_t = Σ_s γ_s Π_{r>s}(1 - γ_r) ẑ_s``, whose weights sum to
``1 - w_t``, ``w_t = Π_{s≤t}(1 - γ_s) = τ/(τ + t)`` the start's weight. The posterior reports
``z_t / (1 - w_t)``: the start's weight divided out, as Adam's bias correction divides out its
zero start (Kingma & Ba 2015, sec. 3), so after one pass of batches that cover the data the
report is each replicate's own optimum (exactly, for a quadratic). ``τ = 10`` damps the first
steps, whose Newton targets on a small batch are far off (a batch of ``B`` rows estimates the
objective with noise ``≈ sqrt(2N/B)`` posterior sds): with ``τ = 1`` NPL diverges on mesquite
(``N = 46``, ``B = 1``) and ends 0.57 in log sd too wide on kidiq (``B = 9``); with ``τ`` from 3
to 30 the 3-d test regression (tests/baselines_helpers.py) ends within 0.08 posterior sds of the
mean and 0.1 in log sd, and ``τ = 10`` does best on the posteriordb posteriors of
docs/findings.md (2026-11-26).
Adam in the same coordinates stays too narrow (its steps are of the size of its rate whatever
the gradient: 0.1 (1 + t)^-0.55 leaves the replicates 6 times too close on kidiq). An explicit
``learning_rate`` keeps the method as it was (``init=None`` then means ``"prior"``): each
replicate at a prior draw, Adam at ``0.05 (1 + t)^-0.5`` in the units of ``θ`` unless given,
the data not read; with ``init="laplace"`` it multiplies the default gain (the tuning grids'
use). ``learning_rate=None`` without ``data=`` is refused (:class:`pmd.ConfigError`).

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

from .._common import (first_nonfinite, laplace_start, refuse_diverged, require_common, resolve_init,
                       stochastic_optimizer)

Array = jax.Array
# each start's default (optimizer, learning_rate, tau, kappa) (module docstring): after the Laplace
# start the stochastic Newton gain 1/(10 + t) in the whitened coordinates
_DEFAULTS = {"laplace": ("sgd", 1.0, 10.0, 1.0), "prior": ("adam", 0.05, 1.0, 0.5)}


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
    """The replicates' current iterates ``(m, d)`` in the start's coordinates (``z``, ``θ = θ̂ + L z``
    after the Laplace start), their optimizer states, the weights' key, steps."""

    params: Array
    opt_state: Any
    weight_key: Array
    step: Array  # int32
    diverged_at: Array  # int32: the first step whose iterates went non-finite, -1 while none has
    start_weight: Array  # Π_s (1 - γ_s): the start's weight in SGD's iterate (0 when not debiased)


class PosteriorBootstrap:
    """NPL's posterior bootstrap, ``m`` replicates optimised together on mini-batches.

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``m``, bootstrap replicates (independent posterior samples).
        optimizer: ``"adam"`` or ``"sgd"``; ``learning_rate``, ``tau``, ``kappa``: its rate
            ``η (τ + t)^-κ`` (Hoffman et al. 2013's form, as SVI's). Each left at None takes the
            start's default: SGD at ``1/(10 + t)`` in the whitened coordinates after the Laplace
            start, Adam at ``0.05 (1 + t)^-0.5`` after the prior start (module docstring).
        parallel: ``vmap`` the replicates (default) or update them one after another.
        init: ``"laplace"`` or ``"prior"``; None: ``"laplace"`` when ``learning_rate`` is None, else
            ``"prior"`` (module docstring).
        data: the whole data set, which the Laplace start reads once, at construction.
    """

    method_family = "posterior bootstrap"
    reference = "Fong, Lyddon & Holmes, ICML 2019"

    def __init__(self, model, data_size: int, num_particles: int = 100, optimizer: str | None = None,
                 learning_rate: float | None = None, tau: float | None = None, kappa: float | None = None,
                 parallel: bool = True, init: str | None = None, data: Any = None):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.init_from = resolve_init(init, learning_rate)
        given = (optimizer, learning_rate, tau, kappa)
        settings = [d if v is None else v for v, d in zip(given, _DEFAULTS[self.init_from])]
        self.optimizer, self.learning_rate = stochastic_optimizer(*settings)
        self.debias = self.init_from == "laplace" and settings[0] == "sgd"
        if not isinstance(parallel, bool):
            raise ConfigError(f"parallel must be true or false, got {parallel!r}")
        self.parallel = parallel
        self.start_work, d = (0.0, 0.0), self.model.dim
        self.shift, self.whiten = jnp.zeros((d,)), jnp.eye(d)
        if self.init_from == "laplace":
            laplace = laplace_start("NPL", "learning_rate", self.model, data, self.data_size)
            self.shift, self.whiten, self.start_work = laplace.mode, laplace.chol, laplace.work
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> NPLState:
        """Every replicate at the Laplace mode (``z = 0``), or each at its own prior draw (Algorithm
        3's ``θ_init ~ π_0``), and the key its Dirichlet weights are drawn from."""
        k_start, k_weights = jax.random.split(key)
        if self.init_from == "laplace":
            params = jnp.zeros((self.num_particles, self.model.dim))
        else:
            params = self.model.sample_prior(k_start, self.num_particles)
        opt_state = jax.vmap(self.optimizer.init)(params)
        return NPLState(params, opt_state, k_weights, jnp.asarray(0, jnp.int32), jnp.asarray(-1, jnp.int32),
                        jnp.asarray(1.0 if self.debias else 0.0))

    def step(self, key: Array, state: NPLState, batch: Any) -> tuple[NPLState, dict]:
        """One optimiser step of every replicate on its weighted mini-batch objective."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: NPLState) -> ParticlePosterior:
        """The replicates' iterates (after the Laplace start with SGD, ``z_t / (1 - w_t)``: the start's
        weight divided out, module docstring), equally weighted (each is one draw of the NPL
        posterior); ``FloatingPointError`` naming the step and learning rate if one went non-finite."""
        refuse_diverged("NPL", state.diverged_at, self.learning_rate)
        z = state.params / jnp.where(state.start_weight < 1.0, 1.0 - state.start_weight, 1.0)
        return ParticlePosterior.equally_weighted(self.shift + z @ self.whiten.T)

    def loss(self, z: Array, weights: Array, batch: Any) -> Array:
        """``(N/B) Σ_{n∈batch} g_n ℓ(x_n, θ)`` at ``θ = θ̂ + L z`` (``θ = z`` after the prior start), with
        ``ℓ = -log p(x|θ) - log p(θ)/N`` (module docstring): unbiased for the replicate's whole
        objective ``Σ_n g_n ℓ(x_n, θ)`` given its weights."""
        theta = self.shift + self.whiten @ z
        loglik = jax.vmap(self.model.log_likelihood, in_axes=(None, 0))(theta, batch)
        size = weights.shape[0]
        return -(self.data_size / size) * jnp.sum(weights * loglik) \
            - jnp.sum(weights) / size * self.model.log_prior(theta)

    def _replicate_update(self, z: Array, opt_state: Any, weights: Array, batch: Any):
        grad = jax.grad(self.loss)(z, weights, batch)
        updates, opt_state = self.optimizer.update(grad, opt_state, z)
        return optax.apply_updates(z, updates), opt_state

    def _step_impl(self, key: Array, state: NPLState, batch: Any) -> tuple[NPLState, dict]:
        weights = bootstrap_weights(state.weight_key, self.num_particles, batch)  # (m, B)
        update = lambda args: self._replicate_update(*args, batch)
        inputs = (state.params, state.opt_state, weights)
        params, opt_state = jax.vmap(update)(inputs) if self.parallel else jax.lax.map(update, inputs)
        t = state.step + 1
        size = jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles  # the batch at every replicate
        start_weight = state.start_weight * (1.0 - self.learning_rate(t)) if self.debias else state.start_weight
        new = NPLState(params, opt_state, state.weight_key, t, first_nonfinite(state.diverged_at, t, params),
                       start_weight)
        return new, {"learning_rate": self.learning_rate(t), **work(size, size)}
