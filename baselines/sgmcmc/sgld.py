"""Stochastic gradient Langevin dynamics (Welling & Teh, ICML 2011).

Equation (4) of Welling & Teh:

    Δθ_t = ε_t/2 · (∇ log p(θ_t) + N/n Σ_{i=1..n} ∇ log p(x_ti|θ_t)) + η_t,   η_t ~ N(0, ε_t I),

with the step size ``ε_t = a (b + t)^(-γ)`` of their section 3. The mini-batch gradient is
``jax.grad`` of ``log p(θ) + N · mean_b log p(x_b|θ)`` (identical to ``N/n Σ``).

* :class:`SGLD` is one chain, as in the paper and in Dai et al.'s comparison: after a burn-in every
  ``thin``-th state is retained, and the posterior is the last ``num_particles`` retained states
  with equal weights (the same memory as PMD's particles). The burn-in is by default the first
  half of the run, whatever its length (``burn_in=0.5``: the warm-up of Stan's and of Gelman et
  al.'s BDA3, sec. 11.4, which discard the first half of every chain); an integer is a number of
  steps (H.1 of Dai et al.: 1000), refused when the run is not longer (when ``num_steps`` is given,
  and by :func:`pmd.run`, which knows the run's length).
* :class:`ParallelSGLD` runs ``num_particles`` independent chains in lockstep on the same
  mini-batch (what a JAX user would write with ``vmap``); its posterior is the chains' current
  states, so it needs no burn-in buffer.

Both record the first step at which the state went non-finite (``diverged_at``, -1 while it has
not), and ``posterior`` of such a state raises ``FloatingPointError`` naming that step and its
step size, instead of returning NaN draws.

BlackJAX writes the same update as ``θ + h ∇ log p + sqrt(2h) ξ``: its ``step_size`` ``h`` is
``ε/2`` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from pmd.interface import work
from pmd.posterior import ParticlePosterior

from .._common import (RetainedChain, SampleBuffer, first_nonfinite, minibatch_log_joint, polynomial_decay,
                       refuse_diverged, require_burn_in, require_common, require_num_steps)

Array = jax.Array


def langevin_update(key: Array, position: Array, grad: Array, eps: Array) -> Array:
    """Welling & Teh eq. (4): ``θ + ε/2 · ∇ log p̂(θ) + N(0, ε I)`` for any leading shape."""
    noise = jax.random.normal(key, position.shape, dtype=position.dtype)
    return position + 0.5 * eps * grad + jnp.sqrt(eps) * noise


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SGLDState:
    """The chain's current state, the retained samples, the step count and the first non-finite step."""

    position: Array  # (d,)
    buffer: SampleBuffer
    step: Array  # int32
    diverged_at: Array  # int32, -1 while every state has been finite

    @classmethod
    def start(cls, position: Array, buffer: SampleBuffer, step: Array) -> "SGLDState":
        return cls(position, buffer, step, jnp.asarray(-1, jnp.int32))


class SGLD(RetainedChain):
    """One SGLD chain (Welling & Teh 2011, eq. 4) with burn-in and thinning.

    Args:
        model: the :class:`pmd.Model`.
        data_size: ``N``.
        num_particles: ``m``, the retained samples kept (the posterior's size).
        a, b, gamma: the step size ``ε_t = a (b + t)^(-γ)`` (``γ = 0``: constant ``a``).
        burn_in: a float in (0, 1): the fraction of the run's retained states discarded (default:
            the first half); an int: the steps discarded before the first retained one (H.1: 1000).
        thin: retain every ``thin``-th state after burn-in.
        num_steps: the run length, when known, to reject a burn-in that retains nothing.
    """

    method_family = "stochastic-gradient MCMC"
    reference = "Welling & Teh, ICML 2011"

    state_type = SGLDState.start

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int,
        a: float = 0.01,
        b: float = 1.0,
        gamma: float = 0.55,
        burn_in: int | float = 0.5,
        thin: int = 1,
        num_steps: int | None = None,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.step_size = polynomial_decay(("a", "b", "gamma"), a, b, gamma)
        self.burn_in, self.thin, self.num_steps = require_burn_in(burn_in, thin, num_steps, fraction_ok=True)
        # an integer burn-in skips steps; a fractional one retains from the start and drops the
        # first fraction of the retained states in ``posterior``
        self.burn_steps, self.discard = (0, self.burn_in) if isinstance(self.burn_in, float) else (self.burn_in, 0.0)
        self._grad = jax.grad(minibatch_log_joint(self.model, self.data_size))
        self._step = jax.jit(self._step_impl)

    def check_num_steps(self, num_steps: int) -> None:
        """Refuse a run of ``num_steps`` steps that an integer ``burn_in`` would leave empty
        (:func:`pmd.run` calls this with the run's length)."""
        require_num_steps(self.burn_in, num_steps)

    def posterior(self, state: SGLDState) -> ParticlePosterior:
        """The last ``m`` retained states after burn-in, equally weighted; ``FloatingPointError`` if
        the chain went non-finite."""
        refuse_diverged("SGLD", state.diverged_at, self.step_size)
        return state.buffer.posterior(self.discard)

    def _step_impl(self, key: Array, state: SGLDState, batch: Any) -> tuple[SGLDState, dict]:
        t = state.step + 1
        eps = self.step_size(t).astype(state.position.dtype)
        position = langevin_update(key, state.position, self._grad(state.position, batch), eps)
        keep = (t > self.burn_steps) & ((t - self.burn_steps) % self.thin == 0)
        new = SGLDState(position=position, buffer=state.buffer.retain(position, keep), step=t,
                        diverged_at=first_nonfinite(state.diverged_at, t, position))
        size = jax.tree_util.tree_leaves(batch)[0].shape[0]
        return new, {"step_size": eps, "retained": keep, **work(size, size)}  # the batch's gradient at one point


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ParallelSGLDState:
    """The ``m`` chains' current states, the step count and the first non-finite step."""

    positions: Array  # (m, d)
    step: Array  # int32
    diverged_at: Array  # int32, -1 while every state has been finite


class ParallelSGLD:
    """``num_particles`` independent SGLD chains (Welling & Teh 2011, eq. 4) advanced together.

    Every chain sees the same mini-batch and its own Langevin noise. The posterior is the chains'
    current states, equally weighted: ``m`` draws that are independent across chains.

    Args:
        model, data_size, num_particles: as for :class:`SGLD` (``m`` chains).
        a, b, gamma: the step size ``ε_t = a (b + t)^(-γ)``.
    """

    method_family = "stochastic-gradient MCMC"
    reference = "Welling & Teh, ICML 2011 (independent chains)"

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int,
        a: float = 0.01,
        b: float = 1.0,
        gamma: float = 0.55,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.step_size = polynomial_decay(("a", "b", "gamma"), a, b, gamma)
        self._grads = jax.vmap(jax.grad(minibatch_log_joint(self.model, self.data_size)), in_axes=(0, None))
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> ParallelSGLDState:
        """``m`` chains started at independent prior draws."""
        return ParallelSGLDState(self.model.sample_prior(key, self.num_particles), jnp.asarray(0, jnp.int32),
                                 jnp.asarray(-1, jnp.int32))

    def step(self, key: Array, state: ParallelSGLDState, batch: Any) -> tuple[ParallelSGLDState, dict]:
        """One Langevin step (eq. 4) of every chain on the shared mini-batch."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: ParallelSGLDState) -> ParticlePosterior:
        """The chains' current states, equally weighted; ``FloatingPointError`` if one went non-finite."""
        refuse_diverged("ParallelSGLD", state.diverged_at, self.step_size)
        return ParticlePosterior.equally_weighted(state.positions)

    def _step_impl(self, key: Array, state: ParallelSGLDState, batch: Any) -> tuple[ParallelSGLDState, dict]:
        t = state.step + 1
        eps = self.step_size(t).astype(state.positions.dtype)
        positions = langevin_update(key, state.positions, self._grads(state.positions, batch), eps)
        size = jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles  # the batch at every chain
        return ParallelSGLDState(positions, t, first_nonfinite(state.diverged_at, t, positions)), {
            "step_size": eps, **work(size, size)}
