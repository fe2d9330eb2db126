"""Stein variational gradient descent (Liu & Wang, NeurIPS 2016) and its online form with a
sublinearly growing batch, OPVI (Yang, Liu & Zhang, "Particle-based online Bayesian sampling").

SVGD moves ``m`` particles along the kernelised Stein direction (Liu & Wang, eq. 8 / Algorithm 1)

    φ(θ_i) = 1/m Σ_j [k(θ_j, θ_i) ∇ log p(θ_j | x) + ∇_{θ_j} k(θ_j, θ_i)],

``θ_i ← θ_i + ε φ(θ_i)`` (``ε`` through optax, as BlackJAX does), with the RBF kernel
``k(θ, θ') = exp(-‖θ - θ'‖² / h)`` and the median heuristic ``h = med² / log m`` (``med`` the
median distance between distinct particles, recomputed from the particles at every move; Liu &
Wang, sec. 5). The score is the unbiased mini-batch estimate
``∇ log p(θ) + (N / |S_t|) Σ_{x∈S_t} ∇ log p(x|θ)`` (Welling & Teh 2011, eq. 4). Its cost per
move is ``O(m² d)`` for the kernel plus ``m`` likelihood gradients per datum.

**OPVI's growing batch.** OPVI's Algorithm 1 moves the particles once per round ``t`` on a batch
``S_t`` of ``|S_t| ∝ t^κ`` points with ``κ < 1`` (sec. 3.3: a sublinearly growing batch keeps the
accumulated gradient error sublinear, so the dynamic regret is sublinear; a constant batch
gives a linear error bound). The runner hands every method batches of one fixed size ``B``, so
here round ``t`` is the union of ``n_t = ⌈t^κ⌉`` consecutive runner batches: the particles stay
put while their likelihood gradients are summed over those batches, so the sum is exactly the
gradient on ``S_t`` (``|S_t| = n_t B``; the authors' code uses ``|S_t| = ⌈t^0.55⌉``, so
``batch_growth=0.55`` with their unit batch). Between moves a step only adds ``m × B``
gradients; the ``O(m² d)`` kernel runs once per round (``m²`` ``kernel_pairs`` of
:data:`pmd.work.WORK`, charged as the step that moves). ``batch_growth=0`` is plain mini-batch
SVGD (one move per runner batch).

**Departures from the paper, and why.** (i) Its per-round objective weighs the unscaled batch
likelihood against a prior weight ``6 / (π² t²)`` (summing to one over rounds, so the rounds of
one pass add up to the full posterior); its field therefore targets a different distribution at
every round. Here the score is the unbiased estimate of the whole posterior's, so every round
targets ``p(θ | x_{1:N})``, the posterior the benchmark scores. (ii) Its experiments scale the
repulsive term ``∇k`` by ``λ < 1`` ("diffusion term", sec. 4.4); a field
``Σ_j k ∇ log p + λ ∇k`` has the fixed point of SVGD on ``p^{1/λ}``, a tempered posterior
``1/λ`` times more concentrated. ``repulsion=λ`` is offered; its default 1 is the posterior.

**Defaults from the model: the Laplace start and metric.** With ``step_size=None`` (the default;
``init="laplace"``) the whole data set (``data=``) is read once, at construction:
:func:`baselines._common.laplace_approximation` gives the mode ``θ̂`` of the full-data log joint
and ``Λ = -∇² log p(θ̂|X) = (L Lᵀ)⁻¹`` there (Bishop 2006, sec. 4.4), its reads the method's
``start_work``. The particles start at ``m`` draws of the Laplace Gaussian ``N(θ̂, Λ⁻¹)`` and move
by eq. (8) in the whitened coordinates ``θ = θ̂ + L z``: the score is ``Lᵀ ∇_θ log p``, the kernel
``exp(-‖z - z'‖²/h) = exp(-(θ - θ')ᵀ Λ (θ - θ')/h)`` with the median heuristic on the ``z``. This
is SVGD with the constant preconditioning matrix ``Q = Λ`` of Wang, Tang, Bajaj & Liu (NeurIPS
2019: SVGD with the kernel ``k(Q^{1/2}θ, Q^{1/2}θ')`` and the field ``Q⁻¹ φ`` equals plain SVGD on
``z = Q^{1/2}θ``; they take ``Q`` the average Hessian or Fisher information, as Detommaso et al.'s
2018 Stein variational Newton does); in ``z`` the target has unit curvature, so the step, which the
median bandwidth already makes scale-free along the kernel, is in posterior sds in every
direction. Its schedule is ``ε_t = 0.3 (1 + t)^-0.55``: the Robbins-Monro decay of Welling & Teh's
SGLD (``γ = 0.55``; the mini-batch score's noise, ``≈ sqrt(N/B)`` sds a move, averages out only
under a decaying step), from 0.3, where a move takes a particle at most a fraction ``ε k̄ < 0.3``
of the way to the mode (``k̄ < 1`` the kernel's mean weight). On the 3-d test regression
(tests/baselines_helpers.py) the defaults end within 0.09 sds of the mean and 0.06 in log sd after
one pass (400 particles, seeds 0-4); with 100 particles over one and five passes, a constant 0.3
ends up to 0.33 off in log sd with batches of 40, a constant 0.1 up to 0.17, and the
stochastic-Newton gain ``1/t`` up to 0.47 sds off in the mean (SVGD's field moves the mean by
``ε k̄``, not ``ε``, of the Newton step). An explicit ``step_size`` keeps the method as it was
(``init=None`` then means ``"prior"``): ``m`` prior draws, a constant step in the units of ``θ``,
the data not read; with ``init="laplace"`` it multiplies the default schedule (the tuning grids'
use). ``step_size=None`` without ``data=`` is refused (:class:`pmd.ConfigError`): a constant 0.01
in the units of ``θ`` diverges at the 13th move on that regression.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from pmd.interface import ConfigError, work
from pmd.kde import pairwise_sq_distances
from pmd.posterior import ParticlePosterior

from .._common import (first_nonfinite, laplace_start, polynomial_decay, refuse_diverged, require_common,
                       resolve_init)

Array = jax.Array
OPTIMIZERS = {"sgd": optax.sgd, "adagrad": optax.adagrad}
# each start's default (step_size, tau, kappa) of ε_t = step_size (τ + t)^(-κ) (module docstring):
# after the Laplace start in the whitened coordinates
_DEFAULTS = {"laplace": (0.3, 1.0, 0.55), "prior": (0.01, 0.0, 0.0)}


def median_bandwidth(particles: Array) -> Array:
    """Liu & Wang's (2016, sec. 5) median heuristic ``h = med² / log m``, ``med`` the median of the
    distances between distinct particles (BlackJAX's ``median_heuristic``)."""
    m = particles.shape[0]
    sq = pairwise_sq_distances(particles, particles)
    rows, cols = jnp.tril_indices(m, k=-1)
    return jnp.median(jnp.sqrt(jnp.maximum(sq[rows, cols], 0.0))) ** 2 / math.log(m)


def stein_direction(particles: Array, scores: Array, bandwidth: Array, repulsion: float = 1.0) -> Array:
    """Liu & Wang's eq. (8) with the RBF kernel: ``φ(θ_i) = 1/m Σ_j [k_ji ∇log p(θ_j) + λ ∇_{θ_j} k_ji]``.

    With ``k_ji = exp(-‖θ_j - θ_i‖²/h)``, ``∇_{θ_j} k_ji = -2 k_ji (θ_j - θ_i) / h``; the repulsion
    ``λ`` is 1 in SVGD (OPVI's reduced "diffusion term" when below 1). ``(m, d) -> (m, d)``.
    """
    kernel = jnp.exp(-pairwise_sq_distances(particles, particles) / bandwidth)  # symmetric, (m, m)
    drive = kernel @ scores
    repulse = 2.0 / bandwidth * (jnp.sum(kernel, axis=1, keepdims=True) * particles - kernel @ particles)
    return (drive + repulsion * repulse) / particles.shape[0]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SVGDState:
    """Particles (in the start's coordinates: ``z``, ``θ = θ̂ + L z``, after the Laplace start),
    optimizer state, the round ``t`` (moves made), and the likelihood gradients (in ``θ``) summed
    over the ``batches`` runner batches of the current round at the current particles."""

    particles: Array  # (m, d)
    opt_state: Any
    round: Array  # int32, moves made
    grad_sum: Array  # (m, d)
    batches: Array  # int32
    points: Array  # int32
    diverged_at: Array  # int32: the first round whose particles went non-finite, -1 while none has


class SVGD:
    """Mini-batch SVGD; OPVI when ``batch_growth > 0``.

    Args:
        model, data_size, num_particles: as for :class:`pmd.PMD` (``m`` particles).
        step_size, tau, kappa: the optimizer's learning rate ``ε_t = step_size (τ + t)^-κ``; each
            None takes the start's default: ``0.3 (1 + t)^-0.55`` in the whitened coordinates after
            the Laplace start, a constant 0.01 after the prior start (module docstring).
        optimizer: ``"sgd"`` (``θ ← θ + ε φ``) or ``"adagrad"`` (Liu & Wang's experiments).
        batch_growth: ``κ ∈ [0, 1)``: round ``t`` spans ``⌈t^κ⌉`` runner batches (module docstring).
        repulsion: ``λ > 0``, the weight of the repulsive term (1: SVGD's posterior).
        init: ``"laplace"`` or ``"prior"``; None: ``"laplace"`` when ``step_size`` is None, else
            ``"prior"`` (module docstring).
        data: the whole data set, which the Laplace start reads once, at construction.
    """

    method_family = "particle VI"
    reference = (
        "Liu & Wang, NeurIPS 2016; OPVI (`batch_growth > 0`): Yang, Liu & Zhang, "
        "\"Particle-based online Bayesian sampling\""
    )

    def __init__(self, model, data_size: int, num_particles: int = 100, step_size: float | None = None,
                 optimizer: str = "sgd", batch_growth: float = 0.0, repulsion: float = 1.0,
                 tau: float | None = None, kappa: float | None = None, init: str | None = None, data: Any = None):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        if self.num_particles < 2:
            raise ConfigError(f"num_particles must be at least 2 for SVGD's kernel, got {num_particles!r}")
        if optimizer not in OPTIMIZERS:
            raise ConfigError(f"unknown optimizer {optimizer!r}; expected one of {', '.join(OPTIMIZERS)}")
        if isinstance(repulsion, bool) or not isinstance(repulsion, (int, float)) or not repulsion > 0:
            raise ConfigError(f"repulsion must be a positive number, got {repulsion!r}")
        if isinstance(batch_growth, bool) or not isinstance(batch_growth, (int, float)) or not 0 <= batch_growth < 1:
            raise ConfigError(f"batch_growth must be a number in [0, 1) (a sublinear batch), got {batch_growth!r}")
        self.init_from = resolve_init(init, step_size)
        given = (step_size, tau, kappa)
        settings = [d if v is None else v for v, d in zip(given, _DEFAULTS[self.init_from])]
        self.step_size = polynomial_decay(("step_size", "tau", "kappa"), *settings)
        self.batch_growth, self.repulsion = float(batch_growth), float(repulsion)
        self.optimizer = OPTIMIZERS[optimizer](lambda count: self.step_size(count + 1))
        self.start_work, d = (0.0, 0.0), self.model.dim
        self.shift, self.whiten = jnp.zeros((d,)), jnp.eye(d)
        if self.init_from == "laplace":
            laplace = laplace_start("SVGD", "step_size", self.model, data, self.data_size)
            self.shift, self.whiten, self.start_work = laplace.mode, laplace.chol, laplace.work
        per_datum = jax.grad(model.log_likelihood)
        self._grad_loglik = jax.vmap(lambda th, batch: jnp.sum(jax.vmap(per_datum, (None, 0))(th, batch), axis=0),
                                     in_axes=(0, None))
        self._grad_prior = jax.vmap(jax.grad(model.log_prior))
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> SVGDState:
        """``m`` draws ``z ~ N(0, I)`` of the Laplace Gaussian, or ``m`` prior draws (Algorithm 1 of
        Dai et al. starts every method at the prior; module docstring)."""
        if self.init_from == "laplace":
            particles = jax.random.normal(key, (self.num_particles, self.model.dim))
        else:
            particles = self.model.sample_prior(key, self.num_particles)
        zero = jnp.asarray(0, jnp.int32)
        return SVGDState(particles, self.optimizer.init(particles), zero, jnp.zeros_like(particles), zero, zero,
                         jnp.asarray(-1, jnp.int32))

    def step(self, key: Array, state: SVGDState, batch: Any) -> tuple[SVGDState, dict]:
        """Add the batch's likelihood gradients to the round; move the particles when it is complete."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: SVGDState) -> ParticlePosterior:
        """The particles, equally weighted; ``FloatingPointError`` naming the round and step size if
        they went non-finite."""
        refuse_diverged("SVGD", state.diverged_at, self.step_size)
        return ParticlePosterior.equally_weighted(self.shift + state.particles @ self.whiten.T)

    def batches_in_round(self, t: Array) -> Array:
        """``n_t = ⌈t^κ⌉`` runner batches in round ``t = 1, 2, ...`` (OPVI's ``|S_t| ∝ t^κ``)."""
        return jnp.ceil(jnp.asarray(t, jnp.float32) ** self.batch_growth - 1e-4).astype(jnp.int32)

    def direction(self, particles: Array, grad_sum: Array, points: Array) -> Array:
        """``φ`` of the module docstring in the start's coordinates, with the score
        ``Lᵀ (∇log p + (N/|S_t|) Σ_{S_t} ∇log p(x|θ))`` (``L = I`` after the prior start)."""
        scores = self._grad_prior(self.shift + particles @ self.whiten.T) + (self.data_size / points) * grad_sum
        return stein_direction(particles, scores @ self.whiten, median_bandwidth(particles), self.repulsion)

    def _move(self, state: SVGDState) -> SVGDState:
        phi = self.direction(state.particles, state.grad_sum, state.points.astype(state.particles.dtype))
        updates, opt_state = self.optimizer.update(-phi, state.opt_state, state.particles)  # optax descends
        zero = jnp.asarray(0, jnp.int32)
        particles = optax.apply_updates(state.particles, updates)
        return SVGDState(particles, opt_state, state.round + 1, jnp.zeros_like(state.grad_sum), zero, zero,
                         first_nonfinite(state.diverged_at, state.round + 1, particles))

    def _step_impl(self, key: Array, state: SVGDState, batch: Any) -> tuple[SVGDState, dict]:
        size = jax.tree_util.tree_leaves(batch)[0].shape[0]
        state = SVGDState(state.particles, state.opt_state, state.round,
                          state.grad_sum + self._grad_loglik(self.shift + state.particles @ self.whiten.T, batch),
                          state.batches + 1, state.points + size, state.diverged_at)
        complete = state.batches >= self.batches_in_round(state.round + 1)
        state = jax.lax.cond(complete, self._move, lambda s: s, state)
        pairs = jnp.where(complete, float(self.num_particles) ** 2, 0.0)  # a move's kernel at every pair
        return state, {"moved": complete, "round": state.round,
                       **work(size * self.num_particles, size * self.num_particles, kernel_pairs=pairs)}
